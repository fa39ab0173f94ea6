package podcliqueset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// A pass whose cache still shows a PodGang as it was before this process's last write sends no
// write from that view (it would be refused as a conflict); a pass that sees the write sends
// nothing either, as the PodGang is up to date.
func TestAPodGangIsNotWrittenFromAViewThatLacksOurLastWrite(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	writes, conflicts := 0, 0
	c := fakeClient(scheme).WithStatusSubresource(&schedulerv1alpha1.PodGang{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				writes++
				err := c.SubResource(sub).Update(ctx, obj, opts...)
				if err != nil {
					conflicts++
				}
				return err
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				writes++
				err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				if err != nil {
					conflicts++
				}
				return err
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				writes++
				err := c.SubResource(sub).Apply(ctx, obj, opts...)
				if err != nil {
					conflicts++
				}
				return err
			},
		}).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	pcs := builders.PodCliqueSet("ns", "inf").Replicas(1).Clique("router", 1).Obj()
	obs := emptyObserved()
	obs.backend = "kube-scheduler"
	ctx := context.Background()
	current := func() *schedulerv1alpha1.PodGang {
		pg := &schedulerv1alpha1.PodGang{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, pg))
		return pg
	}
	// pass plans replica 0's PodGangs from obs as observe would see them, and acts on the plan.
	pass := func() {
		t.Helper()
		r.markStaleGangs(obs)
		p := plan{wantGangs: map[string]bool{}}
		p.podGangs(input{pcs: pcs, obs: obs, now: time.Now()}, 0)
		failed := r.applyChanges(ctx, pcs, obs, p.changes)
		for _, err := range failed {
			require.NoError(t, err)
		}
		require.NoError(t, r.applyGangStatus(ctx, p.gangStatus, p.changes, failed))
	}

	pass()
	require.Zero(t, writes, "creates the PodGang; its pod does not exist yet")
	obs.pods["inf-0-router"] = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "inf-0-router-0", Namespace: "ns"}}}
	before := current()
	obs.gangs["inf-0"] = before
	pass()
	require.Equal(t, 1, writes, "every pod exists: Initialized is written")
	assert.True(t, meta.IsStatusConditionTrue(current().Status.Conditions, schedulerv1alpha1.ConditionInitialized))

	pass() // the cache still shows the PodGang before that write
	assert.Equal(t, 1, writes, "no write from the stale view")

	obs.gangs["inf-0"] = current()
	pass() // the cache caught up
	assert.Equal(t, 1, writes, "nothing left to write")
	assert.Zero(t, conflicts)
}

// TestSameGangSpecAnswersAsSemanticEquality: the direct comparison of pod groups gives the answer
// equality.Semantic gives, on every field a pass may change.
func TestSameGangSpecAnswersAsSemanticEquality(t *testing.T) {
	base := func() schedulerv1alpha1.PodGangSpec {
		return schedulerv1alpha1.PodGangSpec{PriorityClassName: "high", QueueName: "q", PodGroups: []schedulerv1alpha1.PodGroup{
			{Name: "leader", MinReplicas: 1, PodReferences: []schedulerv1alpha1.NamespacedName{{Namespace: "ns", Name: "leader-0"}},
				PodResourceRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			{Name: "worker", MinReplicas: 2, PodReferences: []schedulerv1alpha1.NamespacedName{{Namespace: "ns", Name: "worker-0"}, {Namespace: "ns", Name: "worker-1"}}},
		}}
	}
	required := "rack"
	for _, tc := range []struct {
		name   string
		change func(*schedulerv1alpha1.PodGangSpec)
		same   bool
	}{
		{"an equal copy", func(*schedulerv1alpha1.PodGangSpec) {}, true},
		{"the same quantity spelled otherwise", func(s *schedulerv1alpha1.PodGangSpec) {
			s.PodGroups[0].PodResourceRequests[corev1.ResourceCPU] = resource.MustParse("1000m")
		}, true},
		{"no requests against an empty list", func(s *schedulerv1alpha1.PodGangSpec) { s.PodGroups[1].PodResourceRequests = corev1.ResourceList{} }, true},
		{"another pod referenced", func(s *schedulerv1alpha1.PodGangSpec) { s.PodGroups[1].PodReferences[1].Name = "worker-2" }, false},
		{"references in another order", func(s *schedulerv1alpha1.PodGangSpec) {
			refs := s.PodGroups[1].PodReferences
			refs[0], refs[1] = refs[1], refs[0]
		}, false},
		{"one pod more", func(s *schedulerv1alpha1.PodGangSpec) {
			s.PodGroups[1].PodReferences = append(s.PodGroups[1].PodReferences, schedulerv1alpha1.NamespacedName{Namespace: "ns", Name: "worker-2"})
		}, false},
		{"another minimum", func(s *schedulerv1alpha1.PodGangSpec) { s.PodGroups[1].MinReplicas = 1 }, false},
		{"another request", func(s *schedulerv1alpha1.PodGangSpec) {
			s.PodGroups[0].PodResourceRequests[corev1.ResourceCPU] = resource.MustParse("2")
		}, false},
		{"a request for another resource", func(s *schedulerv1alpha1.PodGangSpec) {
			s.PodGroups[0].PodResourceRequests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1")}
		}, false},
		{"a group's topology constraint", func(s *schedulerv1alpha1.PodGangSpec) {
			s.PodGroups[1].TopologyConstraint = &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: &required}}
		}, false},
		{"a group less", func(s *schedulerv1alpha1.PodGangSpec) { s.PodGroups = s.PodGroups[:1] }, false},
		{"a group renamed", func(s *schedulerv1alpha1.PodGangSpec) { s.PodGroups[1].Name = "workers" }, false},
		{"the gang's topology constraint", func(s *schedulerv1alpha1.PodGangSpec) {
			s.TopologyConstraint = &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: &required}}
		}, false},
		{"another priority class", func(s *schedulerv1alpha1.PodGangSpec) { s.PriorityClassName = "low" }, false},
		{"another queue", func(s *schedulerv1alpha1.PodGangSpec) { s.QueueName = "other" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(&b)
			require.Equal(t, tc.same, equality.Semantic.DeepEqual(a, b), "the case's expectation is equality.Semantic's")
			assert.Equal(t, tc.same, sameGangSpec(&a, &b))
			assert.Equal(t, tc.same, sameGangSpec(&b, &a))
		})
	}
}
