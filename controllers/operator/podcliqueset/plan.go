package podcliqueset

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
)

// plan is everything one pass decided from what it observed, before anything is written. The
// reconciler records it (record, one status write), then acts on it (transitions' deletions,
// changes, deletes, the PodGangs' status), then writes the status the children now summarise.
type plan struct {
	// record is the status carrying a decision the pass acts on — a training restart, the
	// workload's failure, the scaled counts a gang termination gives back — written before any
	// child is touched: a pass killed after the write finds the decision and carries it out, one
	// killed before it decides anew. nil when nothing needs recording first.
	record *grovev1alpha1.PodCliqueSetStatus
	// transitions are the lifecycle steps decided, each with the PodCliques it deletes.
	transitions []transition
	// endPass: the recorded decision is all this pass acts on; the next one, once the deletions
	// are observed, recreates what they removed.
	endPass bool
	// settled: the workload is terminal, or being torn down; no replica is converged and no
	// status is derived from the children.
	settled bool
	// maps are, under Coherent, the PodGangMap writes: made before any change to a child, which
	// follows what they record.
	maps []change
	// coherent is, under Coherent, what the pass decided of the replicas' PodGangMaps.
	coherent *coherentPass
	// changes create children that are missing and bring those that differ back to the
	// template, the rollout permitting; deletes remove what no replica wants.
	changes, deletes []change
	// gangStatus is the operator's part of each PodGang's status that changed.
	gangStatus []gangPart
	// wantGangs are the PodGangs the replicas keep.
	wantGangs map[string]bool
	// requeue is when to look again without an event: a pending breach's delay, a collision's
	// recheck, the end of maxRuntime.
	requeue time.Duration
}

// verb is what a change does to a child.
type verb string

const (
	create verb = "create"
	update verb = "update"
	remove verb = "delete"
)

// change is one write to a child, with the reason the log line gives.
type change struct {
	verb   verb
	obj    client.Object
	reason string
}

// gangPart is a PodGang's status part to apply onto pg (the object created or updated by this
// pass's change, or the one observed). replaced is the resourceVersion this pass read, when it
// read one: until the cache shows a newer one, this pass's writes are unseen.
type gangPart struct {
	pg       *schedulerv1alpha1.PodGang
	part     podgangstatus.Part
	replaced string
}

// transitionKind names a lifecycle step; the ones a user sees are also events.
type transitionKind string

const (
	// terminated: an inference replica's gang was broken longer than its terminationDelay; its
	// PodCliques are deleted and recreated on the next pass.
	terminated transitionKind = "GangTerminated"
	// restarted: a Training replica's gang broke within the restart budget (recorded).
	restarted transitionKind = EventReplicaRestarting
	// resumed: a restart recorded by an earlier pass whose PodCliques are not all gone yet.
	resumed transitionKind = "RestartResumed"
	// failing: a Training workload ran out of restarts or time (recorded as its Failed
	// condition); every PodClique goes, and the phase turns Failed once no pod is left.
	failing transitionKind = "Failing"
	// tearingDown: a failing or Failed workload whose PodCliques or pods are not all gone yet.
	tearingDown transitionKind = "TearingDown"
	// finishing: a Succeeded workload whose PodCliques still running are deleted.
	finishing transitionKind = "Finishing"
)

// transition is one lifecycle step and the PodCliques (or, when tearing down, scaling groups
// first) it deletes.
type transition struct {
	kind    transitionKind
	replica int
	// why says what broke, for the log line and event.
	why string
	// restart is the restart count a restart records.
	restart int32
	// reason, event and message describe a failure.
	reason, event, message string
	deletes                []change
}

// tearDownRecheck is how often a failing workload looks whether its last pods are gone.
const tearDownRecheck = 2 * time.Second

// input is what decide reads: the PodCliqueSet, its observed children and the time.
type input struct {
	pcs *grovev1alpha1.PodCliqueSet
	obs *observed
	now time.Time
}

