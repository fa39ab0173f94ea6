package webhookintegration

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/upstreamcorpus"
	"github.com/kubegrove/grove/test/upstreamshapes"
)

// Upstream Grove's e2e workloads must pass this project's admission too, not only its CRDs
// (KAI and topology-aware scheduling are enabled here, as upstream's suite assumes). Those using
// what this configuration lacks are refused, naming the field; keyed by upstream's file.
var unsupported = map[string]string{
	// Its external ResourceClaimTemplates are not created here (only PodCliqueSets are applied).
	"workload-resource-sharing.yaml": `spec.template.resourceSharing[1].name: Not found: "ext-tpl: no spec.template.resourceClaimTemplates entry and no ResourceClaimTemplate`,
	// MNNVL is off in this configuration: a group is refused naming the annotation.
	"mnnvl-gpu-default.yaml":         `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "default": MNNVL is not enabled in the operator configuration (network.autoMNNVLEnabled)`,
	"mnnvl-comprehensive-mix.yaml":   `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "default": MNNVL is not enabled`,
	"mnnvl-cpu-with-annotation.yaml": `spec.template.cliques[1].annotations[grove.io/mnnvl-group]: Invalid value: "default": MNNVL is not enabled`,
	"mnnvl-gpu-invalid.yaml":         `metadata.annotations[grove.io/mnnvl-group]: Invalid value: "invalid value with spaces": must be "none" or a DNS-1123 label`,
}

// warningRecorder collects the admission warnings the API server returns.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (r *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// take returns the warnings recorded since the last call.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.warnings
	r.warnings = nil
	return out
}

// warningClient is an admin client whose requests' warnings land in the returned recorder.
func warningClient(t *testing.T) (client.Client, *warningRecorder) {
	t.Helper()
	rec := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler, cfg.WarningHandlerWithContext = nil, rec
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	require.NoError(t, err)
	return c, rec
}

// firstTopologyName is the PodCliqueSet's topology: the first topologyName of its own, its
// scaling groups' and its cliques' constraints.
func firstTopologyName(obj *unstructured.Unstructured) string {
	if n, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "topologyConstraint", "topologyName"); n != "" {
		return n
	}
	for _, list := range []string{"podCliqueScalingGroups", "cliques"} {
		items, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", list)
		for _, item := range items {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			if n, _, _ := unstructured.NestedString(m, "topologyConstraint", "topologyName"); n != "" {
				return n
			}
		}
	}
	return ""
}

// submitted is a PodCliqueSet of upstream's e2e workloads, from upstream's file or built by the
// project; file names the upstream file either way.
type submitted struct {
	file string
	obj  *unstructured.Unstructured
}

// assertAdmission dry-runs each PodCliqueSet through the API server and its webhooks: refused as
// unsupported says, or admitted with one warning for a topology name (no ClusterTopologyBinding
// exists here, so such a PodCliqueSet waits for it) and none otherwise. It returns how many were
// admitted and how many of those wait.
func assertAdmission(t *testing.T, pcss []submitted) (admitted, waiting int) {
	t.Helper()
	ns := newNamespace(t)
	c, warnings := warningClient(t)
	for _, s := range pcss {
		obj := s.obj
		obj.SetNamespace(ns)
		topology := firstTopologyName(obj)
		warnings.take()
		err := c.Create(context.Background(), obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
		if want, ok := unsupported[s.file]; ok {
			if assert.Error(t, err, s.file) {
				assert.Contains(t, err.Error(), want, s.file)
			}
			continue
		}
		if !assert.NoError(t, err, s.file) {
			continue
		}
		admitted++
		var topologyWarnings []string
		for _, w := range warnings.take() {
			if strings.Contains(w, "ClusterTopologyBinding") {
				topologyWarnings = append(topologyWarnings, w)
			}
		}
		if topology == "" {
			assert.Empty(t, topologyWarnings, s.file)
			continue
		}
		waiting++
		if assert.Len(t, topologyWarnings, 1, s.file) {
			assert.Contains(t, topologyWarnings[0], fmt.Sprintf("ClusterTopologyBinding %q does not exist yet; the PodCliqueSet waits until it does", topology), s.file)
		}
	}
	return admitted, waiting
}

// Upstream's e2e workloads as the project builds them (test/upstreamshapes) pass admission: the
// refusals name the annotation or template, the topology workloads are warned that they wait.
func TestUpstreamShapedWorkloadsPassAdmission(t *testing.T) {
	t.Parallel()
	var pcss []submitted
	for _, shape := range upstreamshapes.All() {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(shape.Build(""))
		require.NoError(t, err)
		pcss = append(pcss, submitted{shape.Upstream, &unstructured.Unstructured{Object: u}})
	}
	admitted, waiting := assertAdmission(t, pcss)
	assert.Equal(t, len(pcss)-len(unsupported), admitted, "all but the unsupported are admitted")
	assert.Equal(t, len(upstreamshapes.Topology())-1, waiting, "every topology shape but tas-no-constraint waits for its binding")
}

// Upstream's e2e manifests themselves (the upstream corpus tier) pass admission unchanged, as
// their shapes do.
func TestUpstreamGroveManifestsPassAdmissionUnchanged(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(upstreamcorpus.Path(t, "compat", "grove-e2e"), "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	sort.Strings(files)
	var pcss []submitted
	for _, file := range files {
		objs, err := apiserver.ReadManifests(file)
		require.NoError(t, err)
		for _, obj := range objs {
			if obj.GetKind() == "PodCliqueSet" {
				pcss = append(pcss, submitted{filepath.Base(file), obj})
			}
		}
	}
	admitted, waiting := assertAdmission(t, pcss)
	assert.Equal(t, len(pcss)-len(unsupported), admitted, "all but the unsupported are admitted")
	assert.NotZero(t, waiting, "the topology manifests were found")
	t.Logf("%d upstream PodCliqueSets admitted, %d waiting for their ClusterTopologyBinding", admitted, waiting)
}

// Once the named ClusterTopologyBinding exists, the webhook (reading it from the API server)
// admits only the domains it has.
func TestTopologyDomainsMustBeLevelsOfAnExistingBinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	name := "webhook-test-" + ns
	binding := &grovev1alpha1.ClusterTopologyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: grovev1alpha1.ClusterTopologyBindingSpec{Levels: []grovev1alpha1.TopologyLevel{
			{Domain: "zone", Key: "topology.kubernetes.io/zone"}, {Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
	require.NoError(t, env.Client.Create(ctx, binding))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })

	manifest := func(required, preferred string) string {
		return fmt.Sprintf(`apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: tas-%s}
spec:
  template:
    topologyConstraint: {topologyName: %s, pack: {required: %s}}
    cliques:
      - name: worker
        labels: {kai.scheduler/queue: test}
        topologyConstraint: {pack: {preferred: %s}}
        spec: {roleName: worker, replicas: 2, podSpec: {schedulerName: kai-scheduler, containers: [{name: w, image: busybox}]}}
`, required, name, required, preferred)
	}
	out, err := kubectlApply(t, ns, manifest("block", "numa"))
	require.Error(t, err, out)
	assert.Contains(t, out, fmt.Sprintf(`spec.template.topologyConstraint.pack.required: Invalid value: "block": ClusterTopologyBinding %q has no level "block"; its domains: zone, rack, host`, name))
	assert.Contains(t, out, `spec.template.cliques[0].topologyConstraint.pack.preferred: Invalid value: "numa"`)

	out, err = kubectlApply(t, ns, manifest("rack", "host"))
	require.NoError(t, err, out)
	assert.NotContains(t, out, "Warning")
}
