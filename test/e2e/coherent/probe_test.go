package coherent

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// component is what a Coherent update budgets, of one PodCliqueSet replica: a standalone clique,
// counted in pods, or a scaling group, counted in replicas.
type component struct {
	replica int
	// name is the clique's or the scaling group's name in the template.
	name  string
	group bool
	// replicas is the desired count of units; maxUnavailable how many of them may be unavailable
	// at once during the update (rollingUpdate.maxUnavailable, defaulted to minAvailable under
	// Coherent); minAvailable the component's own.
	replicas, minAvailable, maxUnavailable int32
	// members are a group's cliques (template names) with the Ready pods each needs for a group
	// replica to be available (their minAvailable).
	members []member
}

type member struct {
	name         string
	minAvailable int32
}

func (c component) String() string { return fmt.Sprintf("replica %d %s", c.replica, c.name) }

// componentsOf lists the components of every replica of the PodCliqueSet as stored (defaulted):
// standalone cliques first, in template order, then scaling groups.
func componentsOf(pcs *grovev1alpha1.PodCliqueSet) []component {
	inGroup := map[string]bool{}
	cliques := map[string]*grovev1alpha1.PodCliqueTemplateSpec{}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, n := range g.CliqueNames {
			inGroup[n] = true
		}
	}
	for _, c := range pcs.Spec.Template.Cliques {
		cliques[c.Name] = c
	}
	cliqueMin := func(c *grovev1alpha1.PodCliqueTemplateSpec) int32 {
		return ptr.Deref(c.Spec.MinAvailable, c.Spec.Replicas)
	}
	budget := func(ru *grovev1alpha1.RollingUpdateConfiguration, minAvailable int32) int32 {
		if ru != nil && ru.MaxUnavailable != nil {
			return *ru.MaxUnavailable
		}
		return minAvailable // the Coherent default
	}
	var out []component
	for r := range int(pcs.Spec.Replicas) {
		for _, c := range pcs.Spec.Template.Cliques {
			if inGroup[c.Name] {
				continue
			}
			out = append(out, component{replica: r, name: c.Name, replicas: c.Spec.Replicas, minAvailable: cliqueMin(c),
				maxUnavailable: budget(c.RollingUpdate, cliqueMin(c))})
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			comp := component{replica: r, name: g.Name, group: true, replicas: ptr.Deref(g.Replicas, 1), minAvailable: ptr.Deref(g.MinAvailable, 1)}
			comp.maxUnavailable = budget(g.RollingUpdate, comp.minAvailable)
			for _, n := range g.CliqueNames {
				comp.members = append(comp.members, member{name: n, minAvailable: cliqueMin(cliques[n])})
			}
			out = append(out, comp)
		}
	}
	return out
}

// pods is how many pods the component has at its desired size.
func (c component) pods(pcs *grovev1alpha1.PodCliqueSet) int {
	if !c.group {
		return int(c.replicas)
	}
	n := 0
	for _, m := range c.members {
		for _, t := range pcs.Spec.Template.Cliques {
			if t.Name == m.name {
				n += int(t.Spec.Replicas)
			}
		}
	}
	return n * int(c.replicas)
}

// cliqueOf maps the PodClique names of the component to their cliques' template names.
func (c component) cliqueNames(pcs string) map[string]string {
	out := map[string]string{}
	if !c.group {
		out[grovev1alpha1.PodCliqueName(pcs, c.replica, c.name)] = c.name
		return out
	}
	pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs, c.replica, c.name)
	for j := range int(c.replicas) {
		for _, m := range c.members {
			out[grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, m.name)] = m.name
		}
	}
	return out
}

// counts is what the pods show of a component: ready is its Ready pods (standalone) or available
// replicas (group: every member PodClique with minAvailable Ready pods), not counting pods being
// deleted; updated counts the same of the pods at the newest template only.
type counts struct{ ready, updated int32 }

// count counts the component in pods (by name) of PodCliqueSet pcs; isNew tells a pod at the
// newest template of its clique (template name).
func (c component) count(pcs string, pods map[string]*corev1.Pod, isNew func(clique string, p *corev1.Pod) bool) counts {
	byClique := map[string][2]int32{} // PodClique → Ready, Ready and new
	names := c.cliqueNames(pcs)
	for _, p := range pods {
		clique, ok := names[p.Labels[grovev1alpha1.LabelPodClique]]
		if !ok || !live(p) {
			continue
		}
		n := byClique[p.Labels[grovev1alpha1.LabelPodClique]]
		n[0]++
		if isNew(clique, p) {
			n[1]++
		}
		byClique[p.Labels[grovev1alpha1.LabelPodClique]] = n
	}
	if !c.group {
		n := byClique[grovev1alpha1.PodCliqueName(pcs, c.replica, c.name)]
		return counts{ready: n[0], updated: n[1]}
	}
	var out counts
	pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs, c.replica, c.name)
	for j := range int(c.replicas) {
		avail, availNew := true, true
		for _, m := range c.members {
			n := byClique[grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, m.name)]
			avail = avail && n[0] >= m.minAvailable
			availNew = availNew && n[1] >= m.minAvailable
		}
		if avail {
			out.ready++
		}
		if availNew {
			out.updated++
		}
	}
	return out
}