// decide is the pass's plan: a pure function of the PodCliqueSet, what was observed of its
// children and the time. The children it wants are built by the functions kubectl grove render
// prints (Initial, InitialPodGangs), so the two cannot drift.
func decide(in input) plan {
	p := plan{wantGangs: map[string]bool{}}
	if p.lifecycle(in) {
		return p
	}
	if isCoherent(in.pcs) {
		p.coherent = p.coherentReplicas(in)
	}
	terminated := p.gangTermination(in)
	if p.endPass {
		return p
	}
	ro := newRollout(in.pcs)
	for i := range int(in.pcs.Spec.Replicas) {
		if terminated[i] {
			// Recreated on the next pass, once the deletions are observed; its PodGangs stay.
			for _, g := range p.gangsOf(in, i) {
				p.wantGangs[g.name] = true
			}
			continue
		}
		allow := ro.allow(i, in.obs)
		if p.coherent != nil {
			allow = p.coherent.allow[i]
		}
		p.replica(in, i, allow)
	}
	p.autoscalers(in)
	p.unwanted(in)
	p.nextLook(in)
	return p
}

// recorded returns the status to record, starting from the stored one.
func (p *plan) recorded(in input) *grovev1alpha1.PodCliqueSetStatus {
	if p.record == nil {
		p.record = in.pcs.Status.DeepCopy()
	}
	return p.record
}

// lifecycle decides a Training workload's end: a finished one is settled, one past its
// maxRuntime fails. It reports whether the pass ends there.
func (p *plan) lifecycle(in input) bool {
	pcs, obs := in.pcs, in.obs
	if !children.IsTraining(pcs) {
		return false
	}
	switch {
	case pcs.Status.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded:
		p.settled = true
		if d := deletesOf(runningCliques(obs), "the workload succeeded by its success policy"); len(d) > 0 {
			p.transitions = append(p.transitions, transition{kind: finishing, deletes: d})
		}
		return true
	case pcs.Status.Phase == grovev1alpha1.PodCliqueSetPhaseFailed || meta.IsStatusConditionTrue(pcs.Status.Conditions, grovev1alpha1.ConditionFailed):
		p.settled = true
		p.tearDown(in, tearingDown)
		return true
	}
	if t := pcs.Spec.TrainingSpec; t != nil && t.MaxRuntime != nil && pcs.Status.StartTime != nil && runtimeRemaining(pcs, in.now) <= 0 {
		p.fail(in, grovev1alpha1.ReasonMaxRuntimeExceeded, EventMaxRuntimeExceeded, "",
			fmt.Sprintf("ran longer than maxRuntime %s (since %s)", t.MaxRuntime.Duration, pcs.Status.StartTime.Format(time.RFC3339)))
		return true
	}
	return false
}

// fail records a Training workload's failure — its Failed condition with the reason, and the pods
// counted at that moment — and tears it down: every pod is gone before the phase says Failed
// (GREP-0285), a later pass sets it once nothing is left.
func (p *plan) fail(in input, reason, event, why, message string) {
	st := p.recorded(in)
	st.CliqueStatuses = cliqueStatuses(in.pcs, in.obs)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: grovev1alpha1.ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: in.pcs.Generation, LastTransitionTime: metav1.NewTime(in.now),
	})
	p.settled = true
	p.tearDown(in, failing)
	last := &p.transitions[len(p.transitions)-1]
	last.reason, last.event, last.why, last.message = reason, event, why, message
}

// tearDown deletes every scaling group (first, so none recreates its PodCliques) and PodClique
// of a failing workload, and records the Failed phase once none of them and no pod is left.
func (p *plan) tearDown(in input, kind transitionKind) {
	obs := in.obs
	t := transition{kind: kind}
	for _, name := range slices.Sorted(maps.Keys(obs.groups)) {
		if g := obs.groups[name]; g.DeletionTimestamp.IsZero() {
			t.deletes = append(t.deletes, change{verb: remove, obj: g, reason: "the workload failed"})
		}
	}
	var all []*grovev1alpha1.PodClique
	for _, pclq := range obs.cliques {
		all = append(all, pclq)
	}
	t.deletes = append(t.deletes, deletesOf(all, "the workload failed")...)
	if len(t.deletes) > 0 || kind == failing {
		p.transitions = append(p.transitions, t)
	}
	if in.pcs.Status.Phase == grovev1alpha1.PodCliqueSetPhaseFailed {
		return
	}
	left := len(obs.cliques) + len(obs.groups) + obs.podsLeft
	for _, until := range obs.terminating {
		if until.After(in.now) {
			left++ // a pod that never reports its end (its node is gone) counts as gone after its grace period
		}
	}
	if left == 0 {
		p.recorded(in).Phase = grovev1alpha1.PodCliqueSetPhaseFailed
		return
	}
	// Pods going away are not watched (thousands of them would each wake the PodCliqueSet): a
	// workload being torn down looks again shortly, until nothing is left.
	p.requeue = tearDownRecheck
}

