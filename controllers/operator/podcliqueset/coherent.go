package podcliqueset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/coherent"
)

// Events of Coherent updates.
const (
	// EventCoherentStep: a step of a replica's Coherent update was recorded and is being taken.
	EventCoherentStep = "CoherentUpdateStep"
	// EventCoherentWaiting: a replica's Coherent update waits (the message says for what).
	EventCoherentWaiting = "CoherentUpdateWaiting"
)

// coherentPass is what a pass of a Coherent PodCliqueSet decided of its replicas' PodGangMaps.
type coherentPass struct {
	// entries are each replica's PodGangMap entries after this pass.
	entries map[int][]coherent.Entry
	// turn is the replica being updated (-1 when none is); step its decision.
	turn int
	step coherent.Decision
	// allow says which replicas' children take the newest template: those at it, and the turn's.
	allow map[int]bool
	// scope are the changed components (template names) of the update in progress.
	scope []string
}

// isCoherent reports whether the PodCliqueSet rolls with the Coherent strategy.
func isCoherent(pcs *grovev1alpha1.PodCliqueSet) bool {
	return children.UpdateStrategy(pcs) == grovev1alpha1.CoherentStrategy && !children.IsTraining(pcs)
}

// coherentReplicas decides, under Coherent, every replica's PodGangMap: a new replica's layout,
// a replica at rest following its components' sizes, and the next step of the update of the one
// replica whose turn it is (the lowest index not at the newest template). The maps are written
// before any child is touched (p.maps), so a restarted operator continues the same step. The
// update's scope — the components whose template changed — is recorded in status when the
// update starts (a change during it adds to it).
func (p *plan) coherentReplicas(in input) *coherentPass {
	pcs, obs := in.pcs, in.obs
	hash := children.GenerationHash(pcs)
	cp := &coherentPass{entries: map[int][]coherent.Entry{}, turn: -1, allow: map[int]bool{}}
	cp.scope = p.coherentScope(in, hash)
	replicas := int(pcs.Spec.Replicas)
	comps := make([][]coherent.Component, replicas)
	for i := range replicas {
		comps[i] = components(pcs, i, obs)
		have := obs.maps[grovev1alpha1.PodGangMapName(pcs.Name, i)]
		key := "PodGangMap/" + grovev1alpha1.PodGangMapName(pcs.Name, i)
		switch {
		case have == nil && (obs.unseen.Has(key) || obs.collided[key]):
			// Made by an earlier pass and not in the cache yet (or another owner holds the name):
			// nothing of the replica is planned until its map is read.
			continue
		case have == nil || len(have.Spec.Entries) == 0:
			cp.entries[i] = coherent.Bootstrap(comps[i], replicaRevision(i, obs, hash), coherent.NextEpoch(nil, in.now))
		default:
			cp.entries[i] = withoutGone(have.Spec.Entries, comps[i])
		}
	}
	// The turn: the replica recorded as being updated, until its update is done (its last step's
	// gangs and pods Ready, not only its map at the new revision); then the lowest replica with
	// entries of an older revision. A new turn is recorded before any of it is acted on.
	recorded := -1
	if r, ok := pcs.CoherentUpdate(); ok && r < replicas {
		recorded = r
	}
	next := func(i int) coherent.Decision {
		return coherent.Next(coherent.Update{Entries: cp.entries[i], Hash: hash, Scope: inScope(comps[i], cp.scope, pcs.Name, i),
			Observed: observeReplica(pcs, i, cp.entries[i], hash, obs), Now: in.now})
	}
	if recorded >= 0 && cp.entries[recorded] != nil {
		if d := next(recorded); !d.Done {
			cp.turn, cp.step = recorded, d
		}
	}
	for i := 0; i < replicas && cp.turn < 0; i++ {
		if cp.entries[i] != nil && !coherent.SingleRevision(cp.entries[i], hash) {
			cp.turn, cp.step = i, next(i)
		}
	}
	if cp.turn != recorded && (pcs.Status.UpdateProgress != nil || p.record != nil) {
		p.recordTurn(in, cp.turn)
	}
	for i := range replicas {
		entries := cp.entries[i]
		if entries == nil {
			continue
		}
		switch {
		case i == cp.turn:
			entries = cp.step.Entries
		case cp.turn >= 0 && !coherent.SingleRevision(entries, hash):
			// Waiting for its turn: sizes are held while the update runs, and a component the
			// template gained is made at the new revision in the replica's own steps.
		case coherent.SingleRevision(entries, entries[0].PodCliqueSetGenerationHash):
			entries = coherent.Steady(entries, comps[i], entries[0].PodCliqueSetGenerationHash, in.now)
		}
		cp.entries[i] = entries
		cp.allow[i] = cp.turn == i || coherent.SingleRevision(entries, hash)
		p.podGangMap(in, i, obs.maps[grovev1alpha1.PodGangMapName(pcs.Name, i)], entries)
	}
	return cp
}