// live reports a pod that is Ready and not being deleted.
func live(p *corev1.Pod) bool { return p.DeletionTimestamp.IsZero() && ready(p) }

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// triggerEnv is the variable changeTemplateTo sets in a clique's containers.
const triggerEnv = "COHERENT_E2E_REVISION"

// revision maps the cliques (template names) whose template a test changed to the triggerEnv
// value of their newest template.
type revision map[string]string

// has reports a pod running clique's newest template.
func (rv revision) has(clique string, p *corev1.Pod) bool {
	want, ok := rv[clique]
	if !ok {
		return false
	}
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == triggerEnv && e.Value == want {
				return true
			}
		}
	}
	return false
}

// changed reports whether the test changed the component's template: a standalone clique's, or
// one member's of a group.
func (rv revision) changed(c component) bool {
	if !c.group {
		_, ok := rv[c.name]
		return ok
	}
	return slices.ContainsFunc(c.members, func(m member) bool { _, ok := rv[m.name]; return ok })
}

// invariants is the probe a podTracker runs at every pod event of a Coherent update. It checks:
//
//   - budgets: every component of every replica has at least replicas − maxUnavailable units
//     Ready (standalone: Ready pods; group: available replicas), whether it changed or not;
//   - unchanged pods: every pod of keep (name → UID: the pods of the components whose template
//     did not change) is still there with that UID and not being deleted;
//   - one replica at a time, lowest index first: at most one PodCliqueSet replica is part way
//     through its update (a changed component below its full Ready count or with some but not all
//     of it at the newest template), and replicas start in ascending order;
//   - with ratio, the proportion of the changed components (ratioTolerance).
//
// It records violations (the first maxViolations) rather than failing, since it runs on the
// tracker's goroutine; read them once the tracker stopped.
type invariants struct {
	mu        sync.Mutex
	pcs       *grovev1alpha1.PodCliqueSet
	comps     []component
	rev       revision
	keep      map[string]types.UID
	ratio     bool
	tolerance float64
	// started lists the PodCliqueSet replicas in the order their update was first seen.
	started    []int
	violations []string
	events     int
	// maxSkew is the largest spread of the changed components' progress seen, per replica.
	maxSkew map[int]float64
}

const maxViolations = 20

// newInvariants checks pcs (as stored: its budgets defaulted) updated to rev, keeping the pods of
// keep. With ratio it also checks the proportion of the changed components.
func newInvariants(pcs *grovev1alpha1.PodCliqueSet, rev revision, keep map[string]types.UID, ratio bool) *invariants {
	in := &invariants{pcs: pcs, comps: componentsOf(pcs), rev: rev, keep: keep, ratio: ratio, maxSkew: map[int]float64{}}
	var changed []component
	for _, c := range in.comps {
		if c.replica == 0 && rev.changed(c) {
			changed = append(changed, c)
		}
	}
	in.tolerance = ratioTolerance(changed)
	return in
}

// ratioTolerance is "within one unit" for the proportion of the changed components of a replica.
//
// The progress of a changed component c is f_c = updated_c / replicas_c: the fraction of its
// units (pods of a standalone clique, replicas of a group) that are Ready (available) at the new
// template. The new version's capacity is in the target ratio (replicas_P : replicas_D for
// prefill and decode) exactly when every f_c is equal, so the skew max_c f_c − min_c f_c measures
// how far the new capacity is from the target ratio.
//
// A Coherent update moves the changed components in N steps, N = min over changed components of
// ⌊replicas_c / minAvailable_c⌋ when a scaling group changed (one step when only standalone
// cliques did): each step brings ⌊replicas_c / N⌋ or ⌈replicas_c / N⌉ units of every changed
// component to the new template, and replicas_c mod N units of some components are left for the
// end. One unit of skew is therefore one step's share of a component, plus what integer division
// leaves: the tolerance is
//
//	max_c ⌈replicas_c / N⌉ / replicas_c + max_c (replicas_c mod N) / replicas_c.
//
// Within a step the members of the new gang become Ready one by one, so one component may be a
// whole step ahead of another for a moment: that is the first term. A strategy that replaces
// components one after the other (all of prefill, then all of decode) reaches a skew of 1, which
// the tolerance refuses whenever there are at least two steps and no large remainder.
func ratioTolerance(changed []component) float64 {
	if len(changed) < 2 {
		return 1
	}
	steps, group := int32(0), false
	for _, c := range changed {
		group = group || c.group
	}
	for _, c := range changed {
		if n := c.replicas / max(c.minAvailable, 1); group && (steps == 0 || n < steps) {
			steps = n
		}
	}
	steps = max(steps, 1)
	share, left := 0.0, 0.0
	for _, c := range changed {
		if c.replicas == 0 {
			continue
		}
		r := float64(c.replicas)
		share = math.Max(share, math.Ceil(r/float64(steps))/r)
		left = math.Max(left, float64(c.replicas%steps)/r)
	}
	return share + left
}

