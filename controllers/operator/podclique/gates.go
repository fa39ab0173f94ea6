package podclique

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/internal/slowstart"
)

// ackGrace is how long a clique waits for its new PodGang's first acknowledgement before
// creating its pods gated anyway: long enough for a live backend-controller under load, so pods
// are born schedulable and need no second write; short enough that a missing backend-controller
// shows as gated pods and a PodCliqueSet condition naming it.
const ackGrace = 5 * time.Second

// waitForPodGang says how long pod creation should wait for the PodGang: until it exists (its
// creation wakes the clique) and, within ackGrace of its creation, until its backend has
// acknowledged it. ok is false while waiting; after is when to look again (0: an event will come).
func waitForPodGang(pg *schedulerv1alpha1.PodGang, now time.Time) (ok bool, after time.Duration) {
	if pg == nil {
		return false, 0
	}
	if meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady) != nil {
		return true, 0
	}
	if left := pg.CreationTimestamp.Add(ackGrace).Sub(now); left > 0 {
		return false, left
	}
	return true, 0
}

// schedulable reports whether a pod of the clique may be scheduled now: its PodGang references
// it and the backend acknowledged that generation (the scheduler's objects for the whole gang
// exist), and, for a backend that places pods one by one, every parent clique is up (startup
// order). A gang-scheduling backend places a gang only once all of it is ungated, so there the
// pods are scheduled with their gang and held at start instead (startup.go).
type schedulable struct {
	pg *schedulerv1alpha1.PodGang
	// baseScheduled is false while a PodGang the pods' gang is placed after is not Scheduled: a
	// scaled gang is placed only after its base gang (upstream Grove's rule, which its GS-8
	// asserts), so capacity goes to the base gang first; under Coherent, an entry's gangs after
	// those of the epochs it depends on.
	baseScheduled bool
	// parents is true when every clique the clique starts after is up (true without any).
	parents bool
	// atStart is true when the clique's pods wait for the parents at start, not at scheduling.
	atStart     bool
	parentNames []string
}

func (s schedulable) pod(name string) bool {
	return s.baseScheduled && (s.parents || s.atStart) && s.pg.MaySchedule(name)
}

func (r *Reconciler) schedulable(ctx context.Context, pclq *grovev1alpha1.PodClique, pg *schedulerv1alpha1.PodGang, gang bool, after []string) (schedulable, error) {
	s := schedulable{pg: pg, parents: true, atStart: waitsAtStart(pclq, gang), parentNames: pclq.Spec.StartsAfter}
	var err error
	if s.baseScheduled, err = r.allScheduled(ctx, pclq.Namespace, after); err != nil {
		return s, err
	}
	if len(pclq.Spec.StartsAfter) == 0 {
		return s, nil
	}
	s.parents, err = r.parentsReady(ctx, pclq)
	return s, err
}

// allScheduled reports whether every PodGang named is Scheduled (true for none): a clique of a
// scaled gang waits for its base gang, a Coherent entry's for the gangs it depends on. Their
// events wake the clique through the PodGang watch.
func (r *Reconciler) allScheduled(ctx context.Context, namespace string, names []string) (bool, error) {
	for _, name := range names {
		pg := &schedulerv1alpha1.PodGang{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pg); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !meta.IsStatusConditionTrue(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled) {
			return false, nil
		}
	}
	return true, nil
}

// liftGates removes the operator's scheduling gate from the clique's gated pods that may be
// scheduled now: pods created before their PodGang was acknowledged, or waiting for a parent.
//
// A gated pod created before the backend assigned its scheduling group (see
// PodGang.status.schedulingGroups) may name another group than the one assigned: the field is
// immutable, and the pod is unscheduled, so it is deleted instead and recreated, ungated, with
// the assigned group.
func (r *Reconciler) liftGates(ctx context.Context, active []*corev1.Pod, s schedulable) error {
	var gated, misgrouped []*corev1.Pod
	for _, p := range active {
		if !hasGate(p) || !s.pod(p.Name) {
			continue
		}
		if want := schedulingGroup(s.pg, p.Labels[grovev1alpha1.LabelPodClique]); want != "" && podSchedulingGroup(p) != want {
			misgrouped = append(misgrouped, p)
			continue
		}
		gated = append(gated, p)
	}
	if err := r.recreateMisgrouped(ctx, misgrouped, s.pg); err != nil {
		return err
	}
	if len(gated) == 0 {
		return nil
	}
	lifted, err := slowstart.Run(ctx, len(gated), func(ctx context.Context, i int) error {
		pod := gated[i]
		patched := pod.DeepCopy()
		patched.Spec.SchedulingGates = withoutGate(pod.Spec.SchedulingGates)
		return client.IgnoreNotFound(r.Client.Patch(ctx, patched, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})))
	})
	log.FromContext(ctx).Info("lifted scheduling gates: the PodGang is acknowledged by its backend and the parents are up", "pods", lifted, "podGang", klog.KObj(s.pg))
	return err
}

