// Package kueue maps a queued PodGang onto Kueue (docs/kueue.md): the prebuilt Workload that
// Kueue admits gang by gang, the labels, annotations and gate its pods carry so Kueue's pod-group
// integration counts them against that Workload, and Kueue's decision read back from the
// Workload's conditions. It follows Kueue's own LeaderWorkerSet integration: one prebuilt group
// Workload per gang, podSets sorted by name, pods naming the Workload as their group. The
// functions are pure; the backend-controller (controllers/backend/kueueworkload) writes the
// Workload, the grove-operator prepares the pods, kubectl grove renders both.
package kueue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// Kueue's pod-group integration keys (sigs.k8s.io/kueue pkg/controller/jobs/pod/constants and
// pkg/controller/constants, not imported: they live in Kueue's controller packages).
const (
	LabelQueueName               = grovev1alpha1.LabelKueueQueueName
	LabelPodGroupName            = "kueue.x-k8s.io/pod-group-name"
	LabelPrebuiltWorkloadName    = "kueue.x-k8s.io/prebuilt-workload-name"
	AnnotationPodGroupTotalCount = "kueue.x-k8s.io/pod-group-total-count"
	AnnotationRoleHash           = "kueue.x-k8s.io/role-hash"
	AnnotationPodGroupServing    = "kueue.x-k8s.io/pod-group-serving"
	AnnotationIsGroupWorkload    = "kueue.x-k8s.io/is-group-workload"
	// SchedulingGateAdmission holds a pod until Kueue admits its group. The operator adds it
	// itself, so a pod that Kueue's webhook missed still waits (fails closed).
	SchedulingGateAdmission = "kueue.x-k8s.io/admission"
	// PodFinalizer is the finalizer Kueue's webhook puts on pods it manages. For prebuilt group
	// Workloads Kueue never removes it from a pod that is replaced under the same name, so the
	// operator removes it from its own pods once they are terminated or being deleted (as Kueue
	// does for LeaderWorkerSet pods).
	PodFinalizer = "kueue.x-k8s.io/managed"
	// PodConditionTerminationTarget is the condition Kueue sets on a pod it stops because its
	// Workload was evicted, before deleting it.
	PodConditionTerminationTarget corev1.PodConditionType = "TerminationTarget"
	// MaxPodSets is Kueue's limit of podSets per Workload: a gang has at most this many pod groups.
	MaxPodSets = 8
)

// WorkloadGVK is the kind the backend-controller keeps per queued gang.
var WorkloadGVK = kueuev1beta2.GroupVersion.WithKind("Workload")

// Workload is the prebuilt Workload of a queued PodGang: the PodGang's name, its queue, one
// podSet per pod group sorted by name (Kueue matches the pods' role hashes to them in that order)
// counting every pod the gang references, each pod asking for the group's requests, and the
// gang's priority. Controlled by nothing and owned by the PodGang (Kueue ignores a prebuilt
// Workload with a controller of another kind), so it goes with the gang. priority is the value of
// the gang's PriorityClass, nil when it names none.
func Workload(pg *schedulerv1alpha1.PodGang, priority *int32) *kueuev1beta2.Workload {
	groups := slices.Clone(pg.Spec.PodGroups)
	slices.SortFunc(groups, func(a, b schedulerv1alpha1.PodGroup) int { return strings.Compare(a.Name, b.Name) })
	podSets := make([]kueuev1beta2.PodSet, 0, len(groups))
	for _, g := range groups {
		podSets = append(podSets, kueuev1beta2.PodSet{
			Name:  kueuev1beta2.PodSetReference(g.Name),
			Count: int32(len(g.PodReferences)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways,
				Containers: []corev1.Container{{
					Name: "member", Image: "none",
					Resources: corev1.ResourceRequirements{Requests: g.PodResourceRequests.DeepCopy()},
				}},
			}},
		})
	}
	wl := &kueuev1beta2.Workload{
		TypeMeta: metav1.TypeMeta{APIVersion: WorkloadGVK.GroupVersion().String(), Kind: WorkloadGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name: pg.Name, Namespace: pg.Namespace,
			Labels:      map[string]string{grovev1alpha1.LabelPodGang: pg.Name},
			Annotations: map[string]string{AnnotationIsGroupWorkload: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: schedulerv1alpha1.GroupVersion.String(), Kind: "PodGang",
				Name: pg.Name, UID: pg.UID, BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: kueuev1beta2.WorkloadSpec{
			PodSets:   podSets,
			QueueName: kueuev1beta2.LocalQueueName(pg.Spec.QueueName),
		},
	}
	if pg.Spec.PriorityClassName != "" && priority != nil {
		wl.Spec.PriorityClassRef = &kueuev1beta2.PriorityClassRef{
			Group: kueuev1beta2.PodPriorityClassGroup, Kind: kueuev1beta2.PodPriorityClassKind, Name: pg.Spec.PriorityClassName,
		}
		wl.Spec.Priority = ptr.To(*priority)
	}
	return wl
}

// PodSetsMatch reports whether a stored Workload's podSets are those wanted: same names, counts
// and requests (Kueue defaults the rest of a template, which is not compared).
func PodSetsMatch(have, want []kueuev1beta2.PodSet) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if have[i].Name != want[i].Name || have[i].Count != want[i].Count || len(have[i].Template.Spec.Containers) != 1 ||
			!equality.Semantic.DeepEqual(have[i].Template.Spec.Containers[0].Resources.Requests, want[i].Template.Spec.Containers[0].Resources.Requests) {
			return false
		}
	}
	return true
}

