package compate2e

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
	"github.com/kubegrove/grove/test/upstreamcorpus"
	"github.com/kubegrove/grove/test/upstreamshapes"
)

// refused are upstream's workloads that are bad input by upstream's own rules, keyed by upstream's
// file, and the field the refusal must name: an MNNVL group name with spaces, and an explicit
// MNNVL group on a clique without NVIDIA GPUs (refused as upstream's MNNVL guide documents; the
// comment in upstream's manifest expects it ignored, which contradicts the guide). The project's
// shapes of these workloads are refused alike.
var refused = map[string]string{
	"mnnvl-gpu-invalid.yaml":         "metadata.annotations[grove.io/mnnvl-group]",
	"mnnvl-cpu-with-annotation.yaml": "spec.template.cliques[1].annotations[grove.io/mnnvl-group]",
}

// workload is what one file of upstream's creates, from upstream's file or from the project's
// shape of it.
type workload struct {
	// file is upstream's file the workload is or stands for.
	file string
	// objects are its objects in a namespace.
	objects func(t *testing.T, ns string) []client.Object
}

// fromFile is the workload of a manifest applied unchanged but for the namespace.
func fromFile(path string) workload {
	return workload{file: filepath.Base(path), objects: func(t *testing.T, ns string) []client.Object {
		objs, err := apiserver.ReadManifests(path)
		require.NoError(t, err)
		out := make([]client.Object, 0, len(objs))
		for _, o := range objs {
			o.SetNamespace(ns)
			out = append(out, o)
		}
		return out
	}}
}

// fromShape is the workload as the project builds it.
func fromShape(s upstreamshapes.Shape) workload {
	return workload{file: s.Upstream, objects: func(_ *testing.T, ns string) []client.Object { return s.Objects(ns) }}
}

// Tiers of the tests that run one of upstream's workloads: the project's shape of it (the
// default tier) and upstream's file unchanged (the upstream corpus tier).
const (
	tierProject  = "project"
	tierUpstream = "upstream"
)

var tiers = []string{tierProject, tierUpstream}

// upstreamWorkload is upstream's workload file in a tier; the upstream tier skips t when the
// corpus is not given.
func upstreamWorkload(t *testing.T, tier, file string) workload {
	t.Helper()
	if tier == tierUpstream {
		return fromFile(filepath.Join(upstreamcorpus.Path(t, "compat", "grove-e2e"), file))
	}
	shape, ok := upstreamshapes.ByUpstream(file)
	require.True(t, ok, "no shape of upstream's %s", file)
	return fromShape(shape)
}

// yamlFiles lists a folder's manifests, but upstream's KAI queues, which TestMain creates.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if !d.IsDir() && strings.HasSuffix(name, ".yaml") && name != "queues.yaml" {
			files = append(files, path)
		}
		return nil
	}))
	sort.Strings(files)
	return files
}

// samples are upstream Grove's samples, vendored in testdata.
func samples(t *testing.T) []workload {
	t.Helper()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	var out []workload
	for _, f := range yamlFiles(t, filepath.Join(root, "test", "e2e", "compat", "testdata", "grove-samples")) {
		out = append(out, fromFile(f))
	}
	return out
}

// isPodCliqueSet tells a PodCliqueSet, typed or not.
func isPodCliqueSet(o client.Object) bool {
	if _, ok := o.(*grovev1alpha1.PodCliqueSet); ok {
		return true
	}
	return o.GetObjectKind().GroupVersionKind().Kind == "PodCliqueSet"
}

// create creates every object of w in ns with strict field validation (an unknown field is an
// error, not silently dropped) and returns the PodCliqueSets.
func create(ctx context.Context, t *testing.T, ns string, w workload) []string {
	t.Helper()
	var pcs []string
	for _, o := range w.objects(t, ns) {
		isPCS := isPodCliqueSet(o)
		require.NoError(t, k8s().Create(ctx, o, client.FieldValidation(metav1.FieldValidationStrict)), "%s: %T %s", w.file, o, o.GetName())
		if isPCS {
			pcs = append(pcs, o.GetName())
		}
	}
	return pcs
}

func k8s() client.Client { return cluster.Current.Client() }

// running tells whether a PodCliqueSet has all its replicas available and every pod of every
// PodClique ready, or says what is missing.
func running(ctx context.Context, ns, name string) (bool, string) {
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err != nil {
		return false, err.Error()
	}
	if pcs.Status.AvailableReplicas != pcs.Spec.Replicas {
		return false, fmt.Sprintf("%d of %d replicas available; conditions %v", pcs.Status.AvailableReplicas, pcs.Spec.Replicas, pcs.Status.Conditions)
	}
	cliques := &grovev1alpha1.PodCliqueList{}
	if err := k8s().List(ctx, cliques, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: name}); err != nil {
		return false, err.Error()
	}
	if pcs.Spec.Replicas > 0 && len(cliques.Items) == 0 {
		return false, "no PodCliques"
	}
	for _, c := range cliques.Items {
		if c.Status.ReadyReplicas != c.Spec.Replicas {
			return false, fmt.Sprintf("PodClique %s: %d of %d pods ready", c.Name, c.Status.ReadyReplicas, c.Spec.Replicas)
		}
	}
	return true, ""
}

