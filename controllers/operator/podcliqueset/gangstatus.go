package podcliqueset

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
)

// groupCount is what the pods of one pod group have reached.
type groupCount struct {
	name                                  string
	min, referenced                       int32
	bound, ready, succeeded, failed       int32
	waitingReason, waitingMessage, waiter string
}

// countGroup counts the referenced, not-terminating pods of a pod group by what they reached.
// The unbound pod with the smallest name that the scheduler explained gives the group its
// waiting reason: pods come from the cache in no fixed order, and another pod's message each
// pass would be a status write each pass.
func countGroup(group schedulerv1alpha1.PodGroup, pods []*corev1.Pod) groupCount {
	n := groupCount{name: group.Name, min: group.MinReplicas, referenced: int32(len(group.PodReferences))}
	referenced := make(map[string]bool, len(group.PodReferences))
	for _, ref := range group.PodReferences {
		referenced[ref.Name] = true
	}
	for _, p := range pods {
		if !referenced[p.Name] || p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			n.succeeded++
		case p.Status.Phase == corev1.PodFailed:
			n.failed++
		case isPodReady(p):
			n.ready++
		}
		if p.Spec.NodeName != "" {
			n.bound++
			continue
		}
		if c := podScheduledCondition(p); c != nil && c.Status == corev1.ConditionFalse && c.Reason != "" && (n.waiter == "" || p.Name < n.waiter) {
			n.waitingReason, n.waitingMessage, n.waiter = c.Reason, c.Message, p.Name
		}
	}
	return n
}

func isPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podScheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podGroupsReady reports whether every pod group of the gang has its minimum of Ready pods: the
// gang's Ready condition as this pass decides it (decideGangStatus). A Coherent step waits for it
// from the pods, not from the condition in the cache, which this pass only writes: read back, it
// would take the next step one pass later.
func podGroupsReady(pg *schedulerv1alpha1.PodGang, pods map[string][]*corev1.Pod) bool {
	for _, group := range pg.Spec.PodGroups {
		if countGroup(group, pods[group.Name]).ready < group.MinReplicas {
			return false
		}
	}
	return true
}

