package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
)

// Main starts one cluster for an e2e test package, runs its tests and stops the cluster:
// call it from TestMain. setup, if given, runs once the cluster is up.
// GROVE_KEEP_CLUSTER_DIR=1 keeps the logs of a passing run too.
func Main(m *testing.M, opts Options, setup func(*Cluster) error) int {
	if os.Getenv("GROVE_KEEP_CLUSTER_DIR") != "" {
		opts.KeepDir = true
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err)
		return 1
	}
	fmt.Printf("local cluster started in %s (logs: %s)\n", c.StartedIn.Round(time.Millisecond), c.Dir())
	code := 1
	func() {
		defer c.Stop()
		if setup != nil {
			if err := setup(c); err != nil {
				c.Keep()
				fmt.Fprintf(os.Stderr, "setting up the local cluster: %v\n(logs kept in %s)\n", err, c.Dir())
				return
			}
		}
		Current = c
		code = m.Run()
		if code != 0 {
			// The tails rarely say why: every component's log and the audit log stay.
			c.Keep()
			if !c.tailsShown.Load() {
				fmt.Fprintln(os.Stderr, c.LogTails(20))
			}
			fmt.Fprintf(os.Stderr, "a test failed: the cluster's logs are kept in %s\n", c.Dir())
		}
	}()
	return code
}

// Current is the cluster Main started for this test package.
var Current *Cluster

// NewNamespace creates a namespace for one test, so parallel tests never see each other's
// objects; it is deleted when the test ends.
func (c *Cluster) NewNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	require.NoError(t, c.client.Create(context.Background(), ns))
	t.Cleanup(func() {
		_ = c.client.Delete(context.Background(), ns, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
	t.Cleanup(func() { c.showTailsIfFailed(t) })
	return ns.Name
}

// showTailsIfFailed prints the end of every component's log when t failed, at once: go test
// prints a test's own failure messages after it ends, so they come after the logs and are the
// last thing a CI excerpt of the output shows.
func (c *Cluster) showTailsIfFailed(t testing.TB) {
	if !t.Failed() {
		return
	}
	c.tailsShown.Store(true)
	fmt.Fprintf(os.Stderr, "=== %s failed; the end of each component's log follows (all of it in %s) ===\n%s", t.Name(), c.Dir(), c.LogTails(20))
}

// FailPod makes a Running pod exit 1 now through kwok's exit stage, as a crash would.
func (c *Cluster) FailPod(t testing.TB, ns, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		pod := &corev1.Pod{}
		if c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod) != nil || pod.Status.Phase != corev1.PodRunning {
			return false
		}
		patched := pod.DeepCopy()
		if patched.Labels == nil {
			patched.Labels = map[string]string{}
		}
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Labels[LabelExitCode] = "1"
		patched.Annotations[AnnotationExitAfter] = "0s"
		return c.client.Patch(context.Background(), patched, client.MergeFrom(pod)) == nil
	}, time.Minute, 100*time.Millisecond, "failing pod %s/%s", ns, name)
}

// MainWithBinaries is Main for a package that runs the project's binaries: it builds them once
// into a temporary directory (removed at the end) whose path it stores in *binDir before the
// cluster starts, installs the project's CRDs besides opts.CRDDirs, and uses the project's scheme
// unless opts sets one.
func MainWithBinaries(m *testing.M, opts Options, binDir *string, setup func(*Cluster) error) int {
	crds, cleanup, err := buildForTests(binDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	opts.CRDDirs = append(crds, opts.CRDDirs...)
	if opts.Scheme == nil {
		opts.Scheme = apiserver.Scheme()
	}
	return Main(m, opts, setup)
}

// buildForTests builds the project's binaries into a temporary directory, stores its path in
// *binDir, and returns the project's CRD directories and what removes the binaries.
func buildForTests(binDir *string) (crds []string, cleanup func(), err error) {
	dir, err := BuildBinaries()
	if err != nil {
		return nil, nil, err
	}
	*binDir = dir
	cleanup = func() { os.RemoveAll(dir) }
	if crds, err = apiserver.CRDDirs(); err != nil {
		cleanup()
		return nil, nil, err
	}
	return crds, cleanup, nil
}

// DeleteNamespace deletes namespace ns, waits until it is gone, and returns how long that took
// and the creates by any of users that the API server refused from the moment the deletion began
// (403: nothing may be created in a namespace being terminated), from the audit log.
func (c *Cluster) DeleteNamespace(t testing.TB, ns string, users ...string) (time.Duration, []AuditEvent) {
	t.Helper()
	ctx := context.Background()
	namespace := &corev1.Namespace{}
	require.NoError(t, c.client.Get(ctx, client.ObjectKey{Name: ns}, namespace))
	require.NoError(t, c.client.Delete(ctx, namespace))
	require.NoError(t, c.client.Get(ctx, client.ObjectKey{Name: ns}, namespace))
	began := namespace.DeletionTimestamp.Time // whole seconds
	start := time.Now()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}, 3*time.Minute, 250*time.Millisecond, "namespace %s goes", ns)
	took := time.Since(start)
	who := map[string]bool{}
	for _, u := range users {
		who[u] = true
	}
	refused, err := c.AuditEvents(func(ev AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && who[ev.User.Username] && ev.Verb == "create" && ev.ResponseStatus.Code == 403 &&
			!ev.StageTimestamp.Before(began)
	})
	require.NoError(t, err)
	for _, ev := range refused {
		t.Logf("refused create while %s was deleted: %s %s by %s", ns, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.User.Username)
	}
	return took, refused
}

// SleepPast sleeps until d has passed since a moment the API recorded (a condition's transition,
// an object's creation): such times are truncated to the second, so the instant is taken a second
// later, and a second of margin is added for the controller's pass. It is for checks that
// something did not happen by a time the test has observed, not for waiting on a change.
func SleepPast(recorded time.Time, d time.Duration) {
	time.Sleep(time.Until(recorded.Add(d + 2*time.Second)))
}
