package operatore2e

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// indexLedger remembers every pod ever seen and flags two live pods holding one clique index.
type indexLedger struct {
	mu         sync.Mutex
	live       map[string]string // "<clique>/<index>" → pod UID
	seen       int
	duplicates []string
	badNames   []string
	gaps       []string // watch errors: the ledger missed events and proves nothing
}

func (l *indexLedger) observe(ev watch.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev.Type == watch.Error {
		l.gaps = append(l.gaps, fmt.Sprintf("%v", ev.Object))
		return
	}
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	clique, index := pod.Labels[grovev1alpha1.LabelPodClique], pod.Labels[grovev1alpha1.LabelPodIndex]
	if pod.Name != clique+"-"+index {
		l.badNames = append(l.badNames, pod.Name)
	}
	key := clique + "/" + index
	if ev.Type == watch.Deleted {
		if l.live[key] == string(pod.UID) {
			delete(l.live, key)
		}
		return
	}
	if uid, ok := l.live[key]; ok && uid != string(pod.UID) {
		l.duplicates = append(l.duplicates, key)
	}
	if _, ok := l.live[key]; !ok {
		l.seen++
	}
	l.live[key] = string(pod.UID)
}

// TestOperatorKilledAtRandomMomentsConvergesToTheSameState is not parallel: it kills the
// package's shared grove-operator, so it runs before the parallel tests start.
func TestOperatorKilledAtRandomMomentsConvergesToTheSameState(t *testing.T) {
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	ns := cluster.Current.NewNamespace(t)

	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	w, err := cluster.ListAndWatch(ctx, watcher, &corev1.PodList{}, ns)
	require.NoError(t, err)
	defer w.Stop()
	ledger := &indexLedger{live: map[string]string{}}
	go func() {
		for ev := range w.ResultChan() {
			ledger.observe(ev)
		}
	}()

	restarts := 0
	crash := func(step string) {
		time.Sleep(time.Duration(rng.Intn(1500)) * time.Millisecond)
		operator.Kill()
		restarts++
		t.Logf("killed the operator during %s", step)
		var err error
		operator, err = startBinary(cluster.Current, "grove-operator", fmt.Sprintf("grove-operator-%d", restarts+1))
		require.NoError(t, err)
	}

	pcs := disaggregated(ns, "crash", 2)
	pcs.Spec.Replicas = 3
	require.NoError(t, k8s().Create(ctx, pcs))
	crash("creation")
	waitRunning(t, ns, "crash", 21, 3*time.Minute)

	scale(t, &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: pcsMeta(ns, "crash-0-prefill")}, 3)
	crash("scaling")
	waitRunning(t, ns, "crash", 24, 3*time.Minute)

	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "busybox:1.37" })
	crash("a rolling update")

	// The state a run without crashes reaches: every pod, on the new router image.
	want := []string{}
	for i := 0; i < 3; i++ {
		want = append(want, fmt.Sprintf("crash-%d-router-0", i))
		groups := 2
		if i == 0 {
			groups = 3
		}
		for j := 0; j < groups; j++ {
			for _, p := range []string{"leader-0", "worker-0", "worker-1"} {
				want = append(want, fmt.Sprintf("crash-%d-prefill-%d-%s", i, j, p))
			}
		}
	}
	sort.Strings(want)
	require.Eventually(t, func() bool {
		pods := listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "crash"})
		var names []string
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() || len(p.Spec.SchedulingGates) > 0 {
				return false
			}
			if p.Labels[grovev1alpha1.LabelPodClique] == "crash-"+p.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex]+"-router" &&
				p.Spec.Containers[0].Image != "busybox:1.37" {
				return false
			}
			names = append(names, p.Name)
		}
		sort.Strings(names)
		return assert.ObjectsAreEqual(want, names)
	}, 3*time.Minute, 250*time.Millisecond, "the final pods equal a run without crashes")

	gangs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(ns)))
	var gangNames []string
	for _, g := range gangs.Items {
		gangNames = append(gangNames, g.Name)
	}
	assert.ElementsMatch(t, []string{"crash-0", "crash-1", "crash-2", "crash-0-prefill-0", "crash-0-prefill-1", "crash-1-prefill-0", "crash-2-prefill-0"}, gangNames)
	got := &grovev1alpha1.PodCliqueSet{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && got.Status.UpdatedReplicas == 3 && got.Status.AvailableReplicas == 3
	}, time.Minute, 250*time.Millisecond)

	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	require.Empty(t, ledger.gaps, "the pod ledger has a gap")
	assert.Empty(t, ledger.duplicates, "no clique index was ever held by two live pods")
	assert.Empty(t, ledger.badNames, "every pod's name is its clique and index")
	t.Logf("%d restarts; %d pod incarnations watched", restarts, ledger.seen)
}
