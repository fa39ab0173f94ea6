package podclique

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/inflight"
)

func TestPodCreatesOfManyCliquesShareOneBudget(t *testing.T) {
	const cliques, pods = 20, 10 // as a scaling group's scale-out: each clique's window alone is 8
	var creates inflight.Counter
	release := make(chan struct{})
	c := fakeClient(t).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			creates.Enter()
			defer creates.Leave()
			<-release
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	r := reconcilerFor(t, c)
	r.Recorder = events.NewFakeRecorder(cliques)
	r.creates.Size = podCreatesInFlight
	backend := r.Backends.ForPodScheduler("")

	var wg sync.WaitGroup
	for i := range cliques {
		pclq := builders.PodClique("ns", fmt.Sprint("c", i)).UID(fmt.Sprint("u", i)).Replicas(pods, pods).Obj()
		wg.Go(func() {
			assert.NoError(t, r.createPods(context.Background(), pclq, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "h", backend, schedulable{}, ""))
		})
	}
	require.Eventually(t, func() bool { return creates.Now() == podCreatesInFlight }, 5*time.Second, time.Millisecond)
	close(release)
	wg.Wait()

	assert.Equal(t, int32(podCreatesInFlight), creates.Most(), "creates in flight across all cliques")
	created := &corev1.PodList{}
	require.NoError(t, c.List(context.Background(), created))
	assert.Len(t, created.Items, cliques*pods)
}

func TestAFailedPodCreateGivesItsBudgetSlotBack(t *testing.T) {
	var calls atomic.Int32
	c := fakeClient(t).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if calls.Add(1) == 1 {
				return errors.New("admission refused it")
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	r := reconcilerFor(t, c)
	r.Recorder = events.NewFakeRecorder(10)
	r.creates.Size = 1
	backend := r.Backends.ForPodScheduler("")
	pclq := builders.PodClique("ns", "c").UID("u").Replicas(1, 1).Obj()

	require.Error(t, r.createPods(context.Background(), pclq, []int{0}, "h", backend, schedulable{}, ""))
	// With the one slot lost, this create would wait until the context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.createPods(ctx, pclq, []int{0}, "h", backend, schedulable{}, ""))

	created := &corev1.PodList{}
	require.NoError(t, c.List(context.Background(), created))
	assert.Len(t, created.Items, 1)
}