// withoutGone drops from a replica's entries the standalone cliques and scaling groups the
// template no longer has (their PodCliques are deleted): a gang must not wait for their pods.
func withoutGone(entries []coherent.Entry, comps []coherent.Component) []coherent.Entry {
	known := map[string]bool{}
	for _, c := range comps {
		known[c.Key] = true
	}
	out := make([]coherent.Entry, len(entries))
	for i := range entries {
		entries[i].DeepCopyInto(&out[i])
		for k := range out[i].PodCliques {
			if !known[k] {
				delete(out[i].PodCliques, k)
			}
		}
		for k := range out[i].PCSGReplicaIndices {
			if !known[k] {
				delete(out[i].PCSGReplicaIndices, k)
			}
		}
	}
	return out
}

// recordTurn records which replica a Coherent update replaces now (none: -1) before the pass acts
// on it: a restarted operator keeps that replica's turn until its update is done.
func (p *plan) recordTurn(in input, turn int) {
	st := p.recorded(in)
	if st.UpdateProgress == nil {
		return
	}
	st.UpdateProgress.CurrentlyUpdating = nil
	if turn >= 0 {
		st.UpdateProgress.CurrentlyUpdating = []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: int32(turn), UpdateStartedAt: metav1.NewTime(in.now)}}
	}
}

// coherentScope is the update's scope, recorded (p.record) when an update starts: the standalone
// cliques and scaling groups whose template differs from what a replica's children run — all of
// them when only something every pod shares changed — added to the scope of an update still in
// progress.
func (p *plan) coherentScope(in input, hash string) []string {
	pcs := in.pcs
	st := pcs.Status
	if st.CurrentGenerationHash != nil && *st.CurrentGenerationHash == hash {
		if st.UpdateProgress == nil || st.UpdateProgress.UpdateEndedAt != nil {
			return nil
		}
		return append(slices.Clone(st.UpdateProgress.InScopeStandalonePodCliques), st.UpdateProgress.InScopePodCliqueScalingGroups...)
	}
	if st.CurrentGenerationHash == nil && !childrenAtAnother(in.obs, hash) {
		return nil // a new PodCliqueSet: nothing to update
	}
	standalone, groups := changedComponents(pcs, in.obs)
	if len(standalone)+len(groups) == 0 {
		for _, c := range standaloneCliques(pcs) {
			standalone = append(standalone, c.Name)
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			groups = append(groups, g.Name)
		}
	}
	rec := p.recorded(in)
	rec.CurrentGenerationHash = ptr.To(hash)
	progress := &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: metav1.NewTime(in.now)}
	if prev := st.UpdateProgress; prev != nil && prev.UpdateEndedAt == nil {
		standalone = union(standalone, prev.InScopeStandalonePodCliques)
		groups = union(groups, prev.InScopePodCliqueScalingGroups)
		progress.CurrentlyUpdating = prev.CurrentlyUpdating
	}
	progress.InScopeStandalonePodCliques, progress.InScopePodCliqueScalingGroups = standalone, groups
	rec.UpdateProgress = progress
	return append(slices.Clone(standalone), groups...)
}

// childrenAtAnother reports whether a child carries another revision than hash.
func childrenAtAnother(obs *observed, hash string) bool {
	for _, c := range obs.cliques {
		if c.Spec.PodCliqueSetGenerationHash != "" && c.Spec.PodCliqueSetGenerationHash != hash {
			return true
		}
	}
	for _, g := range obs.groups {
		if g.Spec.PodCliqueSetGenerationHash != "" && g.Spec.PodCliqueSetGenerationHash != hash {
			return true
		}
	}
	return false
}

