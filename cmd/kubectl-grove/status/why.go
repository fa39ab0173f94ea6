package status

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/tree"
)

// Why writes the chain from a pod to what holds it: the pod's reason, its PodClique, the parent
// cliques it starts after, its PodGang and the backend's answer, the PodCliqueSet's conditions,
// and the TrainJob that made them.
func Why(ctx context.Context, c client.Reader, w io.Writer, key client.ObjectKey) error {
	pod := &corev1.Pod{}
	if err := get(ctx, c, key, pod, "Pod"); err != nil {
		return err
	}
	root := tree.New(fmt.Sprintf("pod %s/%s: %s", pod.Namespace, pod.Name, podState(pod)))
	clique, pcsName := pod.Labels[grovev1alpha1.LabelPodClique], pod.Labels[grovev1alpha1.LabelPartOf]
	if clique == "" || pcsName == "" {
		if why := Wait(pod, &grovev1alpha1.PodClique{}, &View{}); why != "" {
			root.Add("held: " + why)
		}
		root.Add("not a Grove pod: it has no grove.io/podclique label, so no PodClique or PodGang holds it")
		root.Write(w)
		return nil
	}
	v, err := ReadPodCliqueSet(ctx, c, client.ObjectKey{Namespace: key.Namespace, Name: pcsName})
	if err != nil {
		return err
	}
	pclq := v.PodCliques[clique]
	if pclq == nil {
		root.Add(fmt.Sprintf("its PodClique %s is gone: the pod is being replaced or deleted", clique))
		root.Write(w)
		return nil
	}
	var held *tree.Node
	if why := Wait(pod, pclq, v); why != "" {
		held = root.Add("held: " + why)
	} else {
		held = root.Add("not held: " + podState(pod))
	}
	n := held.Add(fmt.Sprintf("PodClique %s: %d/%d ready (minAvailable %d), %d gated%s", pclq.Name, pclq.Status.ReadyReplicas, pclq.Spec.Replicas,
		pclq.MinAvailableOrReplicas(), pclq.Status.ScheduleGatedReplicas, breached(pclq.Status.Conditions)))
	for _, parentName := range pclq.Spec.StartsAfter {
		parent := v.PodCliques[parentName]
		if parent == nil {
			n.Add(fmt.Sprintf("starts after PodClique %s, which does not exist yet", parentName))
			continue
		}
		pn := n.Add(fmt.Sprintf("starts after PodClique %s: %d/%d ready (minAvailable %d)", parent.Name, parent.Status.ReadyReplicas,
			parent.Spec.Replicas, parent.MinAvailableOrReplicas()))
		for _, p := range v.Pods[parent.Name] {
			if why := Wait(p, parent, v); why != "" {
				pn.Add(fmt.Sprintf("pod %s: %s — %s", p.Name, podState(p), why))
			}
		}
	}
	if pg := v.PodGangs[pclq.Labels[grovev1alpha1.LabelPodGang]]; pg != nil {
		n = n.Add(gangLine(pg))
	} else {
		n = n.Add(fmt.Sprintf("PodGang %s does not exist yet", pclq.Labels[grovev1alpha1.LabelPodGang]))
	}
	n = n.Add(pcsLine(v.PodCliqueSet))
	for _, cond := range v.PodCliqueSet.Status.Conditions {
		if notable(cond) {
			n.Add(fmt.Sprintf("%s=%s (%s): %s", cond.Type, cond.Status, cond.Reason, cond.Message))
		}
	}
	if owner := metav1.GetControllerOf(v.PodCliqueSet); owner != nil && owner.Kind == trainerv1alpha1.TrainJobKind {
		n.Add(fmt.Sprintf("made by TrainJob %s: kubectl grove status trainjob/%s", owner.Name, owner.Name))
	}
	root.Write(w)
	return nil
}
