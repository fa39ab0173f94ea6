package statemetrics

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/coherent"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/controllers/operator/podclique"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
)

// Reasons a gang waits for placement (grove_podgangs_unscheduled). The set is bounded: the
// Scheduled condition carries whatever reason a scheduler gives, and a reason outside these is
// Other.
const (
	UnscheduledPodsPending         = schedulerv1alpha1.ReasonPodsPending
	UnscheduledUnschedulable       = corev1.PodReasonUnschedulable
	UnscheduledSchedulingGated     = corev1.PodReasonSchedulingGated
	UnscheduledWaitingForPlacement = schedulerv1alpha1.ReasonWaitingForPlacement
	UnscheduledQueuePending        = "QueuePending"
	UnscheduledOther               = "Other"
)

// Reasons a pod is held back (grove_pods_gated), in the order the operator checks them.
const (
	GatedGangNotCreated       = "GangNotCreated"
	GatedBackendNotReady      = "BackendNotReady"
	GatedBaseGangNotScheduled = "BaseGangNotScheduled"
	GatedParentClique         = "ParentClique"
	GatedQueueAdmission       = "QueueAdmission"
	GatedTopology             = "Topology"
	GatedOther                = "Other"
)

// SchedulingGateKueueTopology is the gate Kueue's topology-aware scheduling puts on a pod until
// it has assigned the pod's topology domain.
const SchedulingGateKueueTopology = "kueue.x-k8s.io/topology"

// gangKey is one series of the unscheduled-gang gauges.
type gangKey struct{ namespace, backend, reason string }

// gangWait is how many gangs of a series wait, and the longest wait among them.
type gangWait struct {
	count   int
	longest time.Duration
}

// unscheduledGangs groups the gangs that are not Scheduled by namespace, backend and reason, with
// how long the longest of each has waited at now. A gang being deleted, or whose pods all
// succeeded, waits for nothing.
func unscheduledGangs(gangs []*schedulerv1alpha1.PodGang, now time.Time) map[gangKey]gangWait {
	out := map[gangKey]gangWait{}
	for _, pg := range gangs {
		if pg.DeletionTimestamp != nil || pg.Status.Phase == schedulerv1alpha1.PodGangPhaseSucceeded ||
			meta.IsStatusConditionTrue(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled) {
			continue
		}
		k := gangKey{pg.Namespace, pg.Labels[grovev1alpha1.LabelSchedulerName], unscheduledReason(pg)}
		w := out[k]
		w.count++
		w.longest = max(w.longest, now.Sub(waitingSince(pg)))
		out[k] = w
	}
	return out
}

// unscheduledReason maps why a gang is not placed into the bounded set: Kueue's queue first (its
// pods are gated until it admits the gang, whatever the scheduler says of them), then the
// Scheduled condition's reason. No Scheduled condition yet means the operator has not written the
// gang's first status, which it does once all of its pods exist; a gang whose pods are not all
// there (Initialized=False) and of which the scheduler said nothing waits for its pods.
func unscheduledReason(pg *schedulerv1alpha1.PodGang) string {
	if pg.AwaitsQueue() {
		return UnscheduledQueuePending
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled)
	if c == nil {
		return UnscheduledPodsPending
	}
	switch c.Reason {
	case UnscheduledWaitingForPlacement:
		if meta.IsStatusConditionFalse(pg.Status.Conditions, schedulerv1alpha1.ConditionInitialized) {
			return UnscheduledPodsPending
		}
		return c.Reason
	case UnscheduledPodsPending, UnscheduledUnschedulable, UnscheduledSchedulingGated:
		return c.Reason
	}
	return UnscheduledOther
}

// waitingSince is when a gang's current wait for placement began: its creation if it was never
// placed, else when Scheduled last left True. A gang that ran for days and lost a pod a minute ago
// has waited a minute, not days: the alert on Unschedulable past 15 minutes would otherwise fire
// the moment it lost its place.
func waitingSince(pg *schedulerv1alpha1.PodGang) time.Time {
	if pg.Status.LastScheduled != nil {
		if c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled); c != nil && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return pg.CreationTimestamp.Time
}

// podKey is one series of grove_pods_gated.
type podKey struct{ namespace, reason string }

