package cluster

import (
	"bytes"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// readyStage is the part of kwok's pod-ready stage keepPodIP changes, as upstream writes it.
const readyStage = `
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  next:
    statusTemplate: |
      {{ $podIPs := PodIPsWith .spec.nodeName }}
      {{ with $podIPs }}
      podIP: {{ index . 0 }}
      podIPs:
      {{ range . }}
      - ip: {{ . }}
      {{ end }}
      {{ end }}
      phase: Running
`

// renderStatus renders a stage's status template for a pod, kwok's IP allocation giving ip.
func renderStatus(t *testing.T, stage []byte, pod map[string]any, ip string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	require.NoError(t, yaml.Unmarshal(stage, &obj))
	text := obj["spec"].(map[string]any)["next"].(map[string]any)["statusTemplate"].(string)
	tmpl, err := template.New("status").Funcs(template.FuncMap{"PodIPsWith": func(string) []string { return []string{ip} }}).Parse(text)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, tmpl.Execute(&out, pod))
	status := map[string]any{}
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &status))
	return status
}

func TestThePodReadyStageGivesAPodAnIPOnlyOnce(t *testing.T) {
	stage, err := keepPodIP([]byte(readyStage))
	require.NoError(t, err)
	pending := map[string]any{"spec": map[string]any{"nodeName": "n1"}, "status": map[string]any{"phase": "Pending"}}
	withIP := map[string]any{"spec": map[string]any{"nodeName": "n1"}, "status": map[string]any{"phase": "Pending", "podIP": "10.0.0.1"}}

	first := renderStatus(t, stage, pending, "10.0.0.1")
	assert.Equal(t, "10.0.0.1", first["podIP"], "a pod without an IP gets one")
	assert.Equal(t, []any{map[string]any{"ip": "10.0.0.1"}}, first["podIPs"])

	again := renderStatus(t, stage, withIP, "10.0.0.2")
	assert.NotContains(t, again, "podIP", "applied again, the stage leaves the pod's IP alone: merged, a second would be refused")
	assert.NotContains(t, again, "podIPs")
	assert.Equal(t, "Running", again["phase"], "and makes it Running all the same")

	unchanged := renderStatus(t, []byte(readyStage), withIP, "10.0.0.2")
	assert.Equal(t, "10.0.0.2", unchanged["podIP"], "upstream's stage gives it another")
}

func TestKeepPodIPRefusesAStageItDoesNotKnow(t *testing.T) {
	_, err := keepPodIP([]byte("spec:\n  next:\n    statusTemplate: |\n      phase: Running\n"))
	assert.ErrorContains(t, err, "pod-ready stage")
}
