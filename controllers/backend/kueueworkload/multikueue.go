package kueueworkload

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
)

// MultiKueue (docs/kueue.md, Multi-cluster). On the manager cluster a dispatched PodCliqueSet's
// gangs have Workloads and nothing else: this reconciler creates each once, from the same
// kueuegang.Workload as on a single cluster plus Kueue's owner annotations, and never changes or
// replaces it (MultiKueue compares the copy on the worker with it; a Finished one stays finished —
// MultiKueue finished it when the worker's did). On a worker the gang's Workload is MultiKueue's
// copy: it is adopted, never created, and finished once the PodCliqueSet's copy has ended, as a
// job integration of Kueue finishes its job's Workload; MultiKueue then copies the last status to
// the manager and removes the worker's objects.

// syncDispatched keeps a manager cluster's gang Workload: created once the gang may be placed
// (the first gang's is placed) and its PodCliqueSet has not ended. It returns the gang the
// Workload waits for, "" when it does not wait.
func (r *Reconciler) syncDispatched(ctx context.Context, pg *schedulerv1alpha1.PodGang, want *kueuev1beta2.Workload) (*kueuev1beta2.Workload, string, error) {
	first := pg.Spec.MultiKueue.PlacedAfter
	placed, firstDone := "", false
	if first != "" {
		var err error
		if placed, firstDone, err = r.placedOn(ctx, pg.Namespace, first); err != nil {
			return nil, "", err
		}
	}
	have := &kueuev1beta2.Workload{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	if err == nil {
		if ref := ownerRef(have, pg.Name); ref == nil || ref.UID != pg.UID {
			return nil, "", fmt.Errorf("the Workload %s/%s exists and belongs to an earlier PodGang of the same name: it is left to the garbage collector", have.Namespace, have.Name)
		}
		if first != "" && placed == "" && !firstDone && !kueuegang.Finished(have) {
			// The first gang is on no worker (evicted, or its worker lost): MultiKueue pins a
			// gang to the worker of a placed sibling only, so a later gang queued again on its
			// own could land elsewhere. It waits for the first gang's placement, as at the start.
			if err := r.Client.Delete(ctx, have, client.Preconditions{UID: ptr.To(have.UID)}); client.IgnoreNotFound(err) != nil {
				return nil, "", err
			}
			log.FromContext(ctx).Info("deleted the gang's Workload: the first gang is on no worker, and this gang is queued again once it is placed, so that all land on one worker",
				"workload", klog.KObj(have), "firstGang", first)
			return nil, first, nil
		}
		return have, "", r.finishEviction(ctx, have)
	}
	if !apierrors.IsNotFound(err) {
		return nil, "", err
	}
	if ended, err := r.ownerEnded(ctx, pg); err != nil || ended {
		// A finished run's Workload gone (Kueue's retention policy, a user): creating it again
		// would run the workload again and overwrite its final status.
		return nil, "", err
	}
	if first != "" && placed == "" {
		return nil, first, nil
	}
	if err := r.Client.Create(ctx, want); err != nil {
		return nil, "", fmt.Errorf("creating Workload %s: %w", want.Name, err)
	}
	log.FromContext(ctx).Info("created the gang's Kueue Workload for MultiKueue to dispatch to a worker cluster", "workload", klog.KObj(want),
		"podSets", len(want.Spec.PodSets), "placedAfter", first)
	return want, "", nil
}

// ownerEnded reports whether the gang's PodCliqueSet has ended, as its status (copied back from
// the worker by MultiKueue) says.
func (r *Reconciler) ownerEnded(ctx context.Context, pg *schedulerv1alpha1.PodGang) (bool, error) {
	owner := metav1.GetControllerOfNoCopy(pg)
	if owner == nil {
		return false, nil
	}
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: owner.Name}, pcs); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return ended(pcs), nil
}

func ended(pcs *grovev1alpha1.PodCliqueSet) bool {
	return pcs.Status.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded || pcs.Status.Phase == grovev1alpha1.PodCliqueSetPhaseFailed
}

