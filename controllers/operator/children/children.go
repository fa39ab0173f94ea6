// Package children builds the objects the grove-operator derives from a PodCliqueSet — the
// PodCliques of a replica or of a scaling-group replica, and their labels — so the PodCliqueSet
// and PodCliqueScalingGroup reconcilers build them the same way.
package children

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// ReplicaLabels are the labels of every object of one PodCliqueSet replica.
func ReplicaLabels(pcs string, replica int) map[string]string {
	return map[string]string{
		grovev1alpha1.LabelManagedBy:                grovev1alpha1.LabelManagedByValue,
		grovev1alpha1.LabelPartOf:                   pcs,
		grovev1alpha1.LabelPodCliqueSetReplicaIndex: strconv.Itoa(replica),
	}
}

// ScalingGroup identifies the scaling-group replica a PodClique belongs to.
type ScalingGroup struct {
	// Name is the PodCliqueScalingGroup's name.
	Name string
	// ConfigName is the scaling group's name in the PodCliqueSet template.
	ConfigName string
	// Replica is the scaling-group replica index.
	Replica int
	// TemplateNumPods is the number of pods of one scaling-group replica.
	TemplateNumPods int32
}

// PodClique builds the PodClique of one clique of a PodCliqueSet replica (group nil) or of a
// scaling-group replica. podGang is the PodGang its pods join. Everything its reconciler needs
// of the PodCliqueSet is in its spec: the parent PodCliques resolved by name, the inherited
// settings, and a group member's pods per group replica.
func PodClique(pcs *grovev1alpha1.PodCliqueSet, replica int, tmpl *grovev1alpha1.PodCliqueTemplateSpec,
	group *ScalingGroup, podGang string) *grovev1alpha1.PodClique {
	return CliquesOf(pcs).PodClique(replica, tmpl, group, podGang)
}

// Cliques builds a PodCliqueSet's PodCliques with the hash of its generation computed once: a
// scaling group builds every member on each pass (200 in make bench's rolling update), and the
// hash, one per member, was a twentieth of the grove-operator's CPU there.
type Cliques struct {
	pcs  *grovev1alpha1.PodCliqueSet
	hash string
}

// CliquesOf starts building the PodCliqueSet's PodCliques.
func CliquesOf(pcs *grovev1alpha1.PodCliqueSet) Cliques {
	return Cliques{pcs: pcs, hash: GenerationHash(pcs)}
}

// PodClique is PodClique of the package with the hash computed once.
func (c Cliques) PodClique(replica int, tmpl *grovev1alpha1.PodCliqueTemplateSpec, group *ScalingGroup, podGang string) *grovev1alpha1.PodClique {
	pcs := c.pcs
	name := grovev1alpha1.PodCliqueName(pcs.Name, replica, tmpl.Name)
	labels := ReplicaLabels(pcs.Name, replica)
	spec := grovev1alpha1.PodCliqueObjectSpec{PodCliqueSpec: *tmpl.Spec.DeepCopy(), InheritedSpec: inherited(pcs, c.hash, tmpl.Spec.Replicas)}
	spec.RoleName = tmpl.Role()
	if group == nil {
		spec.RollingUpdate = tmpl.RollingUpdate.DeepCopy() // a member is replaced with its group replica
	}
	if group != nil {
		name = grovev1alpha1.ScalingGroupPodCliqueName(group.Name, group.Replica, tmpl.Name)
		labels[grovev1alpha1.LabelPodCliqueScalingGroup] = group.Name
		labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex] = strconv.Itoa(group.Replica)
		spec.ScalingGroupTemplateNumPods = ptr.To(group.TemplateNumPods)
		spec.ScalingGroupPodIndexOffset = ptr.To(groupPodIndexOffset(pcs, group.ConfigName, tmpl.Name))
	}
	for k, v := range tmpl.Labels {
		if _, reserved := labels[k]; !reserved {
			labels[k] = v
		}
	}
	labels[grovev1alpha1.LabelPodGang] = podGang
	if base := grovev1alpha1.BasePodGangName(pcs.Name, replica); podGang != base {
		labels[grovev1alpha1.LabelBasePodGang] = base // a scaled gang's members name their base gang, as upstream's do
	}
	spec.StartsAfter = resolveParents(pcs, replica, ParentCliques(pcs, tmpl.Name), group)
	spec.StartsAfterSucceeded = nil
	if explicitStartup(pcs) && len(tmpl.Spec.StartsAfterSucceeded) > 0 {
		spec.StartsAfterSucceeded = resolveParents(pcs, replica, tmpl.Spec.StartsAfterSucceeded, group)
	}
	if spec.MinAvailable == nil {
		spec.MinAvailable = ptr.To(max(spec.Replicas, 1))
	}
	spec.ScaleConfig = nil // the PodCliqueSet owns the autoscaler; the PodClique is its target
	spec.SharedResourceClaims = SharedResourceClaims(pcs, replica, tmpl.Name, group)
	spec.ResourceSharing = slices.Clone(tmpl.ResourceSharing)
	spec.ResourceClaimTemplates = templatesOf(pcs, tmpl.ResourceSharing)
	if group := pcs.MNNVLGroup(tmpl); group != "" {
		spec.ComputeDomainClaimTemplate = grovev1alpha1.ComputeDomainName(pcs.Name, replica, group)
	}
	return &grovev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pcs.Namespace, Labels: labels, Annotations: maps.Clone(tmpl.Annotations)},
		Spec:       spec,
	}
}

