package podcliquescalinggroup

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/coherent"
)

// groupPlan is everything one pass of a scaling group decided from what it observed, before
// anything is written: the group's breach, the group replicas it recycles (recorded in
// status.recoveringReplicas first), and the PodCliques to create, update and delete.
type groupPlan struct {
	breach metav1.Condition
	// recovering are the recycled group replicas not yet available again, these included;
	// record says they must be written before the recycled PodCliques go.
	recovering []int32
	record     bool
	// assessed are the recovering replicas before this pass recycled any.
	assessed []int32
	// recycle are the group replicas recycled now, with their PodCliques, in order.
	recycle []recycled
	// creates, updates and deletes are the member PodCliques missing, due for the template,
	// and beyond spec.replicas or out of the group.
	creates, updates, deletes []*grovev1alpha1.PodClique
	// updateReasons says, by PodClique name, why each of updates is brought to the template.
	updateReasons map[string]string
	// requeue is when the next pending breach's delay runs out.
	requeue time.Duration
	// delay and minAvailable are what the breach was judged against, for the log line.
	delay        time.Duration
	minAvailable int32
	healthy      int32
}

// recycled is one group replica whose PodCliques are deleted, to be recreated.
type recycled struct {
	replica string
	pclqs   []*grovev1alpha1.PodClique
}

// groupInput is what decideGroup reads.
type groupInput struct {
	pcs     *grovev1alpha1.PodCliqueSet
	pcsg    *grovev1alpha1.PodCliqueScalingGroup
	replica int // the PodCliqueSet replica the group belongs to
	have    map[string]*grovev1alpha1.PodClique
	// readyPods counts, by PodClique, the Ready pods not being deleted; read only while a
	// member is behind the PodCliqueSet's template (nil otherwise).
	readyPods map[string]int32
	// unseen are PodCliques an earlier pass created that the cache does not show yet.
	unseen sets.Set[string]
	// gangs are, under Coherent, the PodGangs of the replica's PodGangMap.
	gangs []coherent.Gang
	now   time.Time
	// podSpecs shortens comparing a member with what it wants (nil: compared in full).
	podSpecs *children.PodSpecs
}

// decideGroup is a pure function of the group, its PodCliqueSet, its observed PodCliques and
// the time. Gang termination inside the group: a group replica is breached when one of its
// PodCliques is; while the group keeps minAvailable healthy replicas, breached replicas whose
// delay expired are recycled. Below minAvailable the group reports MinAvailableBreached=True
// and leaves the decision to the PodCliqueSet, which terminates the whole PodCliqueSet replica.
func decideGroup(in groupInput) groupPlan {
	pcsg := in.pcsg
	p := groupPlan{}
	if pcsg.Spec.TerminationDelay != nil {
		p.delay = pcsg.Spec.TerminationDelay.Duration
	}
	h := assessReplicas(pcsg, in.have, p.delay, in.now)
	p.requeue, p.recovering, p.assessed, p.healthy = h.soonest.After(), h.recovering, h.recovering, h.healthy
	p.minAvailable = pcsg.Spec.EffectiveMinAvailable()
	training := pcsg.Spec.Training()
	if training {
		// A Training breach restarts (or fails) the whole PodCliqueSet replica, counted against
		// one budget, so the group never recycles a replica on its own.
		p.minAvailable = pcsg.Spec.Replicas
	}
	p.breach = metav1.Condition{
		Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionFalse, Reason: grovev1alpha1.ReasonSufficientAvailableReplicas,
		Message: fmt.Sprintf("%d of %d replicas healthy, minAvailable %d", h.healthy, pcsg.Spec.Replicas, p.minAvailable), ObservedGeneration: pcsg.Generation,
	}
	if len(h.recovering) > 0 {
		p.breach.Message += fmt.Sprintf("; recycled and not yet available again: %v", h.recovering)
	}
	switch {
	case pcsg.Spec.Replicas == 0:
		p.breach.Reason, p.breach.Message = grovev1alpha1.ReasonIdle, "0 replicas: idle, never breached"
		p.recovering = nil
	case h.healthy < p.minAvailable:
		p.breach.Status, p.breach.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonInsufficientAvailableReplicas
		p.breach.Message += "; the PodCliqueSet decides on its replica"
	}
	if pcsg.Spec.Replicas > 0 && pcsg.Spec.TerminationDelay != nil && h.healthy >= p.minAvailable && !training && len(h.expired) > 0 {
		// Recorded before anything is deleted: a restarted operator then still counts them as
		// unhealthy until they are available again.
		recovering := sets.New(h.recovering...)
		for _, j := range h.expired {
			idx, _ := strconv.Atoi(j)
			recovering.Insert(int32(idx))
			p.recycle = append(p.recycle, recycled{replica: j, pclqs: h.byReplica[j]})
		}
		p.recovering = sets.List(recovering)
		p.record = !slices.Equal(pcsg.Status.RecoveringReplicas, p.recovering)
	}
	p.members(in)
	return p
}

