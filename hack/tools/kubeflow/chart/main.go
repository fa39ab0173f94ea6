// Command kubeflow-chart renders Kubeflow Trainer's Helm chart (the directory given as its only
// argument, from the pinned module) with Helm's own engine and prints the ClusterTrainingRuntimes
// the chart installs — every built-in runtime enabled, the data-cache one included — as one YAML
// stream: what a cluster installed from the chart holds.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

// runtimesTemplate is the chart's ConfigMap that carries the runtimes for its installer Job.
const runtimesTemplate = "templates/runtimes/configmap.yaml"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kubeflow-chart:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return errors.New("usage: kubeflow-chart <chart directory>")
	}
	chrt, err := loader.LoadDir(os.Args[1])
	if err != nil {
		return err
	}
	overrides := map[string]any{
		"runtimes":  map[string]any{"defaultEnabled": true},
		"dataCache": map[string]any{"enabled": true, "runtimes": map[string]any{"torchDistributedWithCache": map[string]any{"enabled": true}}},
	}
	values, err := chartutil.ToRenderValues(chrt, overrides,
		chartutil.ReleaseOptions{Name: "kubeflow-trainer", Namespace: "kubeflow-system", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return err
	}
	rendered, err := engine.Render(chrt, values)
	if err != nil {
		return err
	}
	for name, out := range rendered {
		if !strings.HasSuffix(name, runtimesTemplate) {
			continue
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		manifests, ok := cm.Data["runtimes.yaml"]
		if !ok {
			return fmt.Errorf("%s has no runtimes.yaml", name)
		}
		_, err := os.Stdout.WriteString(manifests + "\n")
		return err
	}
	return fmt.Errorf("the chart rendered no %s", runtimesTemplate)
}