// view is what a pod's gate reason is decided from, keyed namespace/name.
type view struct {
	cliques map[string]*grovev1alpha1.PodClique
	gangs   map[string]*schedulerv1alpha1.PodGang
	// groups are the scaling groups of each PodCliqueSet replica, keyed namespace/pcs/replica.
	groups map[string][]grovev1alpha1.PodCliqueScalingGroup
	// after are, under Coherent, the PodGangs each PodGang's entry waits for (its PodGangMap).
	after map[string][]string
}

func key(namespace, name string) string { return namespace + "/" + name }

func replicaKey(namespace string, labels map[string]string) string {
	return namespace + "/" + labels[grovev1alpha1.LabelPartOf] + "/" + labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex]
}

// newView indexes the listed objects for gateReason.
func newView(cliques []*grovev1alpha1.PodClique, gangs []*schedulerv1alpha1.PodGang, groups []*grovev1alpha1.PodCliqueScalingGroup, maps []*grovev1alpha1.PodGangMap) *view {
	v := &view{cliques: map[string]*grovev1alpha1.PodClique{}, gangs: map[string]*schedulerv1alpha1.PodGang{},
		groups: map[string][]grovev1alpha1.PodCliqueScalingGroup{}, after: map[string][]string{}}
	for _, p := range cliques {
		v.cliques[key(p.Namespace, p.Name)] = p
	}
	for _, pg := range gangs {
		v.gangs[key(pg.Namespace, pg.Name)] = pg
	}
	for _, g := range groups {
		k := replicaKey(g.Namespace, g.Labels)
		v.groups[k] = append(v.groups[k], *g)
	}
	for _, m := range maps {
		for _, g := range coherent.Gangs(m.Labels[grovev1alpha1.LabelPartOf], int(m.Spec.PodCliqueSetReplicaIndex), m.Spec.Entries) {
			if len(g.After) > 0 {
				v.after[key(m.Namespace, g.Name)] = g.After
			}
		}
	}
	return v
}

// gatedPods counts the pods held back now by namespace and reason: those with a scheduling gate,
// and those held at start by the startup-order init container. Pods finished or being deleted
// wait for nothing.
func gatedPods(pods []*corev1.Pod, v *view) map[podKey]int {
	out := map[podKey]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if reason, held := gateReason(p, v); held {
			out[podKey{p.Namespace, reason}]++
		}
	}
	return out
}

// gateReason says what holds a pod back, as the PodClique reconciler decides to lift the
// operator's gate (podclique/gates.go) and kubectl grove status explains it: another
// controller's gate first (the operator's own is lifted, but the pod still waits for it), then
// the operator's gate by the first check that keeps it, then the startup-order hold at start.
// held is false for a pod nothing holds.
func gateReason(p *corev1.Pod, v *view) (reason string, held bool) {
	if !fieldindex.MayBeHeld(p) { // the index a scrape lists held pods by says the same
		return "", false
	}
	if len(p.Spec.SchedulingGates) == 0 {
		return GatedParentClique, true // the startup hold
	}
	foreign := ""
	for _, g := range p.Spec.SchedulingGates {
		switch {
		case g.Name == grovev1alpha1.SchedulingGatePodGangPendingCreation:
		case g.Name == kueuegang.SchedulingGateAdmission:
			foreign = GatedQueueAdmission // Kueue lifts it before its topology gate
		case g.Name == SchedulingGateKueueTopology && foreign != GatedQueueAdmission:
			foreign = GatedTopology
		case foreign == "":
			foreign = GatedOther
		}
	}
	if foreign != "" {
		return foreign, true
	}
	pclq := v.cliques[key(p.Namespace, p.Labels[grovev1alpha1.LabelPodClique])]
	gangName := p.Labels[grovev1alpha1.LabelPodGang]
	if gangName == "" && pclq != nil {
		gangName = pclq.Labels[grovev1alpha1.LabelPodGang]
	}
	pg := v.gangs[key(p.Namespace, gangName)]
	switch {
	case pg == nil:
		return GatedGangNotCreated, true
	case !pg.Acknowledged():
		return GatedBackendNotReady, true
	case !pg.MaySchedule(p.Name):
		return GatedGangNotCreated, true // the gang does not name the pod yet
	}
	after := slices.Clone(v.after[key(p.Namespace, gangName)])
	if base := p.Labels[grovev1alpha1.LabelBasePodGang]; base != "" {
		after = append(after, base)
	}
	for _, name := range after {
		if b := v.gangs[key(p.Namespace, name)]; b == nil || !meta.IsStatusConditionTrue(b.Status.Conditions, schedulerv1alpha1.ConditionScheduled) {
			return GatedBaseGangNotScheduled, true
		}
	}
	if pclq != nil && !parentsUp(pclq, v) {
		return GatedParentClique, true
	}
	// Nothing keeps the gate: the operator lifts it on its next pass.
	return GatedOther, true
}

