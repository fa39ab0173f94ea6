package cluster

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/toolpath"
)

// Pod label and annotation a test sets to make kwok end a pod (see stages/pod-exit.yaml).
const (
	// LabelExitCode makes a Running pod exit with this code: 0 → Succeeded, else Failed.
	LabelExitCode = "grove.test/exit-code"
	// AnnotationExitAfter delays the exit by a Go duration ("5s") from when the pod runs.
	AnnotationExitAfter = "grove.test/exit-after"
	// AnnotationReadyAfter delays a pod's start (Running and Ready) by a Go duration from when
	// kwok first sees it placed, as a slow image pull or startup would.
	AnnotationReadyAfter = "grove.test/ready-after"
)

//go:embed stages/pod-exit.yaml
var podExitStage []byte

//go:embed stages/pod-startup-wait.yaml
var podStartupWaitStage []byte

// kwokStages are the upstream stage files the cluster uses, relative to kwok's
// kustomize/stage folder: nodes become Ready and keep their leases fresh, pods become Running,
// deleted pods go away, and Job pods complete.
var kwokStages = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-delete.yaml",
	"pod/fast/pod-complete.yaml",
}

// kwokConfig assembles kwok's --config: the upstream stages read from the pinned kwok module
// (so they follow its version), with Job-pod completion narrowed to pods that do not use the
// test exit stage and pod readiness to pods not held at start by the operator's init container,
// plus the stages of those two.
func kwokConfig() ([]byte, error) {
	dir, err := kwokModuleDir()
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	for _, rel := range kwokStages {
		data, err := os.ReadFile(filepath.Join(dir, "kustomize", "stage", rel))
		if err != nil {
			return nil, fmt.Errorf("reading kwok stage: %w", err)
		}
		switch {
		case strings.HasSuffix(rel, "pod-complete.yaml"):
			data, err = addSelector(data, map[string]any{
				"key": fmt.Sprintf(`.metadata.labels["%s"]`, LabelExitCode), "operator": "DoesNotExist"})
		case strings.HasSuffix(rel, "pod-ready.yaml"):
			data, err = addSelector(data, map[string]any{
				"key": fmt.Sprintf(`.metadata.annotations["%s"]`, grovev1alpha1.AnnotationStartupGate), "operator": "NotIn",
				"values": []any{grovev1alpha1.StartupGateWaiting}})
			if err == nil {
				data, err = setDelay(data, AnnotationReadyAfter)
			}
			if err == nil {
				data, err = keepPodIP(data)
			}
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, data)
	}
	docs = append(docs, podExitStage, podStartupWaitStage)
	return bytes.Join(docs, []byte("\n---\n")), nil
}

// addSelector adds one match expression to a stage's selector.
func addSelector(stage []byte, expr map[string]any) ([]byte, error) {
	obj := map[string]any{}
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	selector, _ := spec["selector"].(map[string]any)
	if selector == nil {
		return nil, fmt.Errorf("kwok stage has no selector")
	}
	exprs, _ := selector["matchExpressions"].([]any)
	selector["matchExpressions"] = append(exprs, expr)
	return yaml.Marshal(obj)
}

// setDelay makes a stage wait the Go duration in a pod's annotation (none: no wait).
func setDelay(stage []byte, annotation string) ([]byte, error) {
	obj := map[string]any{}
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil, fmt.Errorf("kwok stage has no spec")
	}
	spec["delay"] = map[string]any{
		"durationMilliseconds": 0,
		"durationFrom":         map[string]any{"expressionFrom": fmt.Sprintf(`.metadata.annotations["%s"]`, annotation)},
	}
	return yaml.Marshal(obj)
}

// keepPodIP makes the pod-ready stage leave a pod's IP alone when the copy of the pod it renders
// already has one. kwok can apply the stage twice to a pod (two events queued while the pod was
// Pending), and the second time it picks another IP: merged with the first, the pod's status
// lists two IPv4 addresses, the API server refuses it (status.podIPs: "may specify no more than
// one IP for each IP family") and the pod never turns Ready — seen in make test's compat e2e, a
// startup-ordered pod stuck not Ready for minutes. kwok renders from the copy it queued, so this
// covers a second application queued after the first gave the IP, not two queued before it
// (docs/testing.md).
func keepPodIP(stage []byte) ([]byte, error) {
	obj := map[string]any{}
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	next, _ := spec["next"].(map[string]any)
	tmpl, _ := next["statusTemplate"].(string)
	const with = "{{ with $podIPs }}"
	if strings.Count(tmpl, with) != 1 {
		return nil, fmt.Errorf("kwok's pod-ready stage: want one %q in its status template", with)
	}
	next["statusTemplate"] = strings.Replace(tmpl, with, `{{ if .status.podIP }}{{ $podIPs = "" }}{{ end }}`+with, 1)
	return yaml.Marshal(obj)
}

// kwokModuleDir finds the kwok module that hack/tools/kwok pins.
func kwokModuleDir() (string, error) {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	cmd.Dir = filepath.Join(root, "hack", "tools", "kwok")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the kwok module (run `make tools`): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
