package podclique

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/coherent"
)

// shares divides the clique's pod indices among the PodGangs they join. A clique joins one
// PodGang (its grove.io/podgang label; a scaled gang's clique waits for its base gang) — except
// under the Coherent strategy, where the replica's PodGangMap says which PodGangs its pods join:
// a standalone clique's pods are shared among the anchors of the revisions an update goes through,
// a scaling-group member joins its group replica's gang. ok is false for a Coherent clique whose
// PodGangMap does not exist yet (its creation wakes the clique).
func (r *Reconciler) shares(ctx context.Context, pclq *grovev1alpha1.PodClique) ([]coherent.Share, bool, error) {
	if pclq.Spec.UpdateStrategy != grovev1alpha1.CoherentStrategy {
		s := coherent.Share{PodGang: pclq.Labels[grovev1alpha1.LabelPodGang], Replicas: pclq.Spec.Replicas, Current: true}
		if base := pclq.Labels[grovev1alpha1.LabelBasePodGang]; base != "" {
			s.After = []string{base}
		}
		return []coherent.Share{s}, true, nil
	}
	pcs := pclq.Labels[grovev1alpha1.LabelPartOf]
	replica, ok := grovev1alpha1.ReplicaIndexOf(pclq)
	if !ok {
		return nil, false, nil // not a replica's clique
	}
	pgm := &grovev1alpha1.PodGangMap{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: grovev1alpha1.PodGangMapName(pcs, replica)}, pgm); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return coherentShares(pclq, coherent.Gangs(pcs, replica, pgm.Spec.Entries)), true, nil
}

// coherentShares are a Coherent clique's shares among its replica's gangs: all that a PodClique
// pass reads of the PodGangMap, so a map change that leaves them alone concerns the clique not.
func coherentShares(pclq *grovev1alpha1.PodClique, gangs []coherent.Gang) []coherent.Share {
	group := pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup]
	if group == "" {
		return coherent.Shares(gangs, pclq.Name, pclq.Spec.PodCliqueSetGenerationHash)
	}
	// A scaling-group member joins the gang its group gave it with its template (one write: the
	// group moves a replica to a new gang when the update replaces it), waiting for the gangs
	// that gang's entry depends on.
	own := pclq.Labels[grovev1alpha1.LabelPodGang]
	if own == "" {
		return nil // its replica is in no entry yet: it waits for the group to place it
	}
	share := coherent.Share{PodGang: own, Replicas: pclq.Spec.Replicas, Current: true}
	for _, g := range gangs {
		if g.Name == own {
			share.After = g.After
		}
	}
	return []coherent.Share{share}
}

// inShare reports whether a pod's index is in the share.
func inShare(p *corev1.Pod, s coherent.Share) bool {
	i, ok := podIndex(p)
	return ok && int32(i) >= s.From && int32(i) < s.From+s.Replicas
}

// podsOf are the pods whose index is in the share.
func podsOf(pods []*corev1.Pod, s coherent.Share) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if inShare(p, s) {
			out = append(out, p)
		}
	}
	return out
}

// coherentVictims are, under Coherent, the pods of a share at the clique's revision that run an
// outdated template or belong to another gang: the PodCliqueSet moved their indices (a scaling
// group's replica, replaced whole) to a gang of the new revision when it took the step that
// replaces them, within each component's budget, so they go at once and come back in that gang.
// Pods of an older share stay.
func coherentVictims(active, alreadyDeleting []*corev1.Pod, shares []coherent.Share, hash string) []*corev1.Pod {
	skip := map[string]bool{}
	for _, p := range alreadyDeleting {
		skip[p.Name] = true
	}
	var out []*corev1.Pod
	for _, s := range shares {
		if !s.Current {
			continue
		}
		for _, p := range podsOf(active, s) {
			if !skip[p.Name] && (p.Labels[grovev1alpha1.LabelPodTemplateHash] != hash || p.Labels[grovev1alpha1.LabelPodGang] != s.PodGang) {
				out = append(out, p)
			}
		}
	}
	return out
}

// adopt relabels, under Coherent, the pods of a share at the clique's revision that were made
// under another strategy — a PodCliqueSet switched to Coherent: their template is the clique's
// (their template hash is the one the other strategy computes with their own gang's label), and
// only their gang and the form of the hash differ. They join the share's gang in place; no pod is
// replaced. The relabelled pods count as this pass's (p.active is updated).
func (r *Reconciler) adopt(ctx context.Context, p *pass) error {
	backend := r.Backends.ForPodScheduler(p.pclq.Spec.PodSpec.SchedulerName)
	for _, s := range p.shares {
		if !s.Current {
			continue
		}
		for _, pod := range podsOf(p.active, s) {
			have := pod.Labels[grovev1alpha1.LabelPodTemplateHash]
			if have == p.hash || have != legacyTemplateHash(p.pclq, pod.Labels[grovev1alpha1.LabelPodGang]) {
				continue
			}
			patched := pod.DeepCopy()
			patched.Labels[grovev1alpha1.LabelPodTemplateHash] = p.hash
			patched.Labels[grovev1alpha1.LabelPodGang] = s.PodGang
			if backend != nil {
				// The backend names the gang's scheduler object in labels or annotations (the
				// coscheduling PodGroup counts its pods by label): they follow the gang. Its
				// spec fields are set at creation and stay.
				prepared := patched.DeepCopy()
				backend.PreparePod(prepared)
				patched.Labels, patched.Annotations = prepared.Labels, prepared.Annotations
			}
			if err := r.Client.Patch(ctx, patched, client.MergeFrom(pod)); client.IgnoreNotFound(err) != nil {
				return err
			}
			log.FromContext(ctx).Info("adopted a pod into its Coherent gang: its template is the clique's, only its labels change",
				"pod", pod.Name, "podGang", s.PodGang, "was", pod.Labels[grovev1alpha1.LabelPodGang])
			*pod = *patched
		}
	}
	return nil
}

// legacyTemplateHash is the template hash the clique's pods get under RollingRecreate or OnDelete,
// where the pods' gang (here gang) is part of it.
func legacyTemplateHash(pclq *grovev1alpha1.PodClique, gang string) string {
	other := pclq.DeepCopy()
	other.Spec.UpdateStrategy = grovev1alpha1.RollingRecreateStrategy
	if other.Labels == nil {
		other.Labels = map[string]string{}
	}
	if gang == "" {
		delete(other.Labels, grovev1alpha1.LabelPodGang)
	} else {
		other.Labels[grovev1alpha1.LabelPodGang] = gang
	}
	return PodTemplateHash(other)
}
