package podcliqueset

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/coherent"
)

// gang is the wanted content of one PodGang: its name and member PodCliques.
type gang struct {
	name    string
	members []member
	// entry is, under Coherent, the PodGangMap entry the gang is made from.
	entry *coherent.Entry
}

// member is one PodClique of a gang and its size: the PodClique's own once it exists (an
// autoscaler or kubectl scale may have changed it), the template's before.
type member struct {
	name                   string
	replicas, minAvailable int32
	// from is the first pod index of the member in the gang (under Coherent a standalone
	// clique's pods are shared among several gangs by index).
	from int32
	// requests are one pod's resource requests, as the scheduler counts them.
	requests corev1.ResourceList
}

// memberOf is a PodGang member as its PodClique has it (scaled by kubectl or an autoscaler, its
// pods made from the template the rollout gave it) or, before it exists, as its template says.
func memberOf(name string, tmpl *grovev1alpha1.PodCliqueTemplateSpec, obs *observed) member {
	requests := func(spec *corev1.PodSpec) corev1.ResourceList {
		return resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
	}
	if pclq := obs.cliques[name]; pclq != nil {
		return member{name: name, replicas: pclq.Spec.Replicas, minAvailable: minAvailable(pclq), requests: requests(&pclq.Spec.PodSpec)}
	}
	m := member{name: name, replicas: tmpl.Spec.Replicas, minAvailable: max(tmpl.Spec.Replicas, 1), requests: requests(&tmpl.Spec.PodSpec)}
	if tmpl.Spec.MinAvailable != nil {
		m.minAvailable = *tmpl.Spec.MinAvailable
	}
	return m
}

// wantedGangs returns a replica's PodGangs: the base gang (standalone cliques plus the first
// minAvailable replicas of every scaling group) and one gang per scaling-group replica beyond.
func wantedGangs(pcs *grovev1alpha1.PodCliqueSet, replica int, obs *observed) []gang {
	base := gang{name: grovev1alpha1.BasePodGangName(pcs.Name, replica)}
	for _, c := range standaloneCliques(pcs) {
		base.members = append(base.members, memberOf(grovev1alpha1.PodCliqueName(pcs.Name, replica, c.Name), c, obs))
	}
	gangs := []gang{}
	var scaled []gang
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replica, g.Name)
		replicas := int(children.GroupReplicas(g))
		if have := obs.groups[pcsg]; have != nil {
			replicas = int(have.Spec.Replicas)
		}
		minAvailable := int(children.GroupMinAvailable(g))
		for j := 0; j < replicas; j++ {
			var members []member
			for _, c := range g.CliqueNames {
				if tmpl := children.Template(pcs, c); tmpl != nil {
					members = append(members, memberOf(grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, c), tmpl, obs))
				}
			}
			if name := children.PodGangOfGroupReplica(pcs.Name, replica, pcsg, j, minAvailable); name == base.name {
				base.members = append(base.members, members...)
			} else {
				scaled = append(scaled, withoutIdle(gang{name: name, members: members}))
			}
		}
	}
	// A gang whose every member is idle is not wanted: a PodGang without pod groups would ask
	// its scheduler for nothing.
	return slices.DeleteFunc(append(append(gangs, withoutIdle(base)), scaled...), func(g gang) bool { return len(g.members) == 0 })
}

// withoutIdle drops a gang's members at 0 replicas: an idle component has no pod group in its
// gang, and comes back into it when scaled up.
func withoutIdle(g gang) gang {
	g.members = slices.DeleteFunc(g.members, func(m member) bool { return m.replicas == 0 })
	return g
}

// gangLabels are a PodGang's labels: the PodCliqueSet's own and, where it sets none, those of its
// clique templates (a backend reads its settings there: upstream Grove manifests put KAI's queue
// label on the cliques), then the replica's and the backend that serves it.
func gangLabels(pcs *grovev1alpha1.PodCliqueSet, replica int, backend string) map[string]string {
	labels := map[string]string{}
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		for k, v := range c.Labels {
			if _, set := labels[k]; !set {
				labels[k] = v
			}
		}
	}
	for k, v := range pcs.Labels {
		labels[k] = v
	}
	for k, v := range children.ReplicaLabels(pcs.Name, replica) {
		labels[k] = v
	}
	labels[grovev1alpha1.LabelSchedulerName] = backend
	return labels
}

