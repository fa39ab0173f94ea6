package upstreamshapes

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/upstreamcorpus"
)

// sameShapeOtherCount are upstream's scale files All leaves out: each is a shape of All with
// another replica count.
var sameShapeOtherCount = map[string]string{
	"scale-test-1000-moe.yaml": "scale-test-1000.yaml", "scale-down.yaml": "scale-test-1000.yaml",
	"scale-down-to-zero.yaml": "scale-test-1000.yaml", "scale-up.yaml": "scale-test-1000.yaml",
	"scale-up-from-zero.yaml": "scale-up-tiny.yaml",
}

func TestShapesAreDistinctWorkloadsInOneNamespace(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		objs := s.Objects("ns")
		require.NotEmpty(t, objs, s.Upstream)
		pcs, ok := objs[len(objs)-1].(*grovev1alpha1.PodCliqueSet)
		require.True(t, ok, "%s ends with its PodCliqueSet", s.Upstream)
		assert.False(t, seen[s.Upstream], "%s twice", s.Upstream)
		seen[s.Upstream] = true
		for _, o := range objs {
			assert.Equal(t, "ns", o.GetNamespace(), "%s: %s", s.Upstream, o.GetName())
		}
		assert.NotEmpty(t, pcs.Spec.Template.Cliques, s.Upstream)
	}
	assert.Len(t, Topology(), 19, "upstream's tas-*.yaml")
	got, ok := ByUpstream("workload-resource-sharing.yaml")
	require.True(t, ok)
	assert.Equal(t, "rs-test", got.Build("ns").Name)
	_, ok = ByUpstream("queues.yaml")
	assert.False(t, ok, "queues are no workload")
}

// normalized is an object as the facts compare it: without what only places it (namespace,
// UID) or says where its images are pulled from (upstream pulls from its e2e registry).
func normalized(t *testing.T, o client.Object) map[string]any {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	require.NoError(t, err)
	meta := u["metadata"].(map[string]any)
	delete(meta, "namespace")
	delete(meta, "uid")
	delete(meta, "creationTimestamp")
	if pcs, ok := o.(*grovev1alpha1.PodCliqueSet); ok {
		for i, c := range pcs.Spec.Template.Cliques {
			for j := range c.Spec.PodSpec.Containers {
				image := c.Spec.PodSpec.Containers[j].Image
				image = strings.TrimPrefix(strings.TrimSuffix(image, ":latest"), "registry:5001/")
				cliques := u["spec"].(map[string]any)["template"].(map[string]any)["cliques"].([]any)
				containers := cliques[i].(map[string]any)["spec"].(map[string]any)["podSpec"].(map[string]any)["containers"].([]any)
				containers[j].(map[string]any)["image"] = image
			}
		}
	}
	return u
}

// flat lists an object's leaves as path=value lines, sorted, so a difference reads as the lines
// that differ.
func flat(o map[string]any) []string {
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		default:
			out = append(out, fmt.Sprintf("%s=%v", path, v))
		}
	}
	walk("", o)
	sort.Strings(out)
	return out
}

// TestShapesHaveTheFactsOfUpstreamsFiles compares each shape with the file it stands for, typed
// and field by field (images aside): the project's description of upstream's workloads says
// what upstream's files say.
func TestShapesHaveTheFactsOfUpstreamsFiles(t *testing.T) {
	dir := upstreamcorpus.Path(t, "compat", "grove-e2e")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	scheme := apiserver.Scheme()
	for _, file := range files {
		base := filepath.Base(file)
		if base == "queues.yaml" {
			continue
		}
		if _, ok := sameShapeOtherCount[base]; ok {
			continue
		}
		t.Run(base, func(t *testing.T) {
			shape, ok := ByUpstream(base)
			require.True(t, ok, "no shape stands for upstream's %s", base)
			objs, err := apiserver.ReadManifests(file)
			require.NoError(t, err)
			want := shape.Objects("ns")
			require.Len(t, objs, len(want))
			for i, u := range objs {
				typed, err := scheme.New(u.GroupVersionKind())
				require.NoError(t, err)
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, typed, true))
				assert.Equal(t, flat(normalized(t, typed.(client.Object))), flat(normalized(t, want[i])))
			}
		})
	}
}
