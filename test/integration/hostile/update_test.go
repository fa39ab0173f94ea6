package hostileintegration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// storedPCS is a valid Training PodCliqueSet with two ordered cliques, the kind of object a bad
// update must never damage.
const storedPCS = `apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: stored, labels: {team: a}}
spec:
  replicas: 1
  workloadType: Training
  trainingSpec: {maxRuntime: 1h, maxRestarts: 2}
  template:
    cliqueStartupType: CliqueStartupTypeExplicit
    cliques:
      - name: a
        spec:
          roleName: a
          replicas: 2
          podSpec:
            containers: [{name: c, image: busybox}]
      - name: b
        spec:
          roleName: b
          replicas: 1
          startsAfter: [a]
          podSpec:
            containers: [{name: c, image: busybox}]
`

// TestBadUpdatesAreRefusedAndTheStoredPodCliqueSetIsUnchanged sends hostile updates to a stored
// PodCliqueSet: each is refused naming the field and the rule, and the stored object keeps its
// generation, spec and labels — a refused update loses nothing.
func TestBadUpdatesAreRefusedAndTheStoredPodCliqueSetIsUnchanged(t *testing.T) {
	ns := newNamespace(t)
	r := create(t, pcsPath, ns, fromYAML(t, storedPCS), true)
	require.Equal(t, http.StatusCreated, r.code, r.message())
	operatorObserved(t, ns, "stored", nil)
	original := get(t, pcsPath, ns, "stored")

	cases := []struct {
		name   string
		mutate func(o map[string]any)
		strict bool
		want   []string
	}{
		{"startsAfter cycle", func(o map[string]any) { set(o, []any{"b"}, cliqueSpecAt(0, "startsAfter")...) },
			false, []string{"spec.template.cliques", "must not form a cycle"}},
		{"roleName change", func(o map[string]any) { set(o, "z", cliqueSpecAt(0, "roleName")...) },
			false, []string{"spec.template.cliques[0].spec.roleName", "field is immutable"}},
		{"workloadType change", func(o map[string]any) { set(o, "Inference", "spec", "workloadType") },
			false, []string{"spec.workloadType", "workloadType is immutable"}},
		{"resizing a Training workload", func(o map[string]any) { set(o, 3, cliqueSpecAt(0, "replicas")...) },
			false, []string{"spec.template.cliques[0].spec.replicas", "cannot change on a Training workload"}},
		{"replicas -1", func(o map[string]any) { set(o, -1, "spec", "replicas") },
			false, []string{"spec.replicas", "should be greater than or equal to 0"}},
		{"replicas 2^31", func(o map[string]any) { set(o, raw("2147483648"), "spec", "replicas") },
			false, []string{"must be of type integer with format int32 in spec.replicas"}},
		{"maxRuntime that is not a duration", func(o map[string]any) { set(o, "abc", "spec", "trainingSpec", "maxRuntime") },
			false, []string{"spec.trainingSpec.maxRuntime", "must be a non-negative duration"}},
		{"negative terminationDelay", func(o map[string]any) { set(o, "-30s", "spec", "template", "terminationDelay") },
			false, []string{"spec.template.terminationDelay", "must be a non-negative duration"}},
		{"minAvailable above replicas", func(o map[string]any) { set(o, 9, cliqueSpecAt(1, "minAvailable")...) },
			false, []string{"spec.template.cliques[1].spec.minAvailable", "minAvailable must not exceed replicas"}},
		{"every clique removed", func(o map[string]any) { set(o, []any{}, "spec", "template", "cliques") },
			false, []string{"spec.template.cliques", "should have at least 1 items"}},
		{"clique template label of 64 characters", func(o map[string]any) {
			set(o, map[string]any{"team": strings.Repeat("v", 64)}, "spec", "template", "cliques", 1, "labels")
		}, false, []string{"spec.template.cliques[1].labels", "must be no more than 63 bytes"}},
		{"metadata label of 64 characters", func(o map[string]any) { set(o, map[string]any{"team": strings.Repeat("v", 64)}, "metadata", "labels") },
			false, []string{"metadata.labels", "must be no more than 63 bytes"}},
		{"unknown field with strict field validation", func(o map[string]any) { set(o, true, "spec", "bogus") },
			true, []string{`unknown field "spec.bogus"`}},
		{"10 MB pod spec", func(o map[string]any) {
			set(o, []any{map[string]any{"name": "BLOB", "value": strings.Repeat("x", 10<<20)}}, cliqueSpecAt(0, "podSpec", "containers", 0, "env")...)
		}, false, []string{"Request entity too large: limit is 3145728"}},
		{"stale resourceVersion", func(o map[string]any) {
			set(o, "1", "metadata", "resourceVersion")
			set(o, "v2", cliqueSpecAt(0, "podSpec", "containers", 0, "image")...)
		}, false, []string{"the object has been modified"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := get(t, pcsPath, ns, "stored")
			// Sent as a merge patch of the whole object without its resourceVersion: the operator
			// keeps writing status, and a conflict would hide the verdict this test is about (the
			// stale-resourceVersion case sets one, which the patch then must match).
			delete(obj["metadata"].(map[string]any), "resourceVersion")
			tc.mutate(obj)
			body, err := json.Marshal(obj)
			require.NoError(t, err)
			r := send(t, http.MethodPatch, fmt.Sprintf(pcsPath, ns)+"/stored", body, tc.strict, "application/merge-patch+json")
			require.GreaterOrEqual(t, r.code, 400, "must be refused")
			for _, want := range tc.want {
				assert.Contains(t, r.message(), want)
			}
			after := get(t, pcsPath, ns, "stored")
			// The operator keeps writing status, so resourceVersion may move; the generation
			// moves only with the spec.
			assert.Equal(t, generation(original), generation(after), "a refused update writes no spec")
			assert.Equal(t, original["spec"], after["spec"])
			assert.Equal(t, original["metadata"].(map[string]any)["labels"], after["metadata"].(map[string]any)["labels"])
		})
	}
	requireBinariesHealthy(t)
}

func cliqueSpecAt(i int, path ...any) []any {
	return append([]any{"spec", "template", "cliques", i, "spec"}, path...)
}

func generation(obj map[string]any) int64 {
	v, _, _ := unstructured.NestedInt64(obj, "metadata", "generation")
	return v
}
