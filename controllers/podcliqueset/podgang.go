package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/children"
)

// gang is the wanted content of one PodGang: its name and member PodCliques.
type gang struct {
	name    string
	cliques []string
}

// wantedGangs returns a replica's PodGangs: the base gang (standalone cliques plus the first
// minAvailable replicas of every scaling group) and one gang per scaling-group replica beyond.
func wantedGangs(pcs *grovev1alpha1.PodCliqueSet, replica int, obs *observed) []gang {
	base := gang{name: grovev1alpha1.BasePodGangName(pcs.Name, replica)}
	for _, c := range standaloneCliques(pcs) {
		base.cliques = append(base.cliques, grovev1alpha1.PodCliqueName(pcs.Name, replica, c.Name))
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
			var members []string
			for _, c := range g.CliqueNames {
				members = append(members, grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, c))
			}
			if name := children.PodGangOfGroupReplica(pcs.Name, replica, pcsg, j, minAvailable); name == base.name {
				base.cliques = append(base.cliques, members...)
			} else {
				scaled = append(scaled, gang{name: name, cliques: members})
			}
		}
	}
	return append(append(gangs, base), scaled...)
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

// hasLabels reports whether have holds every label of want.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// syncPodGangs keeps each PodGang of a replica: created once every member pod exists, with all
// references, and Initialized=True — the signal, together with the backend's readiness, that
// gates may be lifted. A gang that later loses a pod keeps its PodGang, Initialized=False until
// the pod is back.
func (r *Reconciler) syncPodGangs(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, replica int, obs *observed) error {
	backend := r.Backends.ForPodCliqueSet(pcs)
	var errs []error
	for _, g := range wantedGangs(pcs, replica, obs) {
		obs.wantGangs[g.name] = true
		if backend == nil {
			errs = append(errs, fmt.Errorf("PodGang %s: %w", g.name, r.Backends.NotEnabledError(backends.SchedulerNameOf(pcs))))
			continue
		}
		if err := r.syncPodGang(ctx, pcs, replica, g, string(backend.Name()), obs); err != nil {
			errs = append(errs, fmt.Errorf("PodGang %s: %w", g.name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *Reconciler) syncPodGang(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, replica int, g gang, backend string, obs *observed) error {
	spec := schedulerv1alpha1.PodGangSpec{PriorityClassName: pcs.Spec.Template.PriorityClassName}
	complete := true
	var missing []string
	for _, name := range g.cliques {
		group := schedulerv1alpha1.PodGroup{Name: name, PodReferences: []schedulerv1alpha1.NamespacedName{}}
		pclq := obs.cliques[name]
		pods := obs.pods[name]
		if pclq == nil {
			complete = false
			missing = append(missing, name)
		} else {
			group.MinReplicas = minAvailable(pclq)
			if len(pods) != int(pclq.Spec.Replicas) {
				complete = false
				missing = append(missing, fmt.Sprintf("%s (%d/%d pods)", name, len(pods), pclq.Spec.Replicas))
			}
		}
		for _, p := range pods {
			group.PodReferences = append(group.PodReferences, schedulerv1alpha1.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
		sort.Slice(group.PodReferences, func(a, b int) bool { return group.PodReferences[a].Name < group.PodReferences[b].Name })
		spec.PodGroups = append(spec.PodGroups, group)
	}

	obs.topology.applyTopology(pcs, replica, &spec, obs)
	labels, annotations := gangLabels(pcs, replica, backend), obs.topology.annotations()
	pg := obs.gangs[g.name]
	if pg == nil && !complete {
		// Created only once every member pod exists: its first generation is final, so the
		// backend-controller syncs and acknowledges it once instead of once per pod wave.
		return nil
	}
	if pg == nil {
		pg = &schedulerv1alpha1.PodGang{
			ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: pcs.Namespace, Labels: labels, Annotations: annotations},
			Spec:       spec,
		}
		setOwner(pcs, pg)
		if err := r.create(ctx, pcs, pg); err != nil {
			return err
		}
	} else if !equality.Semantic.DeepEqual(pg.Spec, spec) || !hasLabels(pg.Labels, labels) || !hasLabels(pg.Annotations, annotations) {
		pg = pg.DeepCopy()
		pg.Spec = spec
		for k, v := range labels {
			pg.Labels[k] = v
		}
		if len(annotations) > 0 && pg.Annotations == nil {
			pg.Annotations = map[string]string{}
		}
		for k, v := range annotations {
			pg.Annotations[k] = v
		}
		if err := r.Client.Update(ctx, pg); err != nil {
			return err
		}
	}

	cond := metav1.Condition{
		Type: schedulerv1alpha1.ConditionInitialized, Status: metav1.ConditionTrue,
		Reason: schedulerv1alpha1.ReasonReady, Message: "all pods exist and are referenced", ObservedGeneration: pg.Generation,
	}
	if !complete {
		cond.Status, cond.Reason = metav1.ConditionFalse, schedulerv1alpha1.ReasonPodsPending
		cond.Message = fmt.Sprintf("waiting for pods of %v", missing)
	}
	status := pg.Status.DeepCopy()
	if status.Phase == "" {
		status.Phase = schedulerv1alpha1.PodGangPhasePending
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	if equality.Semantic.DeepEqual(*status, pg.Status) {
		return nil
	}
	pg = pg.DeepCopy()
	pg.Status = *status
	return r.Client.Status().Update(ctx, pg)
}

func minAvailable(pclq *grovev1alpha1.PodClique) int32 {
	if pclq.Spec.MinAvailable != nil {
		return *pclq.Spec.MinAvailable
	}
	return pclq.Spec.Replicas
}