// changedComponents names the standalone cliques and scaling groups whose template differs from
// what some replica's PodCliques run (their pod spec, role, labels or annotations).
func changedComponents(pcs *grovev1alpha1.PodCliqueSet, obs *observed) (standalone, groups []string) {
	differs := func(pclq *grovev1alpha1.PodClique, tmpl *grovev1alpha1.PodCliqueTemplateSpec) bool {
		if !equality.Semantic.DeepEqual(pclq.Spec.PodSpec, tmpl.Spec.PodSpec) || pclq.Spec.RoleName != tmpl.Role() {
			return true
		}
		for k, v := range tmpl.Labels {
			if pclq.Labels[k] != v {
				return true
			}
		}
		for k, v := range tmpl.Annotations {
			if pclq.Annotations[k] != v {
				return true
			}
		}
		return false
	}
	changed, seen := map[string]bool{}, map[string]bool{}
	for _, pclq := range obs.cliques {
		name := templateCliqueOf(pcs, pclq)
		seen[name] = true
		if tmpl := children.Template(pcs, name); tmpl != nil && differs(pclq, tmpl) {
			changed[name] = true
		}
	}
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !seen[c.Name] {
			changed[c.Name] = true // the template gained it: it comes up in the update's steps
		}
	}
	for _, c := range standaloneCliques(pcs) {
		if changed[c.Name] {
			standalone = append(standalone, c.Name)
		}
	}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if slices.ContainsFunc(g.CliqueNames, func(c string) bool { return changed[c] }) {
			groups = append(groups, g.Name)
		}
	}
	return standalone, groups
}

// templateCliqueOf is the template clique a PodClique is made from (its name's last part).
func templateCliqueOf(pcs *grovev1alpha1.PodCliqueSet, pclq *grovev1alpha1.PodClique) string {
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && strings.HasSuffix(pclq.Name, "-"+c.Name) {
			return c.Name
		}
	}
	return ""
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// components are a replica's standalone cliques and scaling groups as the plan counts them:
// their sizes now (the PodClique's or group's own once it exists: kubectl scale and autoscalers
// change it), their minAvailable and their budget.
func components(pcs *grovev1alpha1.PodCliqueSet, i int, obs *observed) []coherent.Component {
	var out []coherent.Component
	for _, c := range standaloneCliques(pcs) {
		name := grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name)
		comp := coherent.Component{Key: name, Replicas: c.Spec.Replicas, MinAvailable: ptr.Deref(c.Spec.MinAvailable, max(c.Spec.Replicas, 1))}
		if have := obs.cliques[name]; have != nil {
			comp.Replicas = have.Spec.Replicas
		}
		comp.MaxUnavailable = comp.MinAvailable
		if ru := c.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
			comp.MaxUnavailable = *ru.MaxUnavailable
		}
		out = append(out, comp)
	}
	for gi := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[gi]
		comp := coherent.Component{Key: g.Name, Group: true, Replicas: children.GroupReplicas(g), MinAvailable: children.GroupMinAvailable(g)}
		if have := obs.groups[grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name)]; have != nil {
			comp.Replicas = have.Spec.Replicas
		}
		comp.MaxUnavailable = comp.MinAvailable
		if ru := g.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
			comp.MaxUnavailable = *ru.MaxUnavailable
		}
		out = append(out, comp)
	}
	return out
}

// inScope are the components of the scope, keyed as the PodGangMap keys them.
func inScope(comps []coherent.Component, scope []string, pcs string, i int) []coherent.Component {
	var out []coherent.Component
	for _, c := range comps {
		name := c.Key
		if !c.Group {
			name = strings.TrimPrefix(c.Key, pcs+"-"+strconv.Itoa(i)+"-")
		}
		if slices.Contains(scope, name) {
			out = append(out, c)
		}
	}
	return out
}

// replicaRevision is the revision a replica's children run (a replica made before its PodGangMap
// existed keeps its revision until its turn), the newest when it has none yet.
func replicaRevision(i int, obs *observed, hash string) string {
	idx := strconv.Itoa(i)
	for _, c := range obs.cliques {
		if c.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx && c.Spec.PodCliqueSetGenerationHash != "" {
			return c.Spec.PodCliqueSetGenerationHash
		}
	}
	return hash
}