// gangTermination decides, replica by replica, what a gang broken for longer than its
// terminationDelay costs: an inference replica's PodCliques are deleted together (the counts they
// were scaled to recorded first, to be given back); a Training replica is restarted within its
// budget (recorded first) or fails the workload. It returns the replicas terminated now.
func (p *plan) gangTermination(in input) map[int]bool {
	pcs, obs := in.pcs, in.obs
	terminatedNow := map[int]bool{}
	training := children.IsTraining(pcs)
	if pcs.Spec.Template.TerminationDelay == nil && !training {
		return terminatedNow
	}
	var delay time.Duration // Training without a delay (no webhook defaulted it) terminates at once
	if pcs.Spec.Template.TerminationDelay != nil {
		delay = pcs.Spec.Template.TerminationDelay.Duration
	}
	var soonest gangtermination.Soonest
	for i := range int(pcs.Spec.Replicas) {
		members, why := expiredBreaches(obs, i, delay, in.now, &soonest)
		if len(why) == 0 {
			continue
		}
		if c := p.coherent; c != nil && !c.allow[i] || c != nil && c.turn == i {
			// Recreated now, its PodCliques would run the newest template outside the update's
			// plan: a replica waiting for its turn, or in it, is left to the update, whose next
			// step replaces what is down first.
			continue
		}
		reason := strings.Join(why, ", ") + " below minAvailable"
		terminatedNow[i] = true
		if !training {
			p.recordScaledReplicas(in, members)
			p.transitions = append(p.transitions, transition{kind: terminated, replica: i, why: strings.Join(why, ", "),
				deletes: deletesOf(members, "gang termination of replica "+strconv.Itoa(i))})
			continue
		}
		if restartInProgress(pcs, members) != nil {
			p.transitions = append(p.transitions, transition{kind: resumed, replica: i, deletes: deletesOf(members, "restart of replica "+strconv.Itoa(i))})
			continue
		}
		if pcs.Status.RestartCount >= maxRestarts(pcs) {
			p.fail(in, grovev1alpha1.ReasonMaxRestartsExceeded, EventMaxRestartsExceeded, reason,
				fmt.Sprintf("replica %d failed (%s) after %d of %d restarts", i, reason, pcs.Status.RestartCount, maxRestarts(pcs)))
			p.transitions[len(p.transitions)-1].replica = i
			p.endPass = true
			return terminatedNow
		}
		restart := grovev1alpha1.ReplicaRestart{ReplicaIndex: int32(i), Restart: pcs.Status.RestartCount + 1}
		for _, pclq := range members {
			restart.PodCliqueUIDs = append(restart.PodCliqueUIDs, pclq.UID)
		}
		st := p.recorded(in)
		st.RestartCount = restart.Restart
		st.RestartsInProgress = append(slices.DeleteFunc(st.RestartsInProgress, func(rr grovev1alpha1.ReplicaRestart) bool {
			return rr.ReplicaIndex == restart.ReplicaIndex
		}), restart)
		p.transitions = append(p.transitions, transition{kind: restarted, replica: i, why: reason, restart: restart.Restart,
			deletes: deletesOf(members, "restart of replica "+strconv.Itoa(i))})
		// One restart a pass: the next pass counts the next failure against the new count.
		p.endPass = true
		return terminatedNow
	}
	p.requeue = soonest.After()
	return terminatedNow
}