// finishEviction ends the eviction of a manager's gang Workload, as a Kueue job integration does
// once its job has stopped: MultiKueue evicts it when the worker's copy is gone or the worker
// evicted it, and nothing of it runs on the manager, so its quota is released at once and Kueue
// queues it again for MultiKueue to dispatch anew. (Without an integration to do this, the
// Workload would keep its quota, evicted, for ever.)
func (r *Reconciler) finishEviction(ctx context.Context, wl *kueuev1beta2.Workload) error {
	evicted := meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadEvicted)
	if evicted == nil || evicted.Status != metav1.ConditionTrue || !kueuegang.QuotaReserved(wl) || kueuegang.Finished(wl) {
		return nil
	}
	released := wl.DeepCopy()
	now := metav1.NewTime(r.clock().Now())
	meta.SetStatusCondition(&released.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionFalse,
		Reason: "Pending", Message: evicted.Message, LastTransitionTime: now, ObservedGeneration: wl.Generation})
	meta.SetStatusCondition(&released.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadAdmitted, Status: metav1.ConditionFalse,
		Reason: "NoReservation", Message: "The workload has no reservation", LastTransitionTime: now, ObservedGeneration: wl.Generation})
	released.Status.Admission = nil
	if err := r.Client.Status().Update(ctx, released); err != nil {
		return err
	}
	*wl = *released
	log.FromContext(ctx).Info("released the quota of the evicted gang's Workload: nothing of it runs here, and MultiKueue dispatches it again",
		"workload", klog.KObj(wl), "reason", evicted.Reason, "message", evicted.Message)
	return nil
}

// placedOn is the worker cluster the named gang's Workload was placed on ("" while it is on
// none) and whether that Workload finished.
func (r *Reconciler) placedOn(ctx context.Context, namespace, name string) (string, bool, error) {
	wl := &kueuev1beta2.Workload{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, wl); err != nil {
		return "", false, client.IgnoreNotFound(err)
	}
	return ptr.Deref(wl.Status.ClusterName, ""), kueuegang.Finished(wl), nil
}

// dispatched is a manager gang's Dispatched condition. before is the gang's condition as last
// written: a gang that ran on a worker and is on none now says which one it left, and why.
func dispatched(pg *schedulerv1alpha1.PodGang, wl *kueuev1beta2.Workload, waitsFor string) metav1.Condition {
	cond := metav1.Condition{Type: schedulerv1alpha1.ConditionDispatched, Status: metav1.ConditionFalse, ObservedGeneration: pg.Generation}
	before := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionDispatched)
	switch {
	case waitsFor != "":
		cond.Reason = schedulerv1alpha1.ReasonAwaitingFirstGang
		cond.Message = fmt.Sprintf("the gang's Workload is created once gang %s is placed on a worker cluster: MultiKueue then sends this gang to the same worker", waitsFor)
	case wl != nil && kueuegang.Finished(wl) && before != nil:
		return *before // it says where it ran
	case wl != nil && ptr.Deref(wl.Status.ClusterName, "") != "":
		cond.Status, cond.Reason = metav1.ConditionTrue, schedulerv1alpha1.ReasonRunsOnWorker
		cond.Message = schedulerv1alpha1.RunsOnWorkerMessage(*wl.Status.ClusterName)
	case pg.DispatchedCluster() != "":
		cond.Reason = schedulerv1alpha1.ReasonLeftWorker
		cond.Message = fmt.Sprintf("left cluster %s: %s; it waits to be placed on a worker again", pg.DispatchedCluster(), whyLeft(wl))
	case before != nil && before.Reason == schedulerv1alpha1.ReasonLeftWorker:
		return *before // it says where it ran until it is placed again
	default:
		cond.Reason = schedulerv1alpha1.ReasonAwaitingWorker
		cond.Message = "waiting for MultiKueue to place the gang on a worker cluster"
		if m := checkMessage(wl); m != "" {
			cond.Message += ": " + m
		}
	}
	return cond
}

// whyLeft is Kueue's reason for a Workload that lost its worker: its eviction, else its
// MultiKueue admission check's message.
func whyLeft(wl *kueuev1beta2.Workload) string {
	if wl == nil {
		return "its Workload is gone"
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		return fmt.Sprintf("Kueue evicted it (%s: %s)", c.Reason, c.Message)
	}
	if m := checkMessage(wl); m != "" {
		return m
	}
	return "MultiKueue took it off the worker"
}

// checkMessage is the message of an admission check of the Workload, with its state ("" when none
// says anything): a dispatched gang's ClusterQueue has MultiKueue's check, and others' messages
// (a provisioning check's) say why it waits as well.
func checkMessage(wl *kueuev1beta2.Workload) string {
	if wl == nil {
		return ""
	}
	for _, ac := range wl.Status.AdmissionChecks {
		if ac.Message != "" {
			return fmt.Sprintf("%s: %s (%s)", ac.Name, ac.Message, ac.State)
		}
	}
	return ""
}

