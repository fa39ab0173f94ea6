package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kubegrove/grove/test/apiserver"
)

// MultiKueue's objects on the manager cluster, as ConnectWorkers creates them.
const (
	// MultiKueueAdmissionCheck is the AdmissionCheck a manager's ClusterQueue lists to send its
	// workloads to the workers.
	MultiKueueAdmissionCheck = "multikueue"
	// MultiKueueConfigName is the MultiKueueConfig listing every worker.
	MultiKueueConfigName = "multikueue"
	// MultiKueueOrigin is the manager's origin (multiKueue.origin): the value of the label
	// kueue.x-k8s.io/multikueue-origin on what it creates on the workers.
	MultiKueueOrigin = "multikueue"
	// MultiKueuePodCliqueSet is the generic adapter's name for PodCliqueSets (Kind.version.group).
	MultiKueuePodCliqueSet = "PodCliqueSet.v1alpha1.grove.io"
)

// MultiKueueManager is the multiKueue block of a manager cluster's Kueue configuration
// (Options.MultiKueue). Kueue's own defaults (1 minute, 15 minutes) are far too slow for tests.
type MultiKueueManager struct {
	// GCInterval is how often Kueue deletes remote workloads whose local one is gone (default 5s).
	GCInterval time.Duration
	// WorkerLostTimeout is how long a workload stays Ready on a worker Kueue cannot reach before
	// it is dispatched again (default 30s).
	WorkerLostTimeout time.Duration
	// ExternalFrameworks are the kinds served by the generic adapter, as Kind.version.group
	// (nil: MultiKueuePodCliqueSet). Every worker must serve them.
	ExternalFrameworks []string
	// DispatcherName picks the dispatcher (empty: Kueue's default, all at once).
	DispatcherName string
}

// configYAML is the multiKueue block of Kueue's Configuration ("" without one).
func (m *MultiKueueManager) configYAML() string {
	if m == nil {
		return ""
	}
	gc, lost := m.GCInterval, m.WorkerLostTimeout
	if gc == 0 {
		gc = 5 * time.Second
	}
	if lost == 0 {
		lost = 30 * time.Second
	}
	frameworks := m.ExternalFrameworks
	if frameworks == nil {
		frameworks = []string{MultiKueuePodCliqueSet}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "multiKueue:\n  gcInterval: %s\n  origin: %s\n  workerLostTimeout: %s\n", gc, MultiKueueOrigin, lost)
	if m.DispatcherName != "" {
		fmt.Fprintf(&b, "  dispatcherName: %q\n", m.DispatcherName)
	}
	if len(frameworks) > 0 {
		b.WriteString("  externalFrameworks:\n")
		for _, f := range frameworks {
			fmt.Fprintf(&b, "  - name: %q\n", f)
		}
	}
	return b.String()
}

// multiKueueSecret is the Secret holding a worker's kubeconfig on the manager.
func multiKueueSecret(worker string) string { return "multikueue-" + worker }