// recreateMisgrouped deletes gated pods whose scheduling group is not the one the PodGang
// assigns; the next pass creates them again with it.
func (r *Reconciler) recreateMisgrouped(ctx context.Context, pods []*corev1.Pod, pg *schedulerv1alpha1.PodGang) error {
	for _, p := range pods {
		log.FromContext(ctx).Info("deleting a gated pod to recreate it in its scheduling group: it was created before the backend assigned one",
			"pod", klog.KObj(p), "has", podSchedulingGroup(p), "assigned", schedulingGroup(pg, p.Labels[grovev1alpha1.LabelPodClique]), "podGang", klog.KObj(pg))
		if err := r.Client.Delete(ctx, p, client.Preconditions{UID: ptr.To(p.UID)}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func podSchedulingGroup(p *corev1.Pod) string {
	if p.Spec.SchedulingGroup == nil {
		return ""
	}
	return ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "")
}

// podGangNamed reads a PodGang from the cache; nil when it does not exist (yet).
func (r *Reconciler) podGangNamed(ctx context.Context, namespace, name string) (*schedulerv1alpha1.PodGang, error) {
	pg := &schedulerv1alpha1.PodGang{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pg); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return pg, nil
}

func (r *Reconciler) parentsReady(ctx context.Context, pclq *grovev1alpha1.PodClique) (bool, error) {
	for _, name := range pclq.Spec.StartsAfter {
		parent := &grovev1alpha1.PodClique{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: name}, parent); err != nil {
			if !apierrors.IsNotFound(err) {
				return false, err
			}
			if idle, err := r.scaledAway(ctx, pclq, name); !idle || err != nil {
				return false, err
			}
			continue
		}
		if !parent.UpForDependents(slices.Contains(pclq.Spec.StartsAfterSucceeded, name)) {
			return false, nil
		}
	}
	return true, nil
}

// scaledAway reports whether a parent PodClique that does not exist belongs to a scaling-group
// replica its group no longer has — `kubectl scale` or an autoscaler took the group below it, to
// 0 included: a component scaled away is idle and holds back nobody. A parent of a group replica
// still wanted (being created) is waited for.
func (r *Reconciler) scaledAway(ctx context.Context, pclq *grovev1alpha1.PodClique, parent string) (bool, error) {
	groups := &grovev1alpha1.PodCliqueScalingGroupList{}
	if err := r.Client.List(ctx, groups, client.InNamespace(pclq.Namespace), client.MatchingLabels{
		grovev1alpha1.LabelPartOf:                   pclq.Labels[grovev1alpha1.LabelPartOf],
		grovev1alpha1.LabelPodCliqueSetReplicaIndex: pclq.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex],
	}); err != nil {
		return false, err
	}
	return ScaledAway(groups.Items, parent), nil
}

// ScaledAway reports whether the PodClique named parent belongs to a replica one of groups (the
// scaling groups of the dependent's PodCliqueSet replica) no longer has. It is shared with the
// operator's gauges of gated pods, which must name the same reason the reconciler acts on.
func ScaledAway(groups []grovev1alpha1.PodCliqueScalingGroup, parent string) bool {
	for _, g := range groups {
		rest, ok := strings.CutPrefix(parent, g.Name+"-")
		if !ok {
			continue
		}
		idx, clique, ok := strings.Cut(rest, "-")
		j, err := strconv.Atoi(idx)
		if ok && err == nil && slices.Contains(g.Spec.CliqueNames, clique) && grovev1alpha1.ScalingGroupPodCliqueName(g.Name, j, clique) == parent {
			return j >= int(g.Spec.Replicas)
		}
	}
	return false
}

func minAvailable(pclq *grovev1alpha1.PodClique) int32 { return pclq.MinAvailableOrReplicas() }

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