// Inherited is what a child of the PodCliqueSet takes from it, with the template's replica count.
func Inherited(pcs *grovev1alpha1.PodCliqueSet, templateReplicas int32) grovev1alpha1.InheritedSpec {
	return inherited(pcs, GenerationHash(pcs), templateReplicas)
}

func inherited(pcs *grovev1alpha1.PodCliqueSet, hash string, templateReplicas int32) grovev1alpha1.InheritedSpec {
	workload := pcs.Spec.WorkloadType
	if workload == "" {
		workload = grovev1alpha1.WorkloadTypeInference
	}
	return grovev1alpha1.InheritedSpec{
		PodCliqueSetGenerationHash: hash,
		UpdateStrategy:             UpdateStrategy(pcs),
		WorkloadType:               workload,
		TemplateReplicas:           ptr.To(templateReplicas),
	}
}

// ParentCliques returns the template names of the cliques a clique waits for under the
// PodCliqueSet's startup type.
func ParentCliques(pcs *grovev1alpha1.PodCliqueSet, clique string) []string {
	startup := grovev1alpha1.CliqueStartupTypeAnyOrder
	if pcs.Spec.Template.StartupType != nil {
		startup = *pcs.Spec.Template.StartupType
	}
	cliques := pcs.Spec.Template.Cliques
	switch startup {
	case grovev1alpha1.CliqueStartupTypeInOrder:
		for i, c := range cliques {
			if c.Name == clique && i > 0 {
				return []string{cliques[i-1].Name}
			}
		}
	case grovev1alpha1.CliqueStartupTypeExplicit:
		for _, c := range cliques {
			if c.Name == clique {
				return append(slices.Clone(c.Spec.StartsAfter), c.Spec.StartsAfterSucceeded...)
			}
		}
	}
	return nil
}

// Template returns the clique template of that name.
func Template(pcs *grovev1alpha1.PodCliqueSet, clique string) *grovev1alpha1.PodCliqueTemplateSpec {
	for _, c := range pcs.Spec.Template.Cliques {
		if c.Name == clique {
			return c
		}
	}
	return nil
}

// GroupOf returns the scaling group a clique belongs to, or nil when it is standalone.
func GroupOf(pcs *grovev1alpha1.PodCliqueSet, clique string) *grovev1alpha1.PodCliqueScalingGroupConfig {
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		for _, n := range g.CliqueNames {
			if n == clique {
				return g
			}
		}
	}
	return nil
}

// GroupReplicas and GroupMinAvailable read a scaling group's counts with their defaults.
func GroupReplicas(g *grovev1alpha1.PodCliqueScalingGroupConfig) int32 {
	if g.Replicas == nil {
		return 1
	}
	return *g.Replicas
}

// GroupMinAvailable returns a scaling group's minAvailable (default 1).
func GroupMinAvailable(g *grovev1alpha1.PodCliqueScalingGroupConfig) int32 {
	if g.MinAvailable == nil {
		return 1
	}
	return *g.MinAvailable
}

// GroupTemplateNumPods is the number of pods of one scaling-group replica.
func GroupTemplateNumPods(pcs *grovev1alpha1.PodCliqueSet, g *grovev1alpha1.PodCliqueScalingGroupConfig) int32 {
	var n int32
	for _, name := range g.CliqueNames {
		if t := Template(pcs, name); t != nil {
			n += t.Spec.Replicas
		}
	}
	return n
}

