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

// syncDispatched keeps a manager cluster's gang Workload: created once the gang may be placed.
func (r *Reconciler) syncDispatched(ctx context.Context, pg *schedulerv1alpha1.PodGang, want *kueuev1beta2.Workload) (*kueuev1beta2.Workload, string, error) {
	have := &kueuev1beta2.Workload{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have)
	if err == nil {
		if ref := ownerRef(have, pg.Name); ref == nil || ref.UID != pg.UID {
			return nil, "", fmt.Errorf("the Workload %s/%s exists and does not belong to this PodGang: nothing is adopted; delete it or rename the PodCliqueSet", have.Namespace, have.Name)
		}
		return have, "", r.finishEviction(ctx, have)
	}
	if !apierrors.IsNotFound(err) {
		return nil, "", err
	}
	if first := pg.Spec.MultiKueue.PlacedAfter; first != "" {
		placed, err := r.placedOn(ctx, pg.Namespace, first)
		if err != nil {
			return nil, "", err
		}
		if placed == "" {
			return nil, first, nil
		}
	}
	if err := r.Client.Create(ctx, want); err != nil {
		return nil, "", fmt.Errorf("creating Workload %s: %w", want.Name, err)
	}
	log.FromContext(ctx).Info("created the gang's Kueue Workload for MultiKueue to dispatch to a worker cluster", "workload", klog.KObj(want),
		"podSets", len(want.Spec.PodSets), "placedAfter", pg.Spec.MultiKueue.PlacedAfter)
	return want, "", nil
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

// placedOn is the worker cluster the named gang's Workload was placed on, "" while it is on none.
func (r *Reconciler) placedOn(ctx context.Context, namespace, name string) (string, error) {
	wl := &kueuev1beta2.Workload{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, wl); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return ptr.Deref(wl.Status.ClusterName, ""), nil
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

// checkMessage is the message of the Workload's MultiKueue admission check ("" when none).
func checkMessage(wl *kueuev1beta2.Workload) string {
	if wl == nil {
		return ""
	}
	for _, ac := range wl.Status.AdmissionChecks {
		if ac.Message != "" {
			return fmt.Sprintf("%s (%s)", ac.Message, ac.State)
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
	switch pcs.Status.Phase {
	case grovev1alpha1.PodCliqueSetPhaseSucceeded:
		reason = kueuev1beta2.WorkloadFinishedReasonSucceeded
	case grovev1alpha1.PodCliqueSetPhaseFailed:
		reason = kueuev1beta2.WorkloadFinishedReasonFailed
	default:
		return have, nil
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