// ConnectWorkers makes m the MultiKueue manager of workers (by MultiKueueCluster name, e.g.
// "worker-1"): for each, a kubeconfig of an identity in system:masters on that worker (CA and
// client certificate embedded, as Kueue requires) in the Secret multikueue-<name> of
// KueueNamespace, and a MultiKueueCluster reading it; the MultiKueueConfig MultiKueueConfigName
// listing them all; and the AdmissionCheck MultiKueueAdmissionCheck. It returns once the check
// and every MultiKueueCluster are Active, or says what their conditions were. m must run Kueue.
func (m *Cluster) ConnectWorkers(ctx context.Context, workers map[string]*Cluster) error {
	if !m.opts.Kueue {
		return errors.New("ConnectWorkers: the manager does not run Kueue")
	}
	names := slices.Sorted(maps.Keys(workers))
	for _, name := range names {
		path, err := workers[name].KubeconfigFor("multikueue-manager", "system:masters")
		if err != nil {
			return err
		}
		kubeconfig, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: multiKueueSecret(name), Namespace: KueueNamespace}}
		if err := m.createOrUpdate(ctx, secret, func() { secret.Data = map[string][]byte{kueuev1beta2.MultiKueueConfigSecretKey: kubeconfig} }); err != nil {
			return fmt.Errorf("the kubeconfig Secret of %s: %w", name, err)
		}
		mkc := &kueuev1beta2.MultiKueueCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := m.createOrUpdate(ctx, mkc, func() {
			mkc.Spec.ClusterSource = kueuev1beta2.ClusterSource{KubeConfig: &kueuev1beta2.KubeConfig{
				Location: secret.Name, LocationType: kueuev1beta2.SecretLocationType,
			}}
		}); err != nil {
			return fmt.Errorf("the MultiKueueCluster %s: %w", name, err)
		}
	}
	config := &kueuev1beta2.MultiKueueConfig{ObjectMeta: metav1.ObjectMeta{Name: MultiKueueConfigName}}
	if err := m.createOrUpdate(ctx, config, func() { config.Spec.Clusters = names }); err != nil {
		return fmt.Errorf("the MultiKueueConfig: %w", err)
	}
	check := &kueuev1beta2.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: MultiKueueAdmissionCheck}}
	if err := m.createOrUpdate(ctx, check, func() {
		check.Spec.ControllerName = kueuev1beta2.MultiKueueControllerName
		check.Spec.Parameters = &kueuev1beta2.AdmissionCheckParametersReference{
			APIGroup: kueuev1beta2.SchemeGroupVersion.Group, Kind: "MultiKueueConfig", Name: MultiKueueConfigName,
		}
	}); err != nil {
		return fmt.Errorf("the AdmissionCheck: %w", err)
	}
	if err := m.waitGarbageCollectsKueue(ctx); err != nil {
		return err
	}
	var last string
	err := waitUntil(ctx, "the MultiKueue AdmissionCheck and clusters Active", 2*time.Minute, []*process{m.kueue}, func(ctx context.Context) (bool, error) {
		ok, state, err := m.multiKueueState(ctx, names)
		last = state
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("%w\n%s\nKueue's last MultiKueue log lines on the manager:\n%s", err, last, m.kueueLogLines("multikueue", 15))
	}
	return nil
}

