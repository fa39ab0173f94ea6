package podcliqueset

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
)

// collision is a name the PodCliqueSet would give a child that an object of another owner holds.
type collision struct {
	kind, name string
	// holder describes who controls the object holding the name.
	holder string
}

func (c collision) key() string { return c.kind + "/" + c.name }

// findCollisions looks up, for every child the PodCliqueSet wants that its observation lacks, an
// object of that name held by another owner (another PodCliqueSet whose generated names overlap,
// or an object someone created by hand). Such a name is never created, adopted or shared: the
// PodCliqueSet reports it (condition NameCollision) and waits. Only names missing from the
// observation are looked up, so a PodCliqueSet at rest costs nothing here.
func (r *Reconciler) findCollisions(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed) error {
	type want struct {
		obj  client.Object
		name string
	}
	var wants []want
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		if name := grovev1alpha1.HeadlessServiceName(pcs.Name, i); obs.services[name] == nil {
			wants = append(wants, want{&corev1.Service{}, name})
		}
		for _, c := range standaloneCliques(pcs) {
			if name := grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name); obs.cliques[name] == nil {
				wants = append(wants, want{&grovev1alpha1.PodClique{}, name})
			}
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name)
			replicas := children.GroupReplicas(&g)
			if have := obs.groups[pcsg]; have != nil {
				replicas = have.Spec.Replicas
			} else {
				wants = append(wants, want{&grovev1alpha1.PodCliqueScalingGroup{}, pcsg})
			}
			for j := 0; j < int(replicas); j++ {
				for _, c := range g.CliqueNames {
					if name := grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, c); obs.cliques[name] == nil {
						wants = append(wants, want{&grovev1alpha1.PodClique{}, name})
					}
				}
			}
		}
		if isCoherent(pcs) {
			// Its PodGangs are named by epoch, after what its PodGangMap records.
			if name := grovev1alpha1.PodGangMapName(pcs.Name, i); obs.maps[name] == nil {
				wants = append(wants, want{&grovev1alpha1.PodGangMap{}, name})
			}
			continue
		}
		for _, g := range wantedGangs(pcs, i, obs) {
			if obs.gangs[g.name] == nil {
				wants = append(wants, want{&schedulerv1alpha1.PodGang{}, g.name})
			}
		}
	}
	for _, w := range wants {
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: w.name}, w.obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if ours(pcs, w.obj, obs) {
			continue
		}
		c := collision{kind: kindOf(w.obj), name: w.name, holder: holderOf(w.obj)}
		obs.collisions = append(obs.collisions, c)
		obs.collided[c.key()] = true
	}
	sort.Slice(obs.collisions, func(a, b int) bool { return obs.collisions[a].key() < obs.collisions[b].key() })
	return nil
}

// ours reports an object controlled by the PodCliqueSet or by one of its PodCliqueScalingGroups.
func ours(pcs *grovev1alpha1.PodCliqueSet, obj client.Object, obs *observed) bool {
	ref := metav1.GetControllerOf(obj)
	switch {
	case ref == nil:
		return false
	case ref.UID == pcs.UID:
		return true
	case ref.Kind == "PodCliqueScalingGroup":
		g := obs.groups[ref.Name]
		return g != nil && g.UID == ref.UID
	}
	return false
}

// holderOf names the controller of an object holding a wanted name, and its PodCliqueSet.
func holderOf(obj client.Object) string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return "no controller (created by hand?)"
	}
	h := ref.Kind + " " + ref.Name
	if pcs := obj.GetLabels()[grovev1alpha1.LabelPartOf]; pcs != "" && (ref.Kind != "PodCliqueSet" || ref.Name != pcs) {
		h += " of PodCliqueSet " + pcs
	}
	return h
}

// collisionCondition reports the names other owners hold, or that there are none.
func collisionCondition(pcs *grovev1alpha1.PodCliqueSet, collisions []collision) metav1.Condition {
	cond := metav1.Condition{Type: grovev1alpha1.ConditionNameCollision, Status: metav1.ConditionFalse, Reason: grovev1alpha1.ReasonNoNameCollision,
		Message: "every name the PodCliqueSet gives its children is free or its own", ObservedGeneration: pcs.Generation}
	if len(collisions) == 0 {
		return cond
	}
	var held []string
	for i, c := range collisions {
		if i == 5 {
			held = append(held, fmt.Sprintf("and %d more", len(collisions)-i))
			break
		}
		held = append(held, fmt.Sprintf("%s %s/%s is controlled by %s", c.kind, pcs.Namespace, c.name, c.holder))
	}
	cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonNameHeldByAnotherOwner
	cond.Message = "names this PodCliqueSet needs are taken; nothing is created in their place (rename the PodCliqueSet): " + strings.Join(held, "; ")
	return cond
}
