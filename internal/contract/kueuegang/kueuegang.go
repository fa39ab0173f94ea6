// Package kueuegang maps a queued PodGang onto Kueue (docs/kueue.md): the prebuilt Workload that
// Kueue admits gang by gang, the labels, annotations and gate its pods carry so Kueue's pod-group
// integration counts them against that Workload, and Kueue's decision read back from the
// Workload's conditions. It follows Kueue's own LeaderWorkerSet integration: one prebuilt group
// Workload per gang, podSets sorted by name, pods naming the Workload as their group. The
// functions are pure and log nothing: the backend-controller (controllers/backend/kueueworkload)
// writes the Workload and logs each write it makes with its reason (created, updated, shrunk in
// place, replaced), the grove-operator prepares the pods, kubectl grove renders both.
package kueuegang

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
	// AnnotationRequiredTopology and AnnotationPreferredTopology are Kueue's topology requests on
	// a pod template (kueuev1beta2.PodSetRequiredTopologyAnnotation and its preferred twin).
	// Kueue's topology ungater lifts its topology gate only from pods that carry one (it watches
	// no other pod), so a pod of a pod group with a pack constraint carries its level.
	AnnotationRequiredTopology  = kueuev1beta2.PodSetRequiredTopologyAnnotation
	AnnotationPreferredTopology = kueuev1beta2.PodSetPreferredTopologyAnnotation
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
	// AnnotationJobOwnerGVK and AnnotationJobOwnerName name the object a Workload of several
	// belongs to (Kueue's own annotations): MultiKueue finds its adapter through them.
	AnnotationJobOwnerGVK  = "kueue.x-k8s.io/job-owner-gvk"
	AnnotationJobOwnerName = "kueue.x-k8s.io/job-owner-name"
	// MaxPodSets is Kueue's limit of podSets per Workload: a gang has at most this many pod groups.
	MaxPodSets = 8
)

// WorkloadGVK is the kind the backend-controller keeps per queued gang.
var WorkloadGVK = kueuev1beta2.SchemeGroupVersion.WithKind("Workload")

// Workload is the prebuilt Workload of a queued PodGang: the PodGang's name, its queue, one
// podSet per pod group sorted by name (Kueue matches the pods' role hashes to them in that order)
// counting every pod the gang references, each pod asking for the group's requests, and the
// gang's priority. Controlled by nothing and owned by the PodGang (Kueue ignores a prebuilt
// Workload with a controller of another kind), so it goes with the gang. priority is the value of
// the gang's PriorityClass, nil when it names none. With tas (the queue's ClusterQueue has a
// flavor with a topology) each podSet carries its pack constraint as a topology request
// (TopologyRequests).
func Workload(pg *schedulerv1alpha1.PodGang, priority *int32, tas bool) *kueuev1beta2.Workload {
	groups := slices.Clone(pg.Spec.PodGroups)
	slices.SortFunc(groups, func(a, b schedulerv1alpha1.PodGroup) int { return strings.Compare(a.Name, b.Name) })
	var requests map[string]*kueuev1beta2.PodSetTopologyRequest
	if tas {
		requests, _ = TopologyRequests(pg)
	}
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
			TopologyRequest: requests[g.Name],
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
	if pg.MultiKueueRoleOf() == schedulerv1alpha1.MultiKueueManager {
		dispatchedBy(wl, pg)
	}
	if pg.Spec.PriorityClassName != "" && priority != nil {
		wl.Spec.PriorityClassRef = &kueuev1beta2.PriorityClassRef{
			Group: kueuev1beta2.PodPriorityClassGroup, Kind: kueuev1beta2.PodPriorityClassKind, Name: pg.Spec.PriorityClassName,
		}
		wl.Spec.Priority = ptr.To(*priority)
	}
	return wl
}

// PodCliqueSetGVK is the kind MultiKueue dispatches for a gang's Workload on the manager cluster.
var PodCliqueSetGVK = grovev1alpha1.GroupVersion.WithKind("PodCliqueSet")

// dispatchedBy makes a manager cluster's gang Workload one of its PodCliqueSet's component
// Workloads, as Kueue's LeaderWorkerSet integration makes a group's: Kueue's owner annotations,
// which lead MultiKueue to its adapter for PodCliqueSets (multiKueue.externalFrameworks), and an
// owner reference to the PodCliqueSet (not as controller), through which MultiKueue sends the
// PodCliqueSet's other Workloads to the worker one of them was placed on.
func dispatchedBy(wl *kueuev1beta2.Workload, pg *schedulerv1alpha1.PodGang) {
	owner := metav1.GetControllerOfNoCopy(pg)
	if owner == nil || owner.Kind != PodCliqueSetGVK.Kind {
		return
	}
	wl.Annotations[AnnotationJobOwnerGVK] = PodCliqueSetGVK.String()
	wl.Annotations[AnnotationJobOwnerName] = owner.Name
	wl.OwnerReferences = append(wl.OwnerReferences, metav1.OwnerReference{
		APIVersion: PodCliqueSetGVK.GroupVersion().String(), Kind: PodCliqueSetGVK.Kind, Name: owner.Name, UID: owner.UID,
	})
}