// recordScaledReplicas records the scaled counts of PodCliques about to be deleted (once: a pass
// that finds them recorded records nothing).
func (p *plan) recordScaledReplicas(in input, pclqs []*grovev1alpha1.PodClique) {
	for _, s := range scaledAway(pclqs) {
		have := in.pcs.Status.ScaledReplicasToRestore
		if p.record != nil {
			have = p.record.ScaledReplicasToRestore
		}
		if slices.Contains(have, s) {
			continue
		}
		st := p.recorded(in)
		st.ScaledReplicasToRestore = append(slices.DeleteFunc(st.ScaledReplicasToRestore, func(h grovev1alpha1.ScaledReplicas) bool { return h.Name == s.Name }), s)
	}
}

// deletesOf is the deletion of each PodClique not already going, in name order.
func deletesOf(pclqs []*grovev1alpha1.PodClique, reason string) []change {
	pclqs = slices.Clone(pclqs)
	slices.SortFunc(pclqs, func(a, b *grovev1alpha1.PodClique) int { return strings.Compare(a.Name, b.Name) })
	var out []change
	for _, pclq := range pclqs {
		if pclq.DeletionTimestamp.IsZero() {
			out = append(out, change{verb: remove, obj: pclq, reason: reason})
		}
	}
	return out
}

// runningCliques are the PodCliques that have not succeeded (nor are going).
func runningCliques(obs *observed) []*grovev1alpha1.PodClique {
	var out []*grovev1alpha1.PodClique
	for _, pclq := range obs.cliques {
		if !meta.IsStatusConditionTrue(pclq.Status.Conditions, grovev1alpha1.ConditionSucceeded) {
			out = append(out, pclq)
		}
	}
	return out
}

// replica plans replica i's children — its Service, standalone PodCliques, scaling groups and
// PodGangs — as Initial and InitialPodGangs build them. A missing child is created; one that
// differs is brought back to the template only when the rollout lets the replica take it.
func (p *plan) replica(in input, i int, allowUpdate bool) {
	pcs, obs := in.pcs, in.obs
	svc := wantService(pcs, i)
	if have := obs.services[svc.Name]; have == nil {
		p.create(in, svc, "the replica's headless Service is missing")
	} else if have.Spec.PublishNotReadyAddresses != svc.Spec.PublishNotReadyAddresses || !equality.Semantic.DeepEqual(have.Spec.Selector, svc.Spec.Selector) {
		updated := have.DeepCopy()
		updated.Spec.PublishNotReadyAddresses, updated.Spec.Selector = svc.Spec.PublishNotReadyAddresses, svc.Spec.Selector
		p.changes = append(p.changes, change{verb: update, obj: updated, reason: "the headless Service differs from the template"})
	}
	coherentSet := p.coherent != nil
	for _, tmpl := range standaloneCliques(pcs) {
		want := children.PodClique(pcs, i, tmpl, nil, grovev1alpha1.BasePodGangName(pcs.Name, i))
		if coherentSet {
			// Its pods join the gangs the PodGangMap gives them (several during an update).
			delete(want.Labels, grovev1alpha1.LabelPodGang)
			delete(want.Labels, grovev1alpha1.LabelBasePodGang)
		}
		have := obs.cliques[want.Name]
		switch {
		case have == nil && coherentSet && !allowUpdate:
			// A replica waiting for its Coherent update: made now, it would run the newest
			// template outside the plan; it is made when its turn comes.
		case have == nil:
			if n, ok := scaledReplicasFor(pcs, want); ok {
				want.Spec.Replicas = n // recreated after gang termination at the count it was scaled to
			}
			p.create(in, want, "the PodClique is missing")
		case allowUpdate:
			want.Spec.Replicas = keepScaledReplicas(want.Spec.Replicas, have.Spec.Replicas, have.Spec.TemplateReplicas, tmpl.Spec.ScaleConfig != nil)
			if p.coherentUpdating(pcs) {
				// Sizes wait while a Coherent update runs (the plan of the replica being updated is
				// made for them; grove-webhook refuses a change of them, ours too).
				want.Spec.Replicas, want.Spec.TemplateReplicas = have.Spec.Replicas, children.Copied(have.Spec.TemplateReplicas)
			}
			updated, changed := children.Updated(have, want, children.CliqueSpec)
			if _, gang := updated.Labels[grovev1alpha1.LabelPodGang]; coherentSet && gang {
				// Made under another strategy: under Coherent its pods' gangs come from the PodGangMap.
				if !changed {
					updated = have.DeepCopy() // Updated returned have itself
				}
				delete(updated.Labels, grovev1alpha1.LabelPodGang)
				delete(updated.Labels, grovev1alpha1.LabelBasePodGang)
				changed = true
			}
			if changed {
				p.changes = append(p.changes, change{verb: update, obj: updated, reason: "the PodClique differs from the template"})
			}
		}
	}
	for gi := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[gi]
		want := wantGroup(pcs, i, g)
		have := obs.groups[want.Name]
		switch {
		case have == nil && coherentSet && !allowUpdate:
		case have == nil:
			p.create(in, want, "the PodCliqueScalingGroup is missing")
		case allowUpdate:
			want.Spec.Replicas = keepScaledReplicas(want.Spec.Replicas, have.Spec.Replicas, have.Spec.TemplateReplicas, g.ScaleConfig != nil)
			if p.coherentUpdating(pcs) {
				want.Spec.Replicas, want.Spec.TemplateReplicas = have.Spec.Replicas, children.Copied(have.Spec.TemplateReplicas)
			}
			if updated, changed := children.Updated(have, want, children.GroupSpec); changed {
				p.changes = append(p.changes, change{verb: update, obj: updated, reason: "the PodCliqueScalingGroup differs from the template"})
			}
		}
	}
	p.podGangs(in, i)
}

