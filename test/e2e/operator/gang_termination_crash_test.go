package operatore2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// uidHistory records every UID each PodClique name ever had.
type uidHistory struct {
	mu   sync.Mutex
	uids map[string]map[types.UID]bool
	// broken holds watch errors: the history has a gap and proves nothing.
	broken []string
}

func (h *uidHistory) observe(ev watch.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ev.Type == watch.Error {
		h.broken = append(h.broken, fmt.Sprintf("%v", ev.Object))
		return
	}
	p, ok := ev.Object.(*grovev1alpha1.PodClique)
	if !ok {
		return
	}
	if h.uids[p.Name] == nil {
		h.uids[p.Name] = map[types.UID]bool{}
	}
	h.uids[p.Name][p.UID] = true
}

func (h *uidHistory) gaps() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.broken...)
}

func (h *uidHistory) incarnations() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for name, uids := range h.uids {
		out[name] = len(uids)
	}
	return out
}

func restartOperator(t *testing.T, why string) {
	t.Helper()
	operator.Kill()
	t.Logf("killed the operator %s", why)
	var err error
	operator, err = startBinary(cluster.Current, "grove-operator", fmt.Sprintf("grove-operator-gt-%d", time.Now().UnixNano()))
	require.NoError(t, err)
}

// TestGangTerminationHappensOncePerEpisodeAcrossOperatorCrashes is not parallel: it kills the
// shared operator between the breach and the deletion, and again right after the deletion.
func TestGangTerminationHappensOncePerEpisodeAcrossOperatorCrashes(t *testing.T) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	w, err := cluster.ListAndWatch(ctx, watcher, &grovev1alpha1.PodCliqueList{}, ns)
	require.NoError(t, err)
	defer w.Stop()
	history := &uidHistory{uids: map[string]map[types.UID]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			history.observe(ev)
		}
	}()

	before := startGang(t, gangPCS(ns, "once", durationPtr(3*time.Second), 1, 1, nil), 4)
	makeUnready(t, ns, "once-0-a-1")
	waitBreached(t, ns, "once-0-a")
	restartOperator(t, "between the breach and its deadline")

	require.Eventually(t, func() bool {
		changed, _ := replaced(before, cliqueUIDs(t, ns, "once"))
		return len(changed) == len(before)
	}, time.Minute, 50*time.Millisecond, "the replica is terminated by the restarted operator")
	restartOperator(t, "right after the deletion")
	waitRunning(t, ns, "once", 4, 2*time.Minute)
	// The new cliques were available and the restarted operator has written nothing in the
	// namespace for 2 s: a second termination of the same episode would have been decided by then.
	waitCliquesWereAvailable(t, ns, "once")
	waitAvailable(t, ns, "once", 1)
	cluster.Current.WaitQuiet(t, 2*time.Second, time.Minute, byOurBinaries(ns))
	assert.Len(t, cliqueDeletes(t, ns), len(before), "one termination: each PodClique deleted once")
	require.Eventually(t, func() bool {
		for _, n := range history.incarnations() {
			if n < 2 {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "the watch has seen every replacement")

	require.Empty(t, history.gaps(), "the PodClique history has a gap")
	for name, n := range history.incarnations() {
		assert.Equal(t, 2, n, "%s: the original and exactly one replacement", name)
	}
	assert.Len(t, history.incarnations(), len(before))
}
