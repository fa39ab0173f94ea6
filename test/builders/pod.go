package builders

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// PodBuilder builds a Pod.
type PodBuilder struct{ obj *corev1.Pod }

// Pod starts a pod of that name and nothing else: no UID, labels, spec or status, so a pod that
// stands for what a cache or a unit under test reads holds only what the test sets.
func Pod(namespace, name string) *PodBuilder {
	return &PodBuilder{obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}}
}

// Label sets a label.
func (b *PodBuilder) Label(key, value string) *PodBuilder {
	if b.obj.Labels == nil {
		b.obj.Labels = map[string]string{}
	}
	b.obj.Labels[key] = value
	return b
}

// Annotation sets an annotation.
func (b *PodBuilder) Annotation(key, value string) *PodBuilder {
	if b.obj.Annotations == nil {
		b.obj.Annotations = map[string]string{}
	}
	b.obj.Annotations[key] = value
	return b
}

// UID sets metadata.uid.
func (b *PodBuilder) UID(uid string) *PodBuilder {
	b.obj.UID = types.UID(uid)
	return b
}

// ResourceVersion sets metadata.resourceVersion.
func (b *PodBuilder) ResourceVersion(rv string) *PodBuilder {
	b.obj.ResourceVersion = rv
	return b
}

// Created sets the creation time.
func (b *PodBuilder) Created(t time.Time) *PodBuilder {
	b.obj.CreationTimestamp = metav1.NewTime(t)
	return b
}

// ControlledBy sets its controller reference to a grove.io object of that kind, as
// metav1.NewControllerRef makes it (blockOwnerDeletion set).
func (b *PodBuilder) ControlledBy(owner metav1.Object, kind string) *PodBuilder {
	b.obj.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, grovev1alpha1.GroupVersion.WithKind(kind))}
	return b
}

// OwnerReference adds an owner reference as given.
func (b *PodBuilder) OwnerReference(ref metav1.OwnerReference) *PodBuilder {
	b.obj.OwnerReferences = append(b.obj.OwnerReferences, ref)
	return b
}

// Finalizers sets metadata.finalizers.
func (b *PodBuilder) Finalizers(names ...string) *PodBuilder {
	b.obj.Finalizers = names
	return b
}

// DeletedAt marks it being deleted since t (metadata.deletionTimestamp).
func (b *PodBuilder) DeletedAt(t time.Time) *PodBuilder {
	b.obj.DeletionTimestamp = ptr.To(metav1.NewTime(t))
	return b
}

// Spec replaces the spec.
func (b *PodBuilder) Spec(spec corev1.PodSpec) *PodBuilder {
	b.obj.Spec = spec
	return b
}

// Container adds a container running image.
func (b *PodBuilder) Container(name, image string) *PodBuilder {
	b.obj.Spec.Containers = append(b.obj.Spec.Containers, corev1.Container{Name: name, Image: image})
	return b
}

// NodeName binds it to a node (spec.nodeName).
func (b *PodBuilder) NodeName(node string) *PodBuilder {
	b.obj.Spec.NodeName = node
	return b
}

// SchedulingGates adds scheduling gates of these names, in order.
func (b *PodBuilder) SchedulingGates(names ...string) *PodBuilder {
	for _, n := range names {
		b.obj.Spec.SchedulingGates = append(b.obj.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
	}
	return b
}

// Phase sets status.phase.
func (b *PodBuilder) Phase(phase corev1.PodPhase) *PodBuilder {
	b.obj.Status.Phase = phase
	return b
}

// Condition adds a status condition as given (no transition time is filled in).
func (b *PodBuilder) Condition(c corev1.PodCondition) *PodBuilder {
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, c)
	return b
}

// Ready adds the Ready condition, True or False.
func (b *PodBuilder) Ready(ready bool) *PodBuilder {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return b.Condition(corev1.PodCondition{Type: corev1.PodReady, Status: status})
}

// Obj returns the Pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.obj }