// create plans a child's creation, owned by the PodCliqueSet — unless another owner holds its
// name (reported in status, never taken over) or an earlier pass created it and the cache does
// not show it yet.
func (p *plan) create(in input, obj client.Object, reason string) {
	key := kindOf(obj) + "/" + obj.GetName()
	if in.obs.collided[key] || in.obs.unseen.Has(key) {
		return
	}
	setOwner(in.pcs, obj)
	p.changes = append(p.changes, change{verb: create, obj: obj, reason: reason})
}

// podGangs plans a replica's PodGangs. Pod names are stable per index, so a PodGang is created
// complete — every member pod referenced — before its pods exist: its first generation is final,
// the backend-controller acknowledges it once, and pods created after that acknowledgement need
// no gate (see docs/podgang-contract.md). Initialized records whether every referenced pod exists.
func (p *plan) podGangs(in input, replica int) {
	pcs, obs := in.pcs, in.obs
	gangs := p.gangsOf(in, replica)
	for _, g := range gangs {
		p.wantGangs[g.name] = true
	}
	if obs.backend == "" {
		return // the status reports the backend that is not enabled (lastErrors)
	}
	for _, g := range gangs {
		want, missing := wantPodGang(pcs, replica, g, obs.backend, obs)
		have := obs.gangs[g.name]
		switch {
		case have != nil && obs.staleGangs.Has(g.name):
			// This view lacks our last write to the PodGang: a write from it would be refused as
			// a conflict. That write's own event brings the next pass.
			continue
		case have == nil:
			if obs.unseen.Has("PodGang/" + g.name) {
				continue // created by an earlier pass; its status waits until the cache shows it
			}
			p.create(in, want, "the PodGang is missing")
			if part, write := decideGangStatus(want, missing, obs.pods, metav1.NewTime(in.now)); write && !obs.collided["PodGang/"+g.name] {
				p.gangStatus = append(p.gangStatus, gangPart{pg: want, part: part})
			}
			continue
		}
		pg := have
		if !sameGangSpec(&have.Spec, &want.Spec) || !children.Holds(have.Labels, want.Labels) || !children.Holds(have.Annotations, want.Annotations) {
			pg = have.DeepCopy()
			pg.Spec = want.Spec
			pg.Labels = children.Merged(pg.Labels, want.Labels)
			pg.Annotations = children.Merged(pg.Annotations, want.Annotations)
			p.changes = append(p.changes, change{verb: update, obj: pg, reason: "the PodGang's pods or constraints changed"})
		}
		if part, write := decideGangStatus(pg, missing, obs.pods, metav1.NewTime(in.now)); write {
			p.gangStatus = append(p.gangStatus, gangPart{pg: pg, part: part, replaced: have.ResourceVersion})
		}
	}
}

