package podclique

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/children"
)

// liftGates removes the operator's scheduling gate from the clique's gated pods once both hold:
// the PodGang is Initialized and its backend is ready for the PodGang's current generation (the
// scheduler will see the whole gang), and every parent clique has minAvailable Ready pods (startup
// order; a parent that Succeeded counts as ready: a gated pod cannot start, which kwok honours as much as a kubelet does). A gang-scheduling
// backend places a gang only once all of it is ungated, so there startup order is not waited for:
// it would hold the gang back forever (the PodCliqueSet's SchedulingConstraintsHonored says so).
func (r *Reconciler) liftGates(ctx context.Context, pclq *grovev1alpha1.PodClique, active []*corev1.Pod, gang bool) error {
	var gated []*corev1.Pod
	for _, p := range active {
		if hasGate(p) {
			gated = append(gated, p)
		}
	}
	if len(gated) == 0 {
		return nil
	}
	if ready, err := r.podGangReady(ctx, pclq); err != nil || !ready {
		return err
	}
	if !gang {
		if ready, err := r.parentsReady(ctx, pclq); err != nil || !ready {
			return err
		}
	}
	_, err := slowStart(ctx, len(gated), func(ctx context.Context, i int) error {
		pod := gated[i]
		patched := pod.DeepCopy()
		patched.Spec.SchedulingGates = withoutGate(pod.Spec.SchedulingGates)
		return client.IgnoreNotFound(r.Client.Patch(ctx, patched, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})))
	})
	return err
}

func (r *Reconciler) podGangReady(ctx context.Context, pclq *grovev1alpha1.PodClique) (bool, error) {
	pg := &schedulerv1alpha1.PodGang{}
	key := client.ObjectKey{Namespace: pclq.Namespace, Name: pclq.Labels[grovev1alpha1.LabelPodGang]}
	if err := r.Client.Get(ctx, key, pg); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return PodGangSchedulable(pg), nil
}

// PodGangSchedulable reports whether a PodGang's pods may be ungated: the operator marked it
// Initialized and the backend-controller acknowledged its current generation.
func PodGangSchedulable(pg *schedulerv1alpha1.PodGang) bool {
	if !meta.IsStatusConditionTrue(pg.Status.Conditions, schedulerv1alpha1.ConditionInitialized) {
		return false
	}
	backend := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	return backend != nil && backend.Status == metav1.ConditionTrue && backend.ObservedGeneration == pg.Generation
}

func (r *Reconciler) parentsReady(ctx context.Context, pclq *grovev1alpha1.PodClique) (bool, error) {
	mustSucceed := annotationList(pclq, children.AnnotationStartsAfterSucceeded)
	for _, name := range startsAfter(pclq) {
		parent := &grovev1alpha1.PodClique{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: name}, parent); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		// A Training parent whose pods all exited 0 has done what its dependents waited for,
		// though none of its pods is Ready any more; some dependents wait for exactly that.
		succeeded := meta.IsStatusConditionTrue(parent.Status.Conditions, grovev1alpha1.ConditionSucceeded)
		if slices.Contains(mustSucceed, name) {
			if !succeeded {
				return false, nil
			}
			continue
		}
		if parent.Status.ReadyReplicas < minAvailable(parent) && !succeeded {
			return false, nil
		}
	}
	return true, nil
}

func minAvailable(pclq *grovev1alpha1.PodClique) int32 {
	if pclq.Spec.MinAvailable != nil {
		return *pclq.Spec.MinAvailable
	}
	return pclq.Spec.Replicas
}

func hasGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == grovev1alpha1.SchedulingGatePodGangPendingCreation {
			return true
		}
	}
	return false
}

// withoutGate removes only the operator's gate; gates of others stay.
func withoutGate(gates []corev1.PodSchedulingGate) []corev1.PodSchedulingGate {
	var out []corev1.PodSchedulingGate
	for _, g := range gates {
		if g.Name != grovev1alpha1.SchedulingGatePodGangPendingCreation {
			out = append(out, g)
		}
	}
	return out
}