// TopologyRequests maps a gang's pack constraints onto Kueue's topology-aware scheduling, one
// request per pod group that has a constraint: the group's own, else that of the constraint group
// it belongs to, else the gang's (required and preferred node-label keys, which Kueue's Topology
// levels name too). Pods are ranked by their stable index. Kueue co-locates podSets only in
// pairs where one podSet has a single pod (its LeaderWorkerSet rule): such a pair sharing a
// constraint gets one podSetGroupName and no ranks. Any other constraint shared by several pod
// groups is applied to each of them on its own, and note says so, naming the constraint, for the
// gang's QueueAdmitted condition ("" when Kueue honours every constraint as written).
func TopologyRequests(pg *schedulerv1alpha1.PodGang) (map[string]*kueuev1beta2.PodSetTopologyRequest, string) {
	type shared struct {
		name       string
		constraint *schedulerv1alpha1.TopologyPackConstraint
		members    []schedulerv1alpha1.PodGroup
	}
	pack := func(c *schedulerv1alpha1.TopologyConstraint) *schedulerv1alpha1.TopologyPackConstraint {
		if c == nil || c.PackConstraint == nil || (c.PackConstraint.Required == nil && c.PackConstraint.Preferred == nil) {
			return nil
		}
		return c.PackConstraint
	}
	out := map[string]*kueuev1beta2.PodSetTopologyRequest{}
	var groups []*shared
	byName := map[string]*shared{}
	for _, g := range pg.Spec.PodGroups {
		if c := pack(g.TopologyConstraint); c != nil {
			out[g.Name] = request(c)
			continue
		}
		var from *shared
		for _, cfg := range pg.Spec.TopologyConstraintGroupConfigs {
			if c := pack(cfg.TopologyConstraint); c != nil && slices.Contains(cfg.PodGroupNames, g.Name) {
				from = byName["config/"+cfg.Name]
				if from == nil {
					from = &shared{name: cfg.Name, constraint: c}
					byName["config/"+cfg.Name] = from
					groups = append(groups, from)
				}
				break
			}
		}
		if from == nil {
			c := pack(pg.Spec.TopologyConstraint)
			if c == nil {
				continue
			}
			from = byName["gang"]
			if from == nil {
				from = &shared{name: pg.Name, constraint: c}
				byName["gang"] = from
				groups = append(groups, from)
			}
		}
		from.members = append(from.members, g)
	}
	var apart []string
	for _, sh := range groups {
		pairable := len(sh.members) == 2 && (len(sh.members[0].PodReferences) == 1 || len(sh.members[1].PodReferences) == 1)
		for _, m := range sh.members {
			r := request(sh.constraint)
			if pairable {
				// Kueue ranks a pair's workers after its one leader (from 1, as LeaderWorkerSet
				// numbers them); a PodClique numbers its pods from 0, so the pair is placed
				// without ranks.
				r.PodSetGroupName, r.PodIndexLabel = ptr.To(sh.name), nil
			}
			out[m.Name] = r
		}
		if len(sh.members) > 1 && !pairable {
			apart = append(apart, fmt.Sprintf("%s (%d pod groups)", sh.name, len(sh.members)))
		}
	}
	note := ""
	if len(apart) > 0 {
		note = fmt.Sprintf("Kueue packs each pod group of %s within the topology on its own, not together: it co-locates only a pod group of one pod with one other", strings.Join(apart, ", "))
	}
	return out, note
}

// request is one pod group's topology request, its own copy of the constraint's levels (the
// PodGang comes from the cache).
func request(c *schedulerv1alpha1.TopologyPackConstraint) *kueuev1beta2.PodSetTopologyRequest {
	r := &kueuev1beta2.PodSetTopologyRequest{PodIndexLabel: ptr.To(grovev1alpha1.LabelPodIndex)}
	if c.Required != nil {
		r.Required = ptr.To(*c.Required)
	}
	if c.Preferred != nil {
		r.Preferred = ptr.To(*c.Preferred)
	}
	return r
}