// coherentUpdating reports whether a Coherent update runs: recorded, or started by this pass.
func (p *plan) coherentUpdating(pcs *grovev1alpha1.PodCliqueSet) bool {
	if p.coherent == nil {
		return false
	}
	_, recorded := pcs.CoherentUpdate()
	return recorded || p.coherent.turn >= 0
}

// gangsOf are a replica's PodGangs: under Coherent as its PodGangMap entries make them.
func (p *plan) gangsOf(in input, replica int) []gang {
	if p.coherent != nil {
		return coherentGangs(in.pcs, replica, p.coherent.entries[replica], in.obs)
	}
	return wantedGangs(in.pcs, replica, in.obs)
}

// autoscalers plans the PodCliqueSet's HorizontalPodAutoscalers: one per autoscaled clique and
// scaling group of each replica.
func (p *plan) autoscalers(in input) {
	want := wantedAutoscalers(in.pcs)
	for _, name := range slices.Sorted(maps.Keys(in.obs.autoscalers)) {
		h := in.obs.autoscalers[name]
		w, ok := want[name]
		delete(want, name)
		switch {
		case !ok:
			p.deletes = append(p.deletes, change{verb: remove, obj: h, reason: "its clique or scaling group is no longer autoscaled"})
		case !sameAutoscaling(h.Spec, w.Spec):
			updated := h.DeepCopy()
			updated.Spec.ScaleTargetRef, updated.Spec.MinReplicas, updated.Spec.MaxReplicas, updated.Spec.Metrics = w.Spec.ScaleTargetRef, w.Spec.MinReplicas, w.Spec.MaxReplicas, w.Spec.Metrics
			p.changes = append(p.changes, change{verb: update, obj: updated, reason: "the autoscaling config changed"})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		p.create(in, want[name], "the clique or scaling group is autoscaled")
	}
}

// unwanted plans the deletion of the children of replicas beyond spec.replicas, of cliques and
// scaling groups that left the template, and of PodGangs no replica wants any more (a scaling
// group scaled in).
func (p *plan) unwanted(in input) {
	pcs, obs := in.pcs, in.obs
	beyond := func(o client.Object) bool {
		i, ok := grovev1alpha1.ReplicaIndexOf(o)
		return ok && i >= int(pcs.Spec.Replicas)
	}
	add := func(o client.Object, why string) {
		if o.GetDeletionTimestamp().IsZero() {
			p.deletes = append(p.deletes, change{verb: remove, obj: o, reason: why})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obs.cliques)) {
		// Scaling-group PodCliques belong to their PodCliqueScalingGroup, which removes them.
		if o := obs.cliques[name]; o.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == "" && (beyond(o) || !wantsStandalone(pcs, o)) {
			add(o, "its replica or clique left the template")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obs.groups)) {
		if o := obs.groups[name]; beyond(o) || !wantsGroup(pcs, o) {
			add(o, "its replica or scaling group left the template")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obs.services)) {
		if o := obs.services[name]; beyond(o) {
			add(o, "its replica is beyond spec.replicas")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obs.gangs)) {
		if !p.wantGangs[name] {
			add(obs.gangs[name], "no replica or scaling-group replica needs it")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obs.maps)) {
		if o := obs.maps[name]; beyond(o) || p.coherent == nil {
			add(o, "its replica is beyond spec.replicas, or the PodCliqueSet is no longer Coherent")
		}
	}
}

// nextLook adds to the breach's delay the other reasons to look again without an event.
func (p *plan) nextLook(in input) {
	// A name another owner holds is freed by events this PodCliqueSet does not watch.
	if len(in.obs.collisions) > 0 && (p.requeue == 0 || collisionRecheck < p.requeue) {
		p.requeue = collisionRecheck
	}
	// A started Training workload: look again when maxRuntime runs out (the pass that records
	// the start arms it after its status write).
	if left := runtimeRemaining(in.pcs, in.now); left > 0 && (p.requeue == 0 || left < p.requeue) {
		p.requeue = left
	}
}