// decideGangStatus is the operator's part of a PodGang's status, decided from the gang's pods
// (pods by PodClique, which names each pod group) at now: Initialized, Scheduled and Ready, the
// times Scheduled and Ready last turned True, and the phase they give. write is false when the
// stored status already says all of it — or when nothing may be said yet: a new gang whose pods
// are still being created gets its first status once they all exist (one write less per gang).
func decideGangStatus(pg *schedulerv1alpha1.PodGang, missing []string, pods map[string][]*corev1.Pod, now metav1.Time) (part podgangstatus.Part, write bool) {
	complete := len(missing) == 0
	if !complete && meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionInitialized) == nil {
		return podgangstatus.Part{}, false
	}
	initialized := metav1.Condition{Type: schedulerv1alpha1.ConditionInitialized, Status: metav1.ConditionTrue,
		Reason: schedulerv1alpha1.ReasonReady, Message: "all pods exist and are referenced"}
	if !complete {
		initialized.Status, initialized.Reason = metav1.ConditionFalse, schedulerv1alpha1.ReasonPodsPending
		initialized.Message = fmt.Sprintf("waiting for pods of %v", missing)
	}

	scheduled := metav1.Condition{Type: schedulerv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue,
		Reason: schedulerv1alpha1.ReasonPlaced, Message: "every pod group has its minimum of pods bound to nodes"}
	ready := metav1.Condition{Type: schedulerv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: schedulerv1alpha1.ReasonReady, Message: "every pod group has its minimum of pods ready"}
	var unplaced, unready []string
	allReadyOrDone, allSucceeded, anyFailed := true, true, false
	waitReason, waitMessage := "", ""
	for _, group := range pg.Spec.PodGroups {
		n := countGroup(group, pods[group.Name])
		if n.bound < n.min {
			// The count a group is short by is left out: it changes with every pod placed, and the
			// status would be written as often (kubectl grove status counts the pods).
			unplaced = append(unplaced, fmt.Sprintf("%s has fewer than %d pods placed", n.name, n.min))
			if waitReason == "" && n.waiter != "" {
				waitReason, waitMessage = n.waitingReason, fmt.Sprintf("pod %s: %s", n.waiter, n.waitingMessage)
			}
		}
		if n.ready < n.min {
			unready = append(unready, fmt.Sprintf("%s has fewer than %d pods ready", n.name, n.min))
		}
		allReadyOrDone = allReadyOrDone && n.ready+n.succeeded >= n.min
		allSucceeded = allSucceeded && n.succeeded == n.referenced
		anyFailed = anyFailed || n.failed > 0
	}
	if len(unplaced) > 0 {
		scheduled.Status, scheduled.Reason = metav1.ConditionFalse, schedulerv1alpha1.ReasonWaitingForPlacement
		scheduled.Message = strings.Join(unplaced, "; ")
		if waitReason != "" {
			scheduled.Reason, scheduled.Message = waitReason, scheduled.Message+"; "+waitMessage
		}
	}
	if len(unready) > 0 {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, schedulerv1alpha1.ReasonPodsNotReady, strings.Join(unready, "; ")
	}

	part = podgangstatus.Part{LastScheduled: pg.Status.LastScheduled, LastReady: pg.Status.LastReady}
	conds := pg.Status.Conditions
	for _, c := range []metav1.Condition{initialized, scheduled, ready} {
		c.ObservedGeneration = pg.Generation
		c.LastTransitionTime = now
		if prev := meta.FindStatusCondition(conds, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		} else if c.Status == metav1.ConditionTrue && c.Type == schedulerv1alpha1.ConditionScheduled {
			part.LastScheduled = &now
		} else if c.Status == metav1.ConditionTrue && c.Type == schedulerv1alpha1.ConditionReady {
			part.LastReady = &now
		}
		part.Conditions = append(part.Conditions, c)
	}

	switch {
	case anyFailed:
		part.Phase = schedulerv1alpha1.PodGangPhaseFailed
	case allSucceeded && len(pg.Spec.PodGroups) > 0 && complete:
		part.Phase = schedulerv1alpha1.PodGangPhaseSucceeded
	case scheduled.Status == metav1.ConditionTrue && allReadyOrDone:
		part.Phase = schedulerv1alpha1.PodGangPhaseRunning
	case scheduled.Status == metav1.ConditionTrue:
		part.Phase = schedulerv1alpha1.PodGangPhaseStarting
	default:
		part.Phase = schedulerv1alpha1.PodGangPhasePending
	}
	return part, !statusHolds(pg.Status, part)
}

// statusHolds reports whether a PodGang's status already says everything part says.
func statusHolds(have schedulerv1alpha1.PodGangStatus, part podgangstatus.Part) bool {
	if have.Phase != part.Phase || !equality.Semantic.DeepEqual(have.LastScheduled, part.LastScheduled) ||
		!equality.Semantic.DeepEqual(have.LastReady, part.LastReady) {
		return false
	}
	for _, c := range part.Conditions {
		prev := meta.FindStatusCondition(have.Conditions, c.Type)
		if prev == nil || prev.Status != c.Status || prev.Reason != c.Reason || prev.Message != c.Message || prev.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

// podScheduledChanged reports whether an update changed a pod's PodScheduled condition (its
// status, or the scheduler's reason or message).
func podScheduledChanged(old, new client.Object) bool {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := new.(*corev1.Pod)
	if !ok1 || !ok2 {
		return false
	}
	a, b := podScheduledCondition(o), podScheduledCondition(n)
	if a == nil || b == nil {
		return (a == nil) != (b == nil)
	}
	return a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message
}