// QuotaReserved reports whether Kueue holds quota for the Workload: while it does, Kueue refuses
// any change of its podSets.
func QuotaReserved(wl *kueuev1beta2.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved)
}

// Finished reports whether Kueue finished the Workload (for a prebuilt group Workload that means
// the pods no longer match it): it is never admitted again and has to be replaced.
func Finished(wl *kueuev1beta2.Workload) bool {
	return meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadFinished)
}

// PreparePod labels and gates a pod of a queued PodGang for Kueue's pod-group integration: its
// queue, the gang's Workload as its group and prebuilt Workload, the group's total pod count,
// its pod group as role (the podSet it counts against), serving (Kueue does not finish the
// group when pods exit: the operator replaces them) and Kueue's admission gate. A pod of a gang
// that is not queued on its own (not queued, or admitted through its PodCliqueSet's owner) is
// left alone.
func PreparePod(pod *corev1.Pod, pg *schedulerv1alpha1.PodGang) {
	if !pg.QueuedOnItsOwn() {
		return
	}
	role := ""
	total := 0
	for _, g := range pg.Spec.PodGroups {
		total += len(g.PodReferences)
		if g.Name == pod.Labels[grovev1alpha1.LabelPodClique] {
			role = g.Name
		}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[LabelQueueName] = pg.Spec.QueueName
	pod.Labels[LabelPodGroupName] = pg.Name
	pod.Labels[LabelPrebuiltWorkloadName] = pg.Name
	pod.Annotations[AnnotationPodGroupTotalCount] = strconv.Itoa(total)
	pod.Annotations[AnnotationRoleHash] = role
	pod.Annotations[AnnotationPodGroupServing] = "true"
	if !slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == SchedulingGateAdmission }) {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: SchedulingGateAdmission})
	}
}

// EvictedByKueue reports whether Kueue stopped the pod because its Workload was evicted.
func EvictedByKueue(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == PodConditionTerminationTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Admission reads Kueue's decision on a gang's Workload as the PodGang's QueueAdmitted condition.
// queueExists says whether the LocalQueue spec.queueName names exists. wl is nil while the
// Workload is not created yet.
func Admission(pg *schedulerv1alpha1.PodGang, wl *kueuev1beta2.Workload, queueExists bool) metav1.Condition {
	cond := metav1.Condition{Type: schedulerv1alpha1.ConditionQueueAdmitted, Status: metav1.ConditionFalse, ObservedGeneration: pg.Generation}
	queue := pg.Spec.QueueName
	switch {
	case !queueExists:
		cond.Reason = schedulerv1alpha1.ReasonLocalQueueNotFound
		cond.Message = fmt.Sprintf("LocalQueue %s/%s does not exist: create it, or label the PodCliqueSet with an existing queue", pg.Namespace, queue)
	case wl == nil:
		cond.Reason = schedulerv1alpha1.ReasonQueuePending
		cond.Message = fmt.Sprintf("creating the gang's Workload in LocalQueue %s", queue)
	case meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadAdmitted):
		cond.Status, cond.Reason = metav1.ConditionTrue, schedulerv1alpha1.ReasonQueueAdmitted
		cq := ""
		if wl.Status.Admission != nil {
			cq = string(wl.Status.Admission.ClusterQueue)
		}
		cond.Message = fmt.Sprintf("Kueue admitted the gang in LocalQueue %s (ClusterQueue %s)", queue, cq)
	case meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadEvicted):
		c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadEvicted)
		cond.Reason = schedulerv1alpha1.ReasonQueueEvicted
		cond.Message = fmt.Sprintf("Kueue evicted the gang from LocalQueue %s (%s: %s); it waits to be admitted again", queue, c.Reason, c.Message)
	default:
		cond.Reason = schedulerv1alpha1.ReasonQueuePending
		cond.Message = fmt.Sprintf("waiting in LocalQueue %s for quota", queue)
		if c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
			cond.Message += ": " + c.Message
			if c.Reason == kueuev1beta2.WorkloadInadmissible || strings.Contains(c.Message, "maximum capacity") {
				// Kueue's own words for a request that no amount of waiting satisfies.
				cond.Reason = schedulerv1alpha1.ReasonQueueInadmissible
				cond.Message = fmt.Sprintf("Kueue cannot admit the gang in LocalQueue %s: %s", queue, c.Message)
			}
		}
	}
	return cond
}