// members plans the group's PodCliques: the missing ones created (except those of a group
// replica recycled now: recreated on the next pass, once the deletions are observed), existing
// ones brought to the template once the PodCliqueSet's rollout reached the group and the group's
// own budget gives their replica its turn, and those no group replica wants deleted.
func (p *groupPlan) members(in groupInput) {
	want := Members(in.pcs, in.pcsg, in.replica, in.gangs)
	recycledNow := map[string]bool{}
	for _, r := range p.recycle {
		recycledNow[r.replica] = true
	}
	allowUpdate := in.pcsg.Spec.PodCliqueSetGenerationHash == children.GenerationHash(in.pcs)
	phase := in.pcs.Status.Phase
	finished := phase == grovev1alpha1.PodCliqueSetPhaseSucceeded || phase == grovev1alpha1.PodCliqueSetPhaseFailed
	turn := replicasToUpdate(in.pcsg, want, in.have, in.readyPods)
	coherentGroup := in.pcsg.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		j := w.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		if coherentGroup {
			p.coherentMember(in, name, w, allowUpdate && atGroupRevision(in, w), recycledNow[j], finished)
			continue
		}
		switch {
		case recycledNow[j], in.unseen.Has(name):
		case in.have[name] == nil && finished:
			// A finished Training workload's PodCliques that were still running were deleted by
			// the PodCliqueSet: nothing is made again.
		case in.have[name] == nil:
			p.creates = append(p.creates, w)
		case allowUpdate && turn[j]:
			if updated, changed := in.podSpecs.UpdatedClique(in.pcs, in.have[name], w); changed {
				p.update(in.have[name], updated)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.have)) {
		if _, ok := want[name]; !ok && in.have[name].DeletionTimestamp.IsZero() {
			// not a member of any group replica any more (beyond spec.replicas, out of the group)
			p.deletes = append(p.deletes, in.have[name])
		}
	}
}

// coherentMember plans one member PodClique under Coherent: the replica's PodGangMap decides.
// A member is created, or brought to the template, only once the map's entry holding its group
// replica is at the group's revision (current: the update moved the replica, or it never needed
// one); a member of a replica still at an older revision keeps its template, and one missing
// there waits for its step — recreated from the new template, it would run the new version
// outside the plan.
func (p *groupPlan) coherentMember(in groupInput, name string, w *grovev1alpha1.PodClique, current, recycledNow, finished bool) {
	have := in.have[name]
	switch {
	case recycledNow, in.unseen.Has(name), !current:
	case have == nil && finished:
	case have == nil:
		p.creates = append(p.creates, w)
	default:
		if _, updating := in.pcs.CoherentUpdate(); updating {
			// Sizes hold while the update runs (grove-webhook refuses a change of them, ours too).
			w.Spec.Replicas, w.Spec.TemplateReplicas = have.Spec.Replicas, children.Copied(have.Spec.TemplateReplicas)
		}
		if updated, changed := in.podSpecs.UpdatedClique(in.pcs, have, w); changed {
			p.update(have, updated)
		}
	}
}

// atGroupRevision reports whether the PodGangMap entry holding a member's group replica is at
// the group's revision (false when no entry holds it yet).
func atGroupRevision(in groupInput, w *grovev1alpha1.PodClique) bool {
	if w.Labels[grovev1alpha1.LabelPodGang] == "" {
		return false
	}
	for _, g := range in.gangs {
		if g.Name == w.Labels[grovev1alpha1.LabelPodGang] {
			return g.Entry.PodCliqueSetGenerationHash == in.pcsg.Spec.PodCliqueSetGenerationHash
		}
	}
	return false
}

// update plans a member PodClique brought from have to the template, with the reason its log
// line gives.
func (p *groupPlan) update(have, updated *grovev1alpha1.PodClique) {
	p.updates = append(p.updates, updated)
	if p.updateReasons == nil {
		p.updateReasons = map[string]string{}
	}
	p.updateReasons[updated.Name] = updateReason(have, updated)
}

// updateReason says what of a member PodClique's spec differs from the template.
func updateReason(have, want *grovev1alpha1.PodClique) string {
	switch {
	case !equality.Semantic.DeepEqual(have.Spec.PodSpec, want.Spec.PodSpec):
		return "its pod template changed"
	case have.Spec.Replicas != want.Spec.Replicas:
		return "its replica count changed (the template's, or an autoscaler's)"
	case have.Spec.PodCliqueSetGenerationHash != want.Spec.PodCliqueSetGenerationHash:
		return "the PodCliqueSet's update reached its group replica"
	}
	return "its spec differs from the template"
}
