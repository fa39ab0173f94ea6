package chaos

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// describeCoherent is what the Coherent workload looks like when it did not converge: the
// decision (the PodCliqueSet's update status and conditions, each replica's PodGangMap), what
// each level made of it (the scaling groups' and PodCliques' revisions) and the pods and gangs.
// A CI run's cluster directory goes with its temporary copy; this goes into the test's output.
func (r *run) describeCoherent() string {
	var b strings.Builder
	in := client.InNamespace(inferenceNS)
	part := client.MatchingLabels{grovev1alpha1.LabelPartOf: coherentSet}
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := r.k.Get(r.ctx, client.ObjectKey{Namespace: inferenceNS, Name: coherentSet}, pcs); err != nil {
		return err.Error()
	}
	fmt.Fprintf(&b, "PodCliqueSet %s generation %d observed %d updateProgress %+v\n", pcs.Name, pcs.Generation,
		ptr.Deref(pcs.Status.ObservedGeneration, -1), ptr.Deref(pcs.Status.UpdateProgress, grovev1alpha1.PodCliqueSetUpdateProgress{}))
	for _, c := range pcs.Status.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	maps := &grovev1alpha1.PodGangMapList{}
	if err := r.k.List(r.ctx, maps, in); err != nil {
		fmt.Fprintf(&b, "listing: %v\n", err)
	}
	for _, m := range maps.Items {
		if !strings.HasPrefix(m.Name, coherentSet+"-") {
			continue
		}
		for _, e := range m.Spec.Entries {
			fmt.Fprintf(&b, "PodGangMap %s entry %s %s rev %s cliques %v groups %v dependsOn %v\n", m.Name, e.Epoch, e.Role,
				e.PodCliqueSetGenerationHash, e.PodCliques, e.PCSGReplicaIndices, e.DependsOn)
		}
	}
	groups := &grovev1alpha1.PodCliqueScalingGroupList{}
	if err := r.k.List(r.ctx, groups, in, part); err != nil {
		fmt.Fprintf(&b, "listing: %v\n", err)
	}
	for _, g := range groups.Items {
		fmt.Fprintf(&b, "PodCliqueScalingGroup %s rev %s current %s replicas %d available %d\n", g.Name, g.Spec.PodCliqueSetGenerationHash,
			ptr.Deref(g.Status.CurrentPodCliqueSetGenerationHash, ""), g.Spec.Replicas, g.Status.AvailableReplicas)
	}
	cliques := &grovev1alpha1.PodCliqueList{}
	if err := r.k.List(r.ctx, cliques, in, part); err != nil {
		fmt.Fprintf(&b, "listing: %v\n", err)
	}
	for _, c := range cliques.Items {
		fmt.Fprintf(&b, "PodClique %s rev %s gang %s replicas %d ready %d updated %d observed %d/%d current %s\n", c.Name, c.Spec.PodCliqueSetGenerationHash,
			c.Labels[grovev1alpha1.LabelPodGang], c.Spec.Replicas, c.Status.ReadyReplicas, c.Status.UpdatedReplicas,
			ptr.Deref(c.Status.ObservedGeneration, -1), c.Generation, ptr.Deref(c.Status.CurrentPodTemplateHash, ""))
	}
	gangs := &schedulerv1alpha1.PodGangList{}
	if err := r.k.List(r.ctx, gangs, in, part); err != nil {
		fmt.Fprintf(&b, "listing: %v\n", err)
	}
	for _, g := range gangs.Items {
		var conds []string
		for _, c := range g.Status.Conditions {
			conds = append(conds, c.Type+"="+string(c.Status))
		}
		fmt.Fprintf(&b, "PodGang %s generation %d deleting %v %s\n", g.Name, g.Generation, g.DeletionTimestamp != nil, strings.Join(conds, " "))
	}
	pods := &corev1.PodList{}
	if err := r.k.List(r.ctx, pods, in, part); err != nil {
		fmt.Fprintf(&b, "listing: %v\n", err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "Pod %s template %s gang %s %s ready %v gates %d deleting %v\n", p.Name, p.Labels[grovev1alpha1.LabelPodTemplateHash],
			p.Labels[grovev1alpha1.LabelPodGang], p.Status.Phase, podReady(&p), len(p.Spec.SchedulingGates), p.DeletionTimestamp != nil)
	}
	return b.String()
}