// parentsUp mirrors the PodClique reconciler's parentsReady: every clique pclq starts after is up,
// or belongs to a scaling-group replica its group no longer has.
func parentsUp(pclq *grovev1alpha1.PodClique, v *view) bool {
	for _, name := range pclq.Spec.StartsAfter {
		parent := v.cliques[key(pclq.Namespace, name)]
		if parent == nil {
			if !podclique.ScaledAway(v.groups[replicaKey(pclq.Namespace, pclq.Labels)], name) {
				return false
			}
			continue
		}
		if !parent.UpForDependents(slices.Contains(pclq.Spec.StartsAfterSucceeded, name)) {
			return false
		}
	}
	return true
}

// workloadKey is one series of grove_podcliquesets.
type workloadKey struct{ namespace, workloadType, phase string }

// strategyKey is one series of grove_podcliqueset_updates_in_progress.
type strategyKey struct{ namespace, strategy string }

// workloadSeries are the PodCliqueSet gauges.
type workloadSeries struct {
	phases map[workloadKey]int
	// replicasUpdating, inProgress and stalled have a series, 0 included, for every namespace
	// (and strategy) with a PodCliqueSet: a dashboard shows 0, not "no data", when nothing rolls.
	replicasUpdating map[string]int
	inProgress       map[strategyKey]int
	stalled          map[string]int
}

// workloads counts the PodCliqueSets by phase, the updates under way (UpdateInProgress True, or
// Unknown: past the progress deadline, still not ended) and stalled, and the replicas being
// replaced now: the PodCliqueSet replicas of status.updateProgress.currentlyUpdating and the
// scaling-group replica each rolling group names. PodCliqueSets being deleted are no workload.
func workloads(pcss []*grovev1alpha1.PodCliqueSet, groups []*grovev1alpha1.PodCliqueScalingGroup) workloadSeries {
	s := workloadSeries{phases: map[workloadKey]int{}, replicasUpdating: map[string]int{}, inProgress: map[strategyKey]int{}, stalled: map[string]int{}}
	for _, pcs := range pcss {
		if pcs.DeletionTimestamp != nil {
			continue
		}
		phase := pcs.Status.Phase
		if phase == "" {
			phase = grovev1alpha1.PodCliqueSetPhasePending // no status written yet
		}
		workloadType := pcs.Spec.WorkloadType
		if workloadType == "" {
			workloadType = grovev1alpha1.WorkloadTypeInference
		}
		s.phases[workloadKey{pcs.Namespace, string(workloadType), string(phase)}]++

		ns, k := pcs.Namespace, strategyKey{pcs.Namespace, string(children.UpdateStrategy(pcs))}
		s.replicasUpdating[ns] += 0
		s.inProgress[k] += 0
		s.stalled[ns] += 0
		if c := meta.FindStatusCondition(pcs.Status.Conditions, grovev1alpha1.ConditionUpdateInProgress); c != nil && c.Status != metav1.ConditionFalse {
			s.inProgress[k]++
			if c.Reason == grovev1alpha1.ReasonProgressDeadlineExceeded {
				s.stalled[ns]++
			}
		}
		if p := pcs.Status.UpdateProgress; p != nil && p.UpdateEndedAt == nil {
			for _, u := range p.CurrentlyUpdating {
				if u.UpdateEndedAt == nil {
					s.replicasUpdating[ns]++
				}
			}
		}
	}
	for _, g := range groups {
		if p := g.Status.UpdateProgress; g.DeletionTimestamp == nil && p != nil && p.UpdateEndedAt == nil && p.ReadyReplicaIndicesSelectedToUpdate != nil {
			s.replicasUpdating[g.Namespace]++
		}
	}
	return s
}