// widen records a template change of clique mid-update: its pods are no longer kept, and its
// newest template is value.
func (in *invariants) widen(pcsName, clique, value string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.rev = maps(in.rev)
	in.rev[clique] = value
	for name := range in.keep {
		if cliqueOfPodName(in.comps, pcsName, name) == clique {
			delete(in.keep, name)
		}
	}
}

func maps(rv revision) revision {
	out := revision{}
	for k, v := range rv {
		out[k] = v
	}
	return out
}

// cliqueOfPodName is the template clique of a pod named name (a PodClique's name and an index).
func cliqueOfPodName(comps []component, pcs, name string) string {
	for _, c := range comps {
		for pclq, clique := range c.cliqueNames(pcs) {
			if len(name) > len(pclq)+1 && name[:len(pclq)+1] == pclq+"-" {
				if _, err := strconv.Atoi(name[len(pclq)+1:]); err == nil {
					return clique
				}
			}
		}
	}
	return ""
}

func (in *invariants) violate(format string, args ...any) {
	if len(in.violations) < maxViolations {
		in.violations = append(in.violations, fmt.Sprintf("event %d: ", in.events)+fmt.Sprintf(format, args...))
	}
}

// check is the probe.
func (in *invariants) check(pods map[string]*corev1.Pod) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.events++
	name := in.pcs.Name
	progress := map[int][]float64{}
	inProgress := map[int]bool{}
	for _, c := range in.comps {
		n := c.count(name, pods, in.rev.has)
		if least := c.replicas - c.maxUnavailable; n.ready < least {
			in.violate("%s has %d Ready units, below its budget's %d (replicas %d, maxUnavailable %d)", c, n.ready, least, c.replicas, c.maxUnavailable)
		}
		if !in.rev.changed(c) || c.replicas == 0 {
			continue
		}
		progress[c.replica] = append(progress[c.replica], float64(n.updated)/float64(c.replicas))
		if n.ready < c.replicas || (n.updated > 0 && n.updated < c.replicas) {
			inProgress[c.replica] = true
		}
	}
	for pod, uid := range in.keep {
		if p := pods[pod]; p == nil || p.UID != uid || !p.DeletionTimestamp.IsZero() {
			in.violate("pod %s of an unchanged component was deleted or replaced", pod)
			delete(in.keep, pod) // reported once
		}
	}
	if len(inProgress) > 1 {
		in.violate("PodCliqueSet replicas %v are updated at once", keys(intKeys(inProgress)))
	}
	for r := range inProgress {
		if !slices.Contains(in.started, r) {
			if n := len(in.started); n > 0 && in.started[n-1] > r {
				in.violate("replica %d started its update after replica %d", r, in.started[n-1])
			}
			in.started = append(in.started, r)
		}
	}
	if !in.ratio {
		return
	}
	for r, fs := range progress {
		skew := slices.Max(fs) - slices.Min(fs)
		in.maxSkew[r] = math.Max(in.maxSkew[r], skew)
		if skew > in.tolerance+1e-9 {
			in.violate("replica %d: the changed components' progress %v is %.3f apart, more than one unit (%.3f)", r, fs, skew, in.tolerance)
		}
	}
}

func intKeys(m map[int]bool) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[strconv.Itoa(k)] = true
	}
	return out
}

// result returns the violations and the replicas in the order they started.
func (in *invariants) result() ([]string, []int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.violations), slices.Clone(in.started)
}

// keptPods maps the pods of the components whose template rev does not change to their UIDs.
func keptPods(pcs *grovev1alpha1.PodCliqueSet, pods []corev1.Pod, rev revision) map[string]types.UID {
	unchanged := map[string]bool{}
	for _, c := range componentsOf(pcs) {
		if rev.changed(c) {
			continue
		}
		for pclq := range c.cliqueNames(pcs.Name) {
			unchanged[pclq] = true
		}
	}
	out := map[string]types.UID{}
	for _, p := range pods {
		if unchanged[p.Labels[grovev1alpha1.LabelPodClique]] {
			out[p.Name] = p.UID
		}
	}
	return out
}

// sortedInts is a sorted copy.
func sortedInts(s []int) []int {
	out := slices.Clone(s)
	sort.Ints(out)
	return out
}