// waitGarbageCollectsKueue waits until the cluster's garbage collector deletes a Kueue object whose
// owner is gone. kube-controller-manager starts before Kueue's CRDs are installed and monitors
// them only from its next discovery resync (every 30 s): until then the Workload of a job deleted
// on a MultiKueue manager stays, and so does the job's copy on the worker (seen: 21 s).
func (c *Cluster) waitGarbageCollectsKueue(ctx context.Context) error {
	owner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-probe-"}}
	if err := c.client.Create(ctx, owner); err != nil {
		return err
	}
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: owner.Name, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: owner.Name, UID: owner.UID,
	}}}}
	if err := c.client.Create(ctx, flavor); err != nil {
		return err
	}
	if err := c.client.Delete(ctx, owner); err != nil {
		return err
	}
	return waitUntil(ctx, "the garbage collector to delete a ResourceFlavor whose owner is gone", 2*time.Minute, c.componentProcs(), func(ctx context.Context) (bool, error) {
		err := c.client.Get(ctx, client.ObjectKeyFromObject(flavor), &kueuev1beta2.ResourceFlavor{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// multiKueueState reports whether the AdmissionCheck and every MultiKueueCluster are Active, and
// their conditions.
func (m *Cluster) multiKueueState(ctx context.Context, clusters []string) (bool, string, error) {
	var b strings.Builder
	check := &kueuev1beta2.AdmissionCheck{}
	if err := m.client.Get(ctx, client.ObjectKey{Name: MultiKueueAdmissionCheck}, check); err != nil {
		return false, "", err
	}
	active := meta.FindStatusCondition(check.Status.Conditions, kueuev1beta2.AdmissionCheckActive)
	ok := active != nil && active.Status == metav1.ConditionTrue && active.Reason == "Active"
	fmt.Fprintf(&b, "AdmissionCheck %s: %s\n", check.Name, describeConditions(check.Status.Conditions))
	for _, name := range clusters {
		mkc := &kueuev1beta2.MultiKueueCluster{}
		if err := m.client.Get(ctx, client.ObjectKey{Name: name}, mkc); err != nil {
			return false, "", err
		}
		ok = ok && meta.IsStatusConditionTrue(mkc.Status.Conditions, kueuev1beta2.MultiKueueClusterActive)
		fmt.Fprintf(&b, "MultiKueueCluster %s: %s\n", name, describeConditions(mkc.Status.Conditions))
	}
	return ok, b.String(), nil
}

func describeConditions(conds []metav1.Condition) string {
	if len(conds) == 0 {
		return "no conditions"
	}
	var out []string
	for _, c := range conds {
		out = append(out, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, "; ")
}

// kueueLogLines returns the last n lines of Kueue's log that contain substr (case-insensitive).
func (c *Cluster) kueueLogLines(substr string, n int) string {
	if c.kueue == nil {
		return "(Kueue not started)"
	}
	f, err := os.Open(c.kueue.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(strings.ToLower(sc.Text()), strings.ToLower(substr)) {
			lines = append(lines, sc.Text())
			if len(lines) > n {
				lines = lines[1:]
			}
		}
	}
	return strings.Join(lines, "\n")
}

// createOrUpdate creates obj, or updates the existing one of its name; set fills what it wants
// (called on obj before the create, and on the stored object before the update).
func (c *Cluster) createOrUpdate(ctx context.Context, obj client.Object, set func()) error {
	set()
	err := c.client.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	set()
	return c.client.Update(ctx, obj)
}

// MultiKueueQueues are the queues of one test on a MultiKueue manager and its workers: the same
// ResourceFlavor, ClusterQueue and LocalQueue (all named Name) on every cluster, the manager's
// ClusterQueue with the MultiKueue admission check, each with its own quota.
type MultiKueueQueues struct {
	// Namespace of the LocalQueues; it is created on every cluster where it is missing.
	Namespace string
	// Name of the ResourceFlavor, ClusterQueue and LocalQueue (default: Namespace).
	Name string
	// Manager is the manager ClusterQueue's nominal quota: what the manager may have dispatched at
	// once.
	Manager corev1.ResourceList
	// Workers are the workers' ClusterQueues' nominal quotas, by MultiKueueCluster name; a worker
	// not listed gets Manager's.
	Workers map[string]corev1.ResourceList
}

func (q MultiKueueQueues) name() string {
	if q.Name != "" {
		return q.Name
	}
	return q.Namespace
}

// queueObjects are the flavor, ClusterQueue and LocalQueue of q on one cluster.
func (q MultiKueueQueues) queueObjects(quota corev1.ResourceList, manager bool) []client.Object {
	name := q.name()
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}}
	var quotas []kueuev1beta2.ResourceQuota
	var covered []corev1.ResourceName
	for _, r := range slices.Sorted(maps.Keys(quota)) {
		covered = append(covered, r)
		quotas = append(quotas, kueuev1beta2.ResourceQuota{Name: r, NominalQuota: quota[r]})
	}
	cq := &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: covered,
				Flavors:          []kueuev1beta2.FlavorQuotas{{Name: kueuev1beta2.ResourceFlavorReference(name), Resources: quotas}},
			}},
		},
	}
	if manager {
		cq.Spec.AdmissionChecksStrategy = &kueuev1beta2.AdmissionChecksStrategy{
			AdmissionChecks: []kueuev1beta2.AdmissionCheckStrategyRule{{Name: MultiKueueAdmissionCheck}},
		}
	}
	lq := &kueuev1beta2.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: q.Namespace},
		Spec:       kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(name)},
	}
	return []client.Object{flavor, cq, lq}
}