// groupPodIndexOffset is where a member clique's pods' indices start within one replica of the
// scaling group configName: the replicas of the member cliques before it in cliqueNames.
func groupPodIndexOffset(pcs *grovev1alpha1.PodCliqueSet, configName, clique string) int32 {
	var n int32
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if g.Name != configName {
			continue
		}
		for _, name := range g.CliqueNames {
			if name == clique {
				return n
			}
			if t := Template(pcs, name); t != nil {
				n += t.Spec.Replicas
			}
		}
	}
	return n
}

func explicitStartup(pcs *grovev1alpha1.PodCliqueSet) bool {
	return pcs.Spec.Template.StartupType != nil && *pcs.Spec.Template.StartupType == grovev1alpha1.CliqueStartupTypeExplicit
}

// resolveParents maps parent clique names to the PodClique names a clique's pods wait for within
// the same PodCliqueSet replica: a standalone parent is that replica's PodClique; a parent in the
// dependent's own scaling group is the PodClique of the same group replica; a parent in another
// scaling group is that group's PodCliques in the base gang (replicas below minAvailable), the
// ones guaranteed to be scheduled together with the dependent.
func resolveParents(pcs *grovev1alpha1.PodCliqueSet, replica int, parents []string, group *ScalingGroup) []string {
	var names []string
	for _, parent := range parents {
		g := GroupOf(pcs, parent)
		switch {
		case g == nil:
			names = append(names, grovev1alpha1.PodCliqueName(pcs.Name, replica, parent))
		case group != nil && g.Name == group.ConfigName:
			names = append(names, grovev1alpha1.ScalingGroupPodCliqueName(group.Name, group.Replica, parent))
		default:
			pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replica, g.Name)
			// A group at 0 replicas is idle and holds back nobody: it has no PodCliques to wait for.
			for j := 0; j < int(min(GroupMinAvailable(g), GroupReplicas(g))); j++ {
				names = append(names, grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, parent))
			}
		}
	}
	return names
}

// PodGangOfGroupReplica names the PodGang of a scaling-group replica: the base gang for the
// first minAvailable replicas, a scaled gang of its own for each one beyond.
func PodGangOfGroupReplica(pcs string, replica int, pcsg string, groupReplica, minAvailable int) string {
	if groupReplica < minAvailable {
		return grovev1alpha1.BasePodGangName(pcs, replica)
	}
	return grovev1alpha1.ScaledPodGangName(pcsg, groupReplica, minAvailable)
}

// Hash is a short stable hash of values, for template identities.
func Hash(values ...any) string {
	data, _ := json.Marshal(values)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10]
}

// UserAnnotations drops grove.io/ annotations, which are the operator's own (earlier versions
// kept rollout bookkeeping in them) and must not make pods look outdated.
func UserAnnotations(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range annotations {
		if !strings.HasPrefix(k, "grove.io/") {
			out[k] = v
		}
	}
	return out
}

// GenerationHash identifies what of a PodCliqueSet's template its pods are made from; replica
// counts and scaling settings are left out, so scaling never rolls pods.
func GenerationHash(pcs *grovev1alpha1.PodCliqueSet) string {
	type clique struct {
		Name        string
		Labels      map[string]string
		Annotations map[string]string
		RoleName    string
		PodSpec     any
	}
	var cliques []clique
	for _, c := range pcs.Spec.Template.Cliques {
		cliques = append(cliques, clique{c.Name, c.Labels, c.Annotations, c.Role(), c.Spec.PodSpec})
	}
	return Hash(cliques, pcs.Spec.Template.PriorityClassName)
}

// UpdateStrategy returns the PodCliqueSet's update strategy (default RollingRecreate).
func UpdateStrategy(pcs *grovev1alpha1.PodCliqueSet) grovev1alpha1.UpdateStrategyType {
	if s := pcs.Spec.UpdateStrategy; s != nil && s.Type != "" {
		return s.Type
	}
	return grovev1alpha1.RollingRecreateStrategy
}

// IsTraining reports whether the PodCliqueSet runs to completion.
func IsTraining(pcs *grovev1alpha1.PodCliqueSet) bool {
	return pcs.Spec.WorkloadType == grovev1alpha1.WorkloadTypeTraining
}