// syncCopied adopts, on a worker cluster, the Workload MultiKueue copied for the gang, and
// finishes it once the PodCliqueSet's copy has ended. It returns nil while there is none.
func (r *Reconciler) syncCopied(ctx context.Context, pg *schedulerv1alpha1.PodGang) (*kueuev1beta2.Workload, error) {
	have := &kueuev1beta2.Workload{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: pg.Name}, have); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if _, copied := have.Labels[kueuev1beta2.MultiKueueOriginLabel]; !copied {
		return nil, fmt.Errorf("the Workload %s/%s was not copied here by MultiKueue: the gang of a PodCliqueSet MultiKueue dispatched is admitted only under MultiKueue's copy; delete it", have.Namespace, have.Name)
	}
	if kueuegang.Finished(have) {
		return have, nil
	}
	owner := metav1.GetControllerOfNoCopy(pg)
	if owner == nil {
		return have, nil
	}
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: owner.Name}, pcs); err != nil {
		return have, client.IgnoreNotFound(err)
	}
	reason := ""
	switch {
	case !ended(pcs):
		return have, nil
	case pcs.Status.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded:
		reason = kueuev1beta2.WorkloadFinishedReasonSucceeded
	default:
		reason = kueuev1beta2.WorkloadFinishedReasonFailed
	}
	finished := have.DeepCopy()
	meta.SetStatusCondition(&finished.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadFinished, Status: metav1.ConditionTrue, Reason: reason,
		Message: fmt.Sprintf("PodCliqueSet %s is %s", pcs.Name, pcs.Status.Phase), ObservedGeneration: have.Generation})
	if err := r.Client.Status().Update(ctx, finished); err != nil {
		return have, err
	}
	log.FromContext(ctx).Info("finished the gang's Workload: the PodCliqueSet MultiKueue dispatched here has ended, and MultiKueue copies its last status to the manager",
		"workload", klog.KObj(have), "phase", pcs.Status.Phase)
	return finished, nil
}

// copiedWorkloadPending is a worker gang's QueueAdmitted while MultiKueue's copy of its Workload
// is not here.
func copiedWorkloadPending(pg *schedulerv1alpha1.PodGang) metav1.Condition {
	return metav1.Condition{Type: schedulerv1alpha1.ConditionQueueAdmitted, Status: metav1.ConditionFalse, ObservedGeneration: pg.Generation,
		Reason:  schedulerv1alpha1.ReasonAwaitingMultiKueueWorkload,
		Message: fmt.Sprintf("waiting for the Workload %s MultiKueue copies from the manager cluster: the PodCliqueSet was dispatched here, and its gangs are admitted only under the manager's Workloads", pg.Name)}
}

// tellMoves emits an event on the gang's PodCliqueSet when its Dispatched condition changed
// between reasons (placed, left a worker), after the condition was written.
func (r *Reconciler) tellMoves(pg *schedulerv1alpha1.PodGang, before *metav1.Condition, now metav1.Condition) {
	if r.Recorder == nil || (before != nil && before.Reason == now.Reason && before.Message == now.Message) {
		return
	}
	owner := metav1.GetControllerOfNoCopy(pg)
	if owner == nil || (now.Reason != schedulerv1alpha1.ReasonRunsOnWorker && now.Reason != schedulerv1alpha1.ReasonLeftWorker) {
		return
	}
	pcs := &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: pg.Namespace, Name: owner.Name, UID: owner.UID}}
	if before != nil && before.Reason == schedulerv1alpha1.ReasonRunsOnWorker && now.Reason == schedulerv1alpha1.ReasonRunsOnWorker {
		// Placed elsewhere between two looks: the move is told too.
		from := strings.TrimPrefix(before.Message, schedulerv1alpha1.RunsOnWorkerMessage(""))
		r.Recorder.Eventf(pcs, pg, corev1.EventTypeWarning, schedulerv1alpha1.ReasonLeftWorker, "Dispatch", "gang %s: left cluster %s; %s", pg.Name, from, now.Message)
	}
	kind := corev1.EventTypeNormal
	if now.Reason == schedulerv1alpha1.ReasonLeftWorker {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(pcs, pg, kind, now.Reason, "Dispatch", "gang %s: %s", pg.Name, now.Message)
}