// applied is one PodCliqueSet a test created, with the file it came from.
type applied struct{ file, ns, pcs string }

// runAll creates each workload in its own namespace, all at once (they progress side by side),
// requires those of refused to be refused naming the field, then waits until every pod of every
// other PodCliqueSet is ready.
func runAll(t *testing.T, workloads []workload) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, sharedTemplateNamespace(ctx))
	var all []applied
	for _, w := range workloads {
		ns := cluster.Current.NewNamespace(t)
		if want, ok := refused[w.file]; ok {
			assertRefused(ctx, t, ns, w, want)
			continue
		}
		pcs := create(ctx, t, ns, w)
		require.NotEmpty(t, pcs, "no PodCliqueSet in %s", w.file)
		for _, name := range pcs {
			all = append(all, applied{w.file, ns, name})
		}
	}
	// Thousands of pods start side by side with every other e2e package on two cores: the wait
	// goes on while pods keep becoming ready, and fails once none has for stallLimit.
	const stallLimit, overall = 3 * time.Minute, 20 * time.Minute
	end := time.Now().Add(overall)
	lastReady, lastProgress := -1, time.Now()
	pending := all
	for len(pending) > 0 && time.Now().Before(end) && time.Since(lastProgress) < stallLimit {
		var still []applied
		for _, a := range pending {
			if ok, _ := running(ctx, a.ns, a.pcs); !ok {
				still = append(still, a)
			}
		}
		pending = still
		if ready := readyPods(ctx, all); ready > lastReady {
			lastReady, lastProgress = ready, time.Now()
		}
		if len(pending) > 0 {
			select { // poll again, as the other waits here do, without sleeping past the deadline
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}
	for _, a := range pending {
		_, why := running(ctx, a.ns, a.pcs)
		assert.Empty(t, why, "PodCliqueSet %s of %s never ran (%d pods ready in all, none more for %s)", a.pcs, a.file, lastReady, time.Since(lastProgress).Round(time.Second))
	}
}

// readyPods counts the ready pods of every PodClique of the applied workloads' namespaces.
func readyPods(ctx context.Context, all []applied) int {
	seen, n := map[string]bool{}, 0
	for _, a := range all {
		if seen[a.ns] {
			continue
		}
		seen[a.ns] = true
		cliques := &grovev1alpha1.PodCliqueList{}
		if err := k8s().List(ctx, cliques, client.InNamespace(a.ns)); err != nil {
			continue
		}
		for _, c := range cliques.Items {
			n += int(c.Status.ReadyReplicas)
		}
	}
	return n
}

// TestUpstreamShapedWorkloadsAndSamplesAreAdmittedAndRun runs upstream Grove's e2e workloads as
// the project builds them and upstream's samples (vendored): each is admitted, or refused as
// upstream's rules say, and every pod runs.
func TestUpstreamShapedWorkloadsAndSamplesAreAdmittedAndRun(t *testing.T) {
	t.Parallel()
	workloads := samples(t)
	require.GreaterOrEqual(t, len(workloads), 11, "upstream's samples")
	for _, s := range upstreamshapes.All() {
		workloads = append(workloads, fromShape(s))
	}
	runAll(t, workloads)
}

// TestUpstreamManifestsAreAdmittedAndRun applies each of upstream Grove's e2e manifests
// unchanged (the upstream corpus tier) and requires what the shapes of them get.
func TestUpstreamManifestsAreAdmittedAndRun(t *testing.T) {
	t.Parallel()
	var workloads []workload
	for _, f := range yamlFiles(t, upstreamcorpus.Path(t, "compat", "grove-e2e")) {
		workloads = append(workloads, fromFile(f))
	}
	require.GreaterOrEqual(t, len(workloads), 46, "upstream's e2e manifests")
	runAll(t, workloads)
}

// sharedTemplateNamespace creates what upstream's resource-sharing test creates before applying
// its manifest: the namespace rs-shared holding the ResourceClaimTemplate ext-ns-tpl.
func sharedTemplateNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upstreamshapes.SharedNamespace}}
	if err := k8s().Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := k8s().Create(ctx, upstreamshapes.SharedClaimTemplate()); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// assertRefused requires the API server to refuse w's PodCliqueSet naming field, and to have
// stored nothing.
func assertRefused(ctx context.Context, t *testing.T, ns string, w workload, field string) {
	t.Helper()
	for _, o := range w.objects(t, ns) {
		err := k8s().Create(ctx, o, client.FieldValidation(metav1.FieldValidationStrict))
		if assert.Error(t, err, "%s must be refused", w.file) {
			assert.Contains(t, err.Error(), field, w.file)
		}
	}
	list := &grovev1alpha1.PodCliqueSetList{}
	require.NoError(t, k8s().List(ctx, list, client.InNamespace(ns)))
	assert.Empty(t, list.Items, "nothing of %s is stored", w.file)
}