// CreateMultiKueueQueues creates q's namespace (where missing) and queues on the manager m and
// on each worker, and waits until every ClusterQueue and LocalQueue is Active: from then on
// Kueue's webhooks on the manager know the queue leads to MultiKueue (they default a JobSet's
// spec.managedBy from that).
func (m *Cluster) CreateMultiKueueQueues(ctx context.Context, workers map[string]*Cluster, q MultiKueueQueues) error {
	type target struct {
		name    string
		c       *Cluster
		objects []client.Object
	}
	targets := []target{{"manager", m, q.queueObjects(q.Manager, true)}}
	for _, name := range slices.Sorted(maps.Keys(workers)) {
		quota, ok := q.Workers[name]
		if !ok {
			quota = q.Manager
		}
		targets = append(targets, target{name, workers[name], q.queueObjects(quota, false)})
	}
	for _, t := range targets {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: q.Namespace}}
		if err := t.c.client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("namespace %s on %s: %w", q.Namespace, t.name, err)
		}
		for _, obj := range t.objects {
			if err := t.c.client.Create(ctx, obj); err != nil {
				return fmt.Errorf("%T %s on %s: %w", obj, obj.GetName(), t.name, err)
			}
		}
	}
	for _, t := range targets {
		var last string
		err := waitUntil(ctx, "the queues of "+q.name()+" Active on "+t.name, time.Minute, []*process{t.c.kueue}, func(ctx context.Context) (bool, error) {
			cq := &kueuev1beta2.ClusterQueue{}
			lq := &kueuev1beta2.LocalQueue{}
			if err := t.c.client.Get(ctx, client.ObjectKey{Name: q.name()}, cq); err != nil {
				return false, err
			}
			if err := t.c.client.Get(ctx, client.ObjectKey{Namespace: q.Namespace, Name: q.name()}, lq); err != nil {
				return false, err
			}
			last = fmt.Sprintf("ClusterQueue: %s; LocalQueue: %s", describeConditions(cq.Status.Conditions), describeConditions(lq.Status.Conditions))
			return meta.IsStatusConditionTrue(cq.Status.Conditions, kueuev1beta2.ClusterQueueActive) &&
				meta.IsStatusConditionTrue(lq.Status.Conditions, kueuev1beta2.LocalQueueActive), nil
		})
		if err != nil {
			return fmt.Errorf("%w (%s)", err, last)
		}
	}
	return nil
}

// DeleteMultiKueueQueues deletes what CreateMultiKueueQueues created, but the namespace, without
// waiting.
func (m *Cluster) DeleteMultiKueueQueues(ctx context.Context, workers map[string]*Cluster, q MultiKueueQueues) {
	for _, c := range append([]*Cluster{m}, slices.Collect(maps.Values(workers))...) {
		objects := q.queueObjects(nil, false)
		for i := len(objects) - 1; i >= 0; i-- {
			_ = c.client.Delete(ctx, objects[i])
		}
	}
}

// SetUpMultiKueueQueues is CreateMultiKueueQueues for a test: it fails the test on an error and
// deletes the queues when the test ends.
func (m *Cluster) SetUpMultiKueueQueues(t testing.TB, workers map[string]*Cluster, q MultiKueueQueues) {
	t.Helper()
	t.Cleanup(func() { m.DeleteMultiKueueQueues(context.Background(), workers, q) })
	require.NoError(t, m.CreateMultiKueueQueues(context.Background(), workers, q))
}

// NewNamespaceOn creates one namespace of the same (generated) name on every cluster, for one
// test across a MultiKueue manager and its workers; it is deleted everywhere when the test ends,
// and a failed test prints the end of every cluster's logs.
func NewNamespaceOn(t testing.TB, clusters ...*Cluster) string {
	t.Helper()
	require.NotEmpty(t, clusters)
	ctx := context.Background()
	first := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	require.NoError(t, clusters[0].client.Create(ctx, first))
	for _, c := range clusters {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: first.Name}}
		if c != clusters[0] {
			require.NoError(t, c.client.Create(ctx, ns))
		}
		t.Cleanup(func() {
			_ = c.client.Delete(context.Background(), ns, client.PropagationPolicy(metav1.DeletePropagationBackground))
		})
		t.Cleanup(func() { c.showTailsIfFailed(t) })
	}
	return first.Name
}

