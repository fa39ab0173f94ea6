package podclique

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
	"github.com/kubegrove/grove/test/builders"
)

// While the operator creates pods, a clique's status summary waits; what another controller acts
// on — a breach beginning or ending, a training clique's success, readiness a dependent clique
// waits for, the clique whole again at the end of a rolling step — is written at once.
func TestAStatusSummaryWaitsForPodCreatesInFlightButWhatOthersActOnDoesNot(t *testing.T) {
	breach := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: status, Reason: reason, ObservedGeneration: 1,
			LastTransitionTime: metav1.Now()}
	}
	wasAvailable := grovev1alpha1.PodCliqueStatus{Replicas: 2, ReadyReplicas: 2, WasAvailable: true,
		Conditions: []metav1.Condition{breach(metav1.ConditionFalse, grovev1alpha1.ReasonSufficientReadyPods)}}
	// healthy (whole: its pods at its template and Ready) but for the scheduled count, which lags
	healthy := grovev1alpha1.PodCliqueStatus{ObservedGeneration: ptr.To[int64](1), Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, ScheduledReplicas: 1,
		WasAvailable: true, Conditions: []metav1.Condition{breach(metav1.ConditionFalse, grovev1alpha1.ReasonSufficientReadyPods)}}
	// a step of a rolling update: its pods at the template, one of them not Ready yet
	stepping := grovev1alpha1.PodCliqueStatus{ObservedGeneration: ptr.To[int64](1), Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, ScheduledReplicas: 2,
		WasAvailable: true, Conditions: []metav1.Condition{breach(metav1.ConditionFalse, grovev1alpha1.ReasonSufficientReadyPods)}}
	breached := grovev1alpha1.PodCliqueStatus{Replicas: 2, ReadyReplicas: 1, WasAvailable: true,
		Conditions: []metav1.Condition{breach(metav1.ConditionTrue, grovev1alpha1.ReasonInsufficientReadyPods)}}
	cases := []struct {
		name      string
		stored    grovev1alpha1.PodCliqueStatus
		phase     corev1.PodPhase
		ready     []bool
		training  bool
		dependent bool
		wantHeld  bool
	}{
		{name: "the first summary of a starting clique", ready: []bool{true, false}, wantHeld: true},
		{name: "a count moves in a healthy clique", stored: healthy, ready: []bool{true, true}, wantHeld: true},
		{name: "a breach begins", stored: wasAvailable, ready: []bool{true, false}},
		{name: "a breach ends", stored: breached, ready: []bool{true, true}},
		{name: "a training clique succeeds", phase: corev1.PodSucceeded, ready: []bool{false, false}, training: true},
		{name: "a clique another starts after", ready: []bool{true, false}, dependent: true},
		{name: "a clique whole again: the end of a rolling step its parent waits for", stored: stepping, ready: []bool{true, true}},
		{name: "a clique starting for the first time reaches its minimum: still a summary", ready: []bool{true, true}, wantHeld: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := gatedClique().Status(tc.stored)
			if tc.training {
				b.Training()
			}
			pclq := b.Obj()
			objs := []client.Object{pclq, podGangOf(time.Now(), 2, "c-0", "c-1")}
			hash := PodTemplateHash(pclq)
			for i, ready := range tc.ready {
				p := podBuilder("ns", "c", i, hash, ready).Label(grovev1alpha1.LabelPodClique, "c").
					OwnerReference(metav1.OwnerReference{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: "PodClique",
						Name: "c", UID: "u", Controller: ptr.To(true)}).
					Spec(*pclq.Spec.PodSpec.DeepCopy()).Phase(tc.phase).
					Condition(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}).Obj()
				objs = append(objs, p)
			}
			if tc.dependent {
				objs = append(objs, builders.PodClique("ns", "d").StartsAfter("c").Obj())
			}
			statusWrites := 0
			c := fakeClient(t).WithObjects(objs...).WithStatusSubresource(pclq).WithInterceptorFuncs(interceptor.Funcs{
				SubResourceUpdate: countStatusWrites(&statusWrites),
			}).Build()
			r := reconcilerFor(t, c)
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)}

			creating := r.holder.Creating() // another clique's pods are being created
			res, err := r.Reconcile(context.Background(), req)
			require.NoError(t, err)
			if !tc.wantHeld {
				assert.Equal(t, 1, statusWrites, "written at once")
				return
			}
			assert.Zero(t, statusWrites, "held while pods are created")
			assert.Equal(t, eventbatch.StatusPass(), res, "and looked at again after the batch period")

			creating()
			_, err = r.Reconcile(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, 1, statusWrites, "written once the creates are done")
		})
	}
}

// A new clique's pods wait for its PodGang's acknowledgement; its first status waits with them,
// but no longer than the grace after which the pods would be created gated anyway.
func TestANewCliquesFirstStatusComesWithItsPods(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name      string
		created   time.Time
		podGang   bool
		wantWrite bool
	}{
		{name: "PodGang not acknowledged yet", created: now, podGang: true},
		{name: "no PodGang yet", created: now},
		{name: "no PodGang within the grace: the status reports it", created: now.Add(-ackGrace - time.Second), wantWrite: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pclq := gatedClique().Created(tc.created).Obj()
			objs := []client.Object{pclq}
			if tc.podGang {
				objs = append(objs, podGangOf(now, 0, "c-0", "c-1"))
			}
			statusWrites := 0
			c := fakeClient(t).WithObjects(objs...).WithStatusSubresource(pclq).WithInterceptorFuncs(interceptor.Funcs{
				SubResourceUpdate: countStatusWrites(&statusWrites),
			}).Build()
			r := reconcilerFor(t, c)

			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})
			require.NoError(t, err)
			if tc.wantWrite {
				assert.Equal(t, 1, statusWrites)
				return
			}
			assert.Zero(t, statusWrites, "the first status waits for the pods")
			assert.Positive(t, res.RequeueAfter, "but not past the grace")
			assert.LessOrEqual(t, res.RequeueAfter, ackGrace)
		})
	}
}