// observeReplica is what the turn's step waits for, from the replica's PodGangs and pods: a pod
// counts for the gang its grove.io/podgang label names (pods an update replaced carry their new
// gang), a scaling-group replica is available when each member PodClique has minAvailable Ready
// pods in the replica's gang.
func observeReplica(pcs *grovev1alpha1.PodCliqueSet, i int, entries []coherent.Entry, hash string, obs *observed) coherent.Observed {
	o := coherent.Observed{ReadyEpochs: map[string]bool{}, UpdatedReady: map[string]int32{}, OldReady: map[string]int32{}, Available: map[string][]int32{}, Whole: map[string][]int32{}}
	gangs := coherent.Gangs(pcs.Name, i, entries)
	current := map[string]bool{}
	notReady := map[string]bool{}
	for _, g := range gangs {
		current[g.Name] = g.Entry.PodCliqueSetGenerationHash == hash
		if pg := obs.gangs[g.Name]; pg == nil || !podGroupsReady(pg, obs.pods) {
			notReady[g.Entry.Epoch] = true
		}
	}
	for _, g := range gangs {
		if !notReady[g.Entry.Epoch] {
			o.ReadyEpochs[g.Entry.Epoch] = true
		}
	}
	ready := func(p *corev1.Pod) bool {
		return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue })
	}
	for _, c := range standaloneCliques(pcs) {
		name := grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name)
		for _, pod := range obs.pods[name] {
			if !ready(pod) {
				continue
			}
			if current[pod.Labels[grovev1alpha1.LabelPodGang]] {
				o.UpdatedReady[name]++
			} else {
				o.OldReady[name]++
			}
		}
	}
	for gi := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[gi]
		pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name)
		replicas := children.GroupReplicas(g)
		if have := obs.groups[pcsg]; have != nil {
			replicas = have.Spec.Replicas
		}
		for j := range replicas {
			gang := coherent.GroupReplicaGang(gangs, g.Name, j)
			if gang == nil {
				continue
			}
			available, whole := true, true
			for _, clique := range g.CliqueNames {
				name := grovev1alpha1.ScalingGroupPodCliqueName(pcsg, int(j), clique)
				pclq := obs.cliques[name]
				if pclq == nil {
					available, whole = false, false
					break
				}
				n := int32(0)
				for _, pod := range obs.pods[name] {
					if ready(pod) && pod.Labels[grovev1alpha1.LabelPodGang] == gang.Name {
						n++
					}
				}
				available = available && n >= minAvailable(pclq)
				whole = whole && n >= pclq.Spec.Replicas
			}
			if available {
				o.Available[g.Name] = append(o.Available[g.Name], j)
			}
			if whole {
				o.Whole[g.Name] = append(o.Whole[g.Name], j)
			}
		}
	}
	return o
}

// podGangMap plans a replica's PodGangMap write: created when missing, updated when its entries
// changed.
func (p *plan) podGangMap(in input, i int, have *grovev1alpha1.PodGangMap, entries []coherent.Entry) {
	pcs := in.pcs
	if have != nil && equality.Semantic.DeepEqual(have.Spec.Entries, entries) {
		return
	}
	if have == nil {
		want := &grovev1alpha1.PodGangMap{
			ObjectMeta: metav1.ObjectMeta{Name: grovev1alpha1.PodGangMapName(pcs.Name, i), Namespace: pcs.Namespace, Labels: children.ReplicaLabels(pcs.Name, i)},
			Spec:       grovev1alpha1.PodGangMapSpec{PodCliqueSetReplicaIndex: int32(i), Entries: entries},
		}
		want.Labels[grovev1alpha1.LabelComponent] = grovev1alpha1.ComponentPodGangMap
		key := "PodGangMap/" + want.Name
		if in.obs.unseen.Has(key) || in.obs.collided[key] {
			return
		}
		setOwner(pcs, want)
		p.maps = append(p.maps, change{verb: create, obj: want, reason: "the replica's gang layout is recorded"})
		return
	}
	updated := have.DeepCopy()
	updated.Spec.Entries = entries
	p.maps = append(p.maps, change{verb: update, obj: updated, reason: "the replica's gangs changed"})
}

