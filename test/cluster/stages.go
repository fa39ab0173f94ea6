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

	"github.com/kubegrove/grove/test/toolpath"
)

// Pod label and annotation a test sets to make kwok end a pod (see stages/pod-exit.yaml).
const (
	// LabelExitCode makes a Running pod exit with this code: 0 → Succeeded, else Failed.
	LabelExitCode = "grove.test/exit-code"
	// AnnotationExitAfter delays the exit by a Go duration ("5s") from when the pod runs.
	AnnotationExitAfter = "grove.test/exit-after"
)

//go:embed stages/pod-exit.yaml
var podExitStage []byte

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
// test exit stage, plus that stage.
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
		if strings.HasSuffix(rel, "pod-complete.yaml") {
			if data, err = excludeExitLabel(data); err != nil {
				return nil, err
			}
		}
		docs = append(docs, data)
	}
	docs = append(docs, podExitStage)
	return bytes.Join(docs, []byte("\n---\n")), nil
}

// excludeExitLabel adds "no grove.test/exit-code label" to a stage's selector.
func excludeExitLabel(stage []byte) ([]byte, error) {
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
	selector["matchExpressions"] = append(exprs, map[string]any{
		"key":      fmt.Sprintf(`.metadata.labels["%s"]`, LabelExitCode),
		"operator": "DoesNotExist",
	})
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