// Updated returns a copy of have carrying want's spec (the one spec points to) and want's labels
// and annotations — those others added (kubectl annotate) stay — and whether it differs from
// have: a child is written only when it does. A child that does not differ is not copied: have
// itself comes back, to be read only. A pass compares every child of its parent, and copying
// each whole object (status and managed fields too) to compare it took a tenth of the
// grove-operator's CPU in make bench's rolling update of 200 cliques (a CPU profile).
func Updated[T client.Object, S any](have, want T, spec func(T) *S) (T, bool) {
	if equality.Semantic.DeepEqual(spec(have), spec(want)) && Holds(have.GetLabels(), want.GetLabels()) &&
		Holds(have.GetAnnotations(), want.GetAnnotations()) {
		return have, false
	}
	updated := have.DeepCopyObject().(T)
	*spec(updated) = *spec(want)
	updated.SetLabels(Merged(updated.GetLabels(), want.GetLabels()))
	updated.SetAnnotations(Merged(updated.GetAnnotations(), want.GetAnnotations()))
	return updated, true
}

// CliqueSpec and GroupSpec point Updated at a PodClique's and a PodCliqueScalingGroup's spec.
func CliqueSpec(p *grovev1alpha1.PodClique) *grovev1alpha1.PodCliqueObjectSpec { return &p.Spec }

// GroupSpec: see CliqueSpec.
func GroupSpec(g *grovev1alpha1.PodCliqueScalingGroup) *grovev1alpha1.PodCliqueScalingGroupSpec {
	return &g.Spec
}

// Holds reports whether m has every entry of sub, with its value: a wanted label whose value is
// empty is held only when the key is there (an empty label is not an absent one).
func Holds(m, sub map[string]string) bool {
	for k, v := range sub {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Merged returns a copy of into with every entry of from set.
func Merged(into, from map[string]string) map[string]string {
	out := maps.Clone(into)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, from)
	return out
}

// SharedResourceClaims are the ResourceClaims of the PodCliqueSet's and the scaling group's
// resourceSharing entries that reach a clique of replica (group nil when standalone), in the
// order upstream Grove wires them into pods: each level's AllReplicas claims, then its PerReplica
// ones.
func SharedResourceClaims(pcs *grovev1alpha1.PodCliqueSet, replica int, clique string, group *ScalingGroup) []string {
	var out []string
	groupConfig := ""
	if group != nil {
		groupConfig = group.ConfigName
	}
	var pcsEntries []grovev1alpha1.ResourceSharingSpec
	for i := range pcs.Spec.Template.ResourceSharing {
		if e := &pcs.Spec.Template.ResourceSharing[i]; e.Matches(clique, groupConfig) {
			pcsEntries = append(pcsEntries, e.ResourceSharingSpec)
		}
	}
	out = append(out, claimNames(pcs.Name, pcsEntries, replica)...)
	if group == nil {
		return out
	}
	if g := GroupOf(pcs, clique); g != nil {
		var groupEntries []grovev1alpha1.ResourceSharingSpec
		for i := range g.ResourceSharing {
			if e := &g.ResourceSharing[i]; e.Matches(clique) {
				groupEntries = append(groupEntries, e.ResourceSharingSpec)
			}
		}
		out = append(out, claimNames(group.Name, groupEntries, group.Replica)...)
	}
	return out
}

// claimNames names an owner's claims for one of its replicas: AllReplicas entries first.
func claimNames(owner string, entries []grovev1alpha1.ResourceSharingSpec, replica int) []string {
	var out []string
	for _, scope := range []grovev1alpha1.ResourceSharingScope{grovev1alpha1.ResourceSharingScopeAllReplicas, grovev1alpha1.ResourceSharingScopePerReplica} {
		for _, e := range entries {
			if e.Scope == scope {
				out = append(out, grovev1alpha1.ResourceClaimName(owner, e, replica))
			}
		}
	}
	return out
}

// templatesOf are the PodCliqueSet's templates that entries name (an entry with a namespace names
// an external ResourceClaimTemplate).
func templatesOf(pcs *grovev1alpha1.PodCliqueSet, entries []grovev1alpha1.ResourceSharingSpec) []grovev1alpha1.ResourceClaimTemplateConfig {
	var out []grovev1alpha1.ResourceClaimTemplateConfig
	for _, t := range pcs.Spec.Template.ResourceClaimTemplates {
		if slices.ContainsFunc(entries, func(e grovev1alpha1.ResourceSharingSpec) bool { return e.Name == t.Name && e.Namespace == "" }) {
			out = append(out, *t.DeepCopy())
		}
	}
	return out
}

// Copied is a copy of what p points to (nil stays nil): a pass sets a child it writes from a
// cached object's fields, and a pointer shared with the cache could be written through later.
func Copied[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