// coherentGangs are a replica's PodGangs as its PodGangMap entries make them.
func coherentGangs(pcs *grovev1alpha1.PodCliqueSet, i int, entries []coherent.Entry, obs *observed) []gang {
	gangs := coherent.Gangs(pcs.Name, i, entries)
	var out []gang
	for _, cg := range gangs {
		g := gang{name: cg.Name, entry: &cg.Entry}
		for _, c := range standaloneCliques(pcs) {
			name := grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name)
			n := cg.Standalone[name]
			if n == 0 {
				continue
			}
			m := memberOf(name, c, obs)
			// The division is the map's alone (coherent.Shares); the PodClique's revision only
			// marks which shares are current, which the gang does not need.
			for _, s := range coherent.Shares(gangs, name, "") {
				if s.PodGang == cg.Name {
					m.from, m.replicas = s.From, s.Replicas
				}
			}
			m.minAvailable = min(m.minAvailable, m.replicas)
			g.members = append(g.members, m)
		}
		for _, gname := range slices.Sorted(maps.Keys(cg.Groups)) {
			cfg := groupConfig(pcs, gname)
			if cfg == nil {
				continue
			}
			pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, gname)
			for _, j := range cg.Groups[gname] {
				for _, clique := range cfg.CliqueNames {
					if tmpl := children.Template(pcs, clique); tmpl != nil {
						g.members = append(g.members, memberOf(grovev1alpha1.ScalingGroupPodCliqueName(pcsg, int(j), clique), tmpl, obs))
					}
				}
			}
		}
		if g = withoutIdle(g); len(g.members) > 0 {
			out = append(out, g)
		}
	}
	return out
}

func groupConfig(pcs *grovev1alpha1.PodCliqueSet, name string) *grovev1alpha1.PodCliqueScalingGroupConfig {
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if pcs.Spec.Template.PodCliqueScalingGroupConfigs[i].Name == name {
			return &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		}
	}
	return nil
}

// stepMessage says what a replica's Coherent update is doing or waiting for.
func stepMessage(i int, d coherent.Decision) string {
	switch {
	case d.Waiting != "":
		return fmt.Sprintf("replica %d waits for %s", i, d.Waiting)
	case d.Step != "":
		return fmt.Sprintf("replica %d: step %d of %d (%s) brings up epoch %s", i, d.Number, d.Steps, d.Step, strings.Join(d.InFlight, ","))
	}
	return ""
}

// coherentWaitingChanged logs and tells, once the status carrying it is written, what a replica's
// Coherent update now waits for (once per change of the reason, not each pass).
func coherentWaitingChanged(ctx context.Context, r *Reconciler, pcs *grovev1alpha1.PodCliqueSet, old grovev1alpha1.PodCliqueSetStatus) {
	msg := func(st grovev1alpha1.PodCliqueSetStatus) string {
		if p := st.UpdateProgress; p != nil && len(p.CurrentlyUpdating) == 1 {
			return ptr.Deref(p.CurrentlyUpdating[0].Message, "")
		}
		return ""
	}
	now, before := msg(pcs.Status), msg(old)
	if now == before || !strings.Contains(now, " waits for ") {
		return
	}
	logf.FromContext(ctx).Info("coherent update waiting", "message", now)
	r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, EventCoherentWaiting, "Update", "%s", now)
}

// NewReplicaGangs are, under Coherent, the PodGangs of a replica made from nothing, as its first
// PodGangMap lays them out at epoch 0 (kubectl grove render shows them so; the operator's epochs
// are times). nil for another strategy.
func NewReplicaGangs(pcs *grovev1alpha1.PodCliqueSet, replica int) []coherent.Gang {
	if !isCoherent(pcs) {
		return nil
	}
	obs := &observed{cliques: map[string]*grovev1alpha1.PodClique{}, groups: map[string]*grovev1alpha1.PodCliqueScalingGroup{}}
	entries := coherent.Bootstrap(components(pcs, replica, obs), children.GenerationHash(pcs), coherent.NextEpoch(nil, time.Time{}))
	return coherent.Gangs(pcs.Name, replica, entries)
}