// gangsOfPodCliqueSet maps a PodCliqueSet to its gangs: a worker's copy that ended finishes
// their Workloads, and on the manager a gang's placement lets the others' Workloads be created.
func (r *Reconciler) gangsOfPodCliqueSet(ctx context.Context, namespace, name string) []reconcile.Request {
	list := &schedulerv1alpha1.PodGangList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{grovev1alpha1.LabelPartOf: name, grovev1alpha1.LabelSchedulerName: r.Backend}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Spec.MultiKueue != nil {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// dispatchedSiblings maps a manager's gang Workload to the other gangs of its PodCliqueSet.
func (r *Reconciler) dispatchedSiblings(ctx context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetAnnotations()[kueuegang.AnnotationJobOwnerName]
	if name == "" || obj.GetAnnotations()[kueuegang.AnnotationJobOwnerGVK] != kueuegang.PodCliqueSetGVK.String() {
		return nil
	}
	return slices.DeleteFunc(r.gangsOfPodCliqueSet(ctx, obj.GetNamespace(), name), func(req reconcile.Request) bool { return req.Name == obj.GetName() })
}

// copiedForGang maps a worker's Workload copied by MultiKueue, which has no owner, to the gang
// it is named after: a copy arriving after its gang, or admitted, wakes the gang.
func copiedForGang(_ context.Context, obj client.Object) []reconcile.Request {
	gang := obj.GetLabels()[grovev1alpha1.LabelPodGang]
	if gang == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: gang}}}
}

// copiedTopologyNote says, on a worker, which of the gang's pack constraints Kueue does not honour:
// the Workload MultiKueue copied carries the topology requests the manager's queue gave it, and
// none when the manager's ClusterQueue has no flavor with a topology ("" when all are honoured).
func copiedTopologyNote(pg *schedulerv1alpha1.PodGang, wl *kueuev1beta2.Workload) string {
	requests, note := kueuegang.TopologyRequests(pg)
	if len(requests) == 0 {
		return ""
	}
	if slices.ContainsFunc(wl.Spec.PodSets, func(ps kueuev1beta2.PodSet) bool { return ps.TopologyRequest != nil }) {
		return note
	}
	return "its pack constraints are not honoured: the Workload MultiKueue copied from the manager cluster carries no topology requests (the manager's ClusterQueue has no flavor with a topology)"
}

// reportOffWorker says on a dispatched PodCliqueSet, while its first gang runs on no worker, where
// it is and why: not placed yet, or which worker it left and Kueue's reason. MultiKueue copies a
// worker's whole status over the PodCliqueSet only while a worker runs it, and then the worker's
// own Dispatched condition names that worker; between placements nothing else would write it,
// and the status would still name the worker it left. A PodCliqueSet that ended keeps its final
// status.
func (r *Reconciler) reportOffWorker(ctx context.Context, pg *schedulerv1alpha1.PodGang, placement metav1.Condition) error {
	owner := metav1.GetControllerOfNoCopy(pg)
	if pg.Spec.MultiKueue.PlacedAfter != "" || placement.Status == metav1.ConditionTrue || owner == nil {
		return nil
	}
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: owner.Name}, pcs); err != nil {
		return client.IgnoreNotFound(err)
	}
	want := metav1.Condition{Type: grovev1alpha1.ConditionDispatched, Status: metav1.ConditionFalse, Reason: placement.Reason,
		Message: fmt.Sprintf("gang %s %s", pg.Name, placement.Message), ObservedGeneration: pcs.Generation}
	if placement.Reason == schedulerv1alpha1.ReasonAwaitingWorker {
		want.Message = placement.Message
	}
	if c := meta.FindStatusCondition(pcs.Status.Conditions, want.Type); ended(pcs) || pcs.UID != owner.UID ||
		(c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message) {
		return nil
	}
	patch := client.MergeFromWithOptions(pcs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	meta.SetStatusCondition(&pcs.Status.Conditions, want)
	if err := r.Client.Status().Patch(ctx, pcs, patch); err != nil {
		return err
	}
	log.FromContext(ctx).Info("the dispatched PodCliqueSet runs on no worker: said so in its status until a worker's is copied back",
		"podCliqueSet", klog.KObj(pcs), "reason", want.Reason, "message", want.Message)
	return nil
}