// CurrentClusters are the clusters MainMulti started for this test package, by name.
var CurrentClusters map[string]*Cluster

// MainMulti is Main for several clusters in one test package (a MultiKueue manager and its
// workers): it starts one cluster per entry of opts, side by side, each in <dir>/<name> of one
// directory, runs setup once all are up, then the tests, and stops them all. With binDir it
// first builds the project's binaries and installs the project's CRDs and scheme on every
// cluster, as MainWithBinaries does. One SIGINT or SIGTERM stops every cluster.
// GROVE_KEEP_CLUSTER_DIR=1 keeps the logs of a passing run too.
func MainMulti(m *testing.M, opts map[string]Options, binDir *string, setup func(map[string]*Cluster) error) int {
	if binDir != nil {
		crds, cleanup, err := buildForTests(binDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		for name, o := range opts {
			o.CRDDirs = append(slices.Clone(crds), o.CRDDirs...)
			if o.Scheme == nil {
				o.Scheme = apiserver.Scheme()
			}
			opts[name] = o
		}
	}
	parent, err := os.MkdirTemp("", "grove-clusters-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	keep := os.Getenv("GROVE_KEEP_CLUSTER_DIR") != ""
	defer func() {
		if !keep {
			_ = os.RemoveAll(parent)
		}
	}()

	var mu sync.Mutex
	clusters := map[string]*Cluster{}
	stopAll := func() {
		mu.Lock()
		all := slices.Collect(maps.Values(clusters))
		mu.Unlock()
		var wg sync.WaitGroup
		for _, c := range all {
			wg.Go(c.Stop)
		}
		wg.Wait()
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			stopAll()
			os.Exit(130)
		}
	}()

	begin := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 0, len(opts))
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		o := opts[name]
		if o.Dir == "" {
			o.Dir = filepath.Join(parent, name)
		}
		o.KeepDir = o.KeepDir || keep
		o.CallerStopsOnInterrupt = true
		if o.StartTimeout == 0 {
			// Several clusters start side by side on few cores.
			o.StartTimeout = time.Duration(len(opts)) * 3 * time.Minute
		}
		wg.Go(func() {
			c, err := Start(context.Background(), o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("starting cluster %s: %w", name, err))
				return
			}
			clusters[name] = c
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		keep = true
		stopAll()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var took []string
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		took = append(took, fmt.Sprintf("%s %s", name, clusters[name].StartedIn.Round(time.Millisecond)))
	}
	fmt.Printf("%d local clusters started in %s (%s; logs: %s)\n", len(clusters), time.Since(begin).Round(time.Millisecond), strings.Join(took, ", "), parent)

	code := 1
	func() {
		defer stopAll()
		if setup != nil {
			began := time.Now()
			if err := setup(clusters); err != nil {
				keep = true
				fmt.Fprintf(os.Stderr, "setting up the local clusters: %v\n(logs kept in %s)\n", err, parent)
				return
			}
			fmt.Printf("local clusters set up in %s\n", time.Since(began).Round(time.Millisecond))
		}
		CurrentClusters = clusters
		code = m.Run()
		if code != 0 {
			keep = true
			shown := false
			for _, c := range clusters {
				shown = shown || c.tailsShown.Load()
			}
			if !shown {
				for _, name := range slices.Sorted(maps.Keys(clusters)) {
					fmt.Fprintf(os.Stderr, "=== cluster %s ===\n%s", name, clusters[name].LogTails(20))
				}
			}
			fmt.Fprintf(os.Stderr, "a test failed: the clusters' logs are kept in %s\n", parent)
		}
	}()
	return code
}