// sameGangSpec reports what equality.Semantic.DeepEqual reports of two PodGang specs, comparing
// the pod groups' references and requests directly: they are most of a spec, and a Coherent pass
// compares its replica's 100 gangs each time (by reflection, a tenth of the pass). The rest goes
// through equality.Semantic, so a field added later is compared too.
func sameGangSpec(a, b *schedulerv1alpha1.PodGangSpec) bool {
	if len(a.PodGroups) != len(b.PodGroups) {
		return false
	}
	for i := range a.PodGroups {
		if !samePodGroup(&a.PodGroups[i], &b.PodGroups[i]) {
			return false
		}
	}
	restA, restB := *a, *b
	restA.PodGroups, restB.PodGroups = nil, nil
	return equality.Semantic.DeepEqual(restA, restB)
}

func samePodGroup(a, b *schedulerv1alpha1.PodGroup) bool {
	if a.Name != b.Name || a.MinReplicas != b.MinReplicas || !slices.Equal(a.PodReferences, b.PodReferences) ||
		len(a.PodResourceRequests) != len(b.PodResourceRequests) {
		return false
	}
	for name, qa := range a.PodResourceRequests {
		if qb, ok := b.PodResourceRequests[name]; !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	restA, restB := *a, *b
	restA.PodReferences, restB.PodReferences, restA.PodResourceRequests, restB.PodResourceRequests = nil, nil, nil, nil
	return equality.Semantic.DeepEqual(restA, restB)
}

// podGangSpec is a PodGang's spec: one pod group per member, referencing every pod by its
// stable name, with its minimum and one pod's requests. missing names the members whose pods do
// not all exist yet.
func podGangSpec(pcs *grovev1alpha1.PodCliqueSet, g gang, obs *observed) (schedulerv1alpha1.PodGangSpec, []string) {
	spec := schedulerv1alpha1.PodGangSpec{PriorityClassName: pcs.Spec.Template.PriorityClassName, QueueName: grovev1alpha1.QueueNameOf(pcs),
		QueueAdmittedByOwner: grovev1alpha1.AdmittedByOwner(pcs), SchedulerQueueName: grovev1alpha1.VolcanoQueueOf(pcs)}
	if grovev1alpha1.MultiKueueCopy(pcs) && spec.QueueName != "" && !spec.QueueAdmittedByOwner {
		// MultiKueue copied the gang's Workload here before the PodCliqueSet: it is adopted.
		spec.MultiKueue = &schedulerv1alpha1.PodGangMultiKueue{Role: schedulerv1alpha1.MultiKueueWorker}
	}
	var missing []string
	for _, m := range g.members {
		group := schedulerv1alpha1.PodGroup{Name: m.name, MinReplicas: m.minAvailable, PodReferences: []schedulerv1alpha1.NamespacedName{}}
		if len(m.requests) > 0 {
			group.PodResourceRequests = m.requests
		}
		exist := map[string]bool{}
		for _, p := range obs.pods[m.name] {
			exist[p.Name] = true
		}
		absent := 0
		for i := int(m.from); i < int(m.from+m.replicas); i++ {
			name := grovev1alpha1.PodHostname(m.name, i)
			group.PodReferences = append(group.PodReferences, schedulerv1alpha1.NamespacedName{Namespace: pcs.Namespace, Name: name})
			if !exist[name] {
				absent++
			}
		}
		if absent > 0 {
			missing = append(missing, m.name)
		}
		sort.Slice(group.PodReferences, func(a, b int) bool { return group.PodReferences[a].Name < group.PodReferences[b].Name })
		spec.PodGroups = append(spec.PodGroups, group)
	}
	return spec, missing
}

func minAvailable(pclq *grovev1alpha1.PodClique) int32 { return pclq.MinAvailableOrReplicas() }

// wantPodGang is the PodGang g of a replica as the reconciler writes it: its pod groups, the
// topology constraints the binding translates, its labels and annotations. missing names the
// members whose pods do not all exist yet.
func wantPodGang(pcs *grovev1alpha1.PodCliqueSet, replica int, g gang, backend string, obs *observed) (*schedulerv1alpha1.PodGang, []string) {
	spec, missing := podGangSpec(pcs, g, obs)
	obs.topology.applyTopology(pcs, replica, &spec, obs)
	labels := gangLabels(pcs, replica, backend)
	if e := g.entry; e != nil {
		// Upstream's labels of a PodGangMap entry's gangs.
		labels[grovev1alpha1.LabelEpoch] = e.Epoch
		labels[grovev1alpha1.LabelPodGangRole] = string(e.Role)
		labels[grovev1alpha1.LabelPodCliqueSetGenerationHash] = e.PodCliqueSetGenerationHash
	}
	return &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: pcs.Namespace, Labels: labels, Annotations: obs.topology.annotations()},
		Spec:       spec,
	}, missing
}
