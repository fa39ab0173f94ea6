package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/cluster"
)

// podEvents records, from a watch, which original pods were deleted and which pods were added.
type podEvents struct {
	mu       sync.Mutex
	original map[types.UID]bool
	deleted  int
	added    int
}

func (e *podEvents) observe(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case ev.Type == watch.Added && !e.original[p.UID]:
		e.added++
	case ev.Type == watch.Deleted && e.original[p.UID]:
		e.deleted++
		delete(e.original, p.UID) // count each once
	}
}

func (e *podEvents) counts() (deleted, added int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.deleted, e.added
}

// Test_RU10_RollingUpdateInsufficientResources: with no room for a new pod, a rolling update
// deletes one pod first and goes no further while its replacement cannot be placed; once room
// comes back it completes. Adapted: the test's own nodes (tainted so only it uses them) are
// cordoned, where upstream cordons every worker of its private cluster.
func Test_RU10_RollingUpdateInsufficientResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	nodes, err := cluster.Current.AddPool(ctx, ns, 2, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cluster.Current.DeleteNodes(context.Background(), nodes...) })
	pcs := workload(ns, "workload1", full)
	for _, c := range pcs.Spec.Template.Cliques {
		cluster.OnPool(&c.Spec.PodSpec, ns)
	}
	deploy(t, pcs, 10)

	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	list := &corev1.PodList{}
	w, err := cluster.ListAndWatch(ctx, watcher, list, ns)
	require.NoError(t, err)
	defer w.Stop()
	ev := &podEvents{original: map[types.UID]bool{}}
	for _, p := range list.Items {
		ev.original[p.UID] = true
	}
	go func() {
		for e := range w.ResultChan() {
			ev.observe(e)
		}
	}()

	require.NoError(t, cluster.Current.SetUnschedulable(ctx, true, nodes...))
	since := time.Now()
	triggerUpdate(t, pcs, "pc-a")
	require.Eventually(t, func() bool {
		deleted, added := ev.counts()
		return deleted == 1 && added == 1
	}, 2*time.Minute, 200*time.Millisecond, "one original pod deleted and its replacement added")
	assert.Never(t, func() bool {
		deleted, _ := ev.counts()
		return deleted > 1
	}, 10*time.Second, 200*time.Millisecond, "nothing more is deleted while the replacement cannot be placed")

	require.NoError(t, cluster.Current.SetUnschedulable(ctx, false, nodes...))
	require.Eventually(t, func() bool {
		got := get(t, pcs)
		p := got.Status.UpdateProgress
		return got.Status.UpdatedReplicas == 1 && p != nil && p.UpdateEndedAt != nil && !p.UpdateStartedAt.Time.Before(since.Truncate(time.Second))
	}, 5*time.Minute, 200*time.Millisecond, "the update completes once there is room")
}