// PodSetsMatch reports whether a stored Workload's podSets are those wanted: the same size
// (SameSize) and the same topology requests (Kueue defaults the rest of a template, which is not
// compared).
func PodSetsMatch(have, want []kueuev1beta2.PodSet) bool {
	if !SameSize(have, want) {
		return false
	}
	for i := range have {
		if !equality.Semantic.DeepEqual(have[i].TopologyRequest, want[i].TopologyRequest) {
			return false
		}
	}
	return true
}

// SameSize reports whether two Workloads' podSets reserve the same quota: same names, counts and
// requests, whatever their topology requests.
func SameSize(have, want []kueuev1beta2.PodSet) bool {
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

// ShrunkInPlace is what an admitted Workload's podSets become when its gang lost pods or whole pod
// groups (a Coherent step takes a scaling-group replica out of an older gang; a clique scaled in):
// the same podSets, as Kueue requires of a Workload holding quota, each counting what the gang
// now wants (0 for a pod group it no longer has) plus leaving[name], the pods of that role the
// gang let go that Kueue still counts (a pod being deleted runs until it terminates, and Kueue
// deletes the newest pods of a role beyond its count — a replacement the gang wants). Kueue
// scales the Workload's usage down to the smaller counts and releases the rest of its quota, as
// it does for an elastic job scaled down, and the pods that remain keep running. The admitted
// topology requests stay, as for any admitted gang. ok is false when the change is no shrink: a
// pod group the Workload lacks, a count that grows, other requests; the Workload must then be
// admitted anew.
func ShrunkInPlace(have, want []kueuev1beta2.PodSet, leaving map[string]int32) (shrunk []kueuev1beta2.PodSet, ok bool) {
	byName := make(map[kueuev1beta2.PodSetReference]*kueuev1beta2.PodSet, len(want))
	for i := range want {
		byName[want[i].Name] = &want[i]
	}
	shrunk = make([]kueuev1beta2.PodSet, len(have))
	matched := 0
	for i := range have {
		shrunk[i] = *have[i].DeepCopy()
		count := int32(0)
		if w := byName[have[i].Name]; w != nil {
			matched++
			if w.Count > have[i].Count || !SameSize([]kueuev1beta2.PodSet{countless(*w)}, []kueuev1beta2.PodSet{countless(have[i])}) {
				return nil, false
			}
			count = w.Count
		}
		shrunk[i].Count = min(have[i].Count, count+leaving[string(have[i].Name)])
	}
	return shrunk, matched == len(want)
}

// Leaving counts, by role, the pods of a gang's Kueue group that the PodGang no longer references
// and Kueue still counts (PodsCounted): the pods a shrink waits for.
func Leaving(pg *schedulerv1alpha1.PodGang, pods []corev1.Pod) map[string]int32 {
	referenced := map[string]bool{}
	for _, g := range pg.Spec.PodGroups {
		for _, ref := range g.PodReferences {
			referenced[g.Name+"/"+ref.Name] = true
		}
	}
	var left []corev1.Pod
	for _, p := range pods {
		if !referenced[p.Annotations[AnnotationRoleHash]+"/"+p.Name] {
			left = append(left, p)
		}
	}
	return PodsCounted(left)
}

// PodsCounted counts a gang's pods by role (their pod group) as Kueue's pod-group integration
// counts them against the Workload: every pod that can still run, runs or succeeded — not a
// failed one, nor one deleted before it was placed.
func PodsCounted(pods []corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodFailed || (p.DeletionTimestamp != nil && p.Spec.NodeName == "") {
			continue
		}
		out[p.Annotations[AnnotationRoleHash]]++
	}
	return out
}

// countless is a podSet with its count left out: what a Workload keeps while Kueue holds its quota.
func countless(ps kueuev1beta2.PodSet) kueuev1beta2.PodSet {
	ps.Count = 0
	return ps
}

// QuotaReserved reports whether Kueue holds quota for the Workload: while it does, Kueue refuses
// any change of its podSets but a count.
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
// group when pods exit: the operator replaces them), Kueue's admission gate and, when its pod
// group has a pack constraint, that constraint's level as Kueue's topology annotation (the only
// pods whose topology gate Kueue's ungater lifts). A pod of a gang that is not queued on its own (not queued, or admitted through its PodCliqueSet's owner) is
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
	if requests, _ := TopologyRequests(pg); requests[role] != nil {
		if r := requests[role]; r.Required != nil {
			pod.Annotations[AnnotationRequiredTopology] = *r.Required
		} else if r.Preferred != nil {
			pod.Annotations[AnnotationPreferredTopology] = *r.Preferred
		}
	}
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
