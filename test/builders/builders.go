// Package builders makes the API objects tests need, fluently, so a test reads like the YAML it
// stands for: builders.PodCliqueSet("ns", "inf").Clique("router", 2).ScalingGroup("prefill", 3, 2,
// "leader", "worker").Obj(). Every builder starts from a valid object; each call changes one thing.
package builders

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// PodSpec is a one-container pod spec.
func PodSpec(container string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: "busybox"}}}
}

// PodCliqueSetBuilder builds a PodCliqueSet.
type PodCliqueSetBuilder struct{ obj *grovev1alpha1.PodCliqueSet }

// PodCliqueSet starts a PodCliqueSet of one replica and no cliques. UIDs are the kind and the
// name, so objects of one name and different kinds are told apart.
func PodCliqueSet(namespace, name string) *PodCliqueSetBuilder {
	return &PodCliqueSetBuilder{obj: &grovev1alpha1.PodCliqueSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: "PodCliqueSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("podcliqueset-" + name)},
		Spec:       grovev1alpha1.PodCliqueSetSpec{Replicas: 1},
	}}
}

// Replicas sets spec.replicas.
func (b *PodCliqueSetBuilder) Replicas(n int32) *PodCliqueSetBuilder {
	b.obj.Spec.Replicas = n
	return b
}

// Clique adds a clique template of that many pods (roleName = name); with edits applied.
func (b *PodCliqueSetBuilder) Clique(name string, replicas int32, edits ...func(*grovev1alpha1.PodCliqueTemplateSpec)) *PodCliqueSetBuilder {
	c := &grovev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: PodSpec(name)}}
	for _, edit := range edits {
		edit(c)
	}
	b.obj.Spec.Template.Cliques = append(b.obj.Spec.Template.Cliques, c)
	return b
}

// StartsAfter makes a clique start after others (with StartupType Explicit).
func StartsAfter(parents ...string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) { c.Spec.StartsAfter = parents }
}

// MinAvailable sets a clique's minAvailable.
func MinAvailable(n int32) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) { c.Spec.MinAvailable = ptr.To(n) }
}

// Requests makes every pod of a clique ask for these resources (as requests and limits, which
// extended resources such as GPUs need) on nodes with these labels.
func Requests(resources corev1.ResourceList, nodeSelector map[string]string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		for i := range c.Spec.PodSpec.Containers {
			c.Spec.PodSpec.Containers[i].Resources = corev1.ResourceRequirements{Requests: resources, Limits: resources}
		}
		c.Spec.PodSpec.NodeSelector = nodeSelector
	}
}

// MaxUnavailable gives a standalone clique a rolling-update budget of n pods
// (rollingUpdate.maxUnavailable).
func MaxUnavailable(n int32) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		if c.RollingUpdate == nil {
			c.RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{}
		}
		c.RollingUpdate.MaxUnavailable = ptr.To(n)
	}
}

// Env sets an environment variable in every container of a clique's pods (a pod template change).
func Env(name, value string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		for i := range c.Spec.PodSpec.Containers {
			ct := &c.Spec.PodSpec.Containers[i]
			ct.Env = slices.DeleteFunc(ct.Env, func(e corev1.EnvVar) bool { return e.Name == name })
			ct.Env = append(ct.Env, corev1.EnvVar{Name: name, Value: value})
		}
	}
}

// Annotate adds an annotation to a clique's PodCliques and pods.
func Annotate(key, value string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[key] = value
	}
}

// PodSpecEdit applies edit to a clique's pod spec (node selector, tolerations, resources).
func PodSpecEdit(edit func(*corev1.PodSpec)) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) { edit(&c.Spec.PodSpec) }
}

// ScalingGroup adds a scaling group of the named cliques.
func (b *PodCliqueSetBuilder) ScalingGroup(name string, replicas, minAvailable int32, cliques ...string) *PodCliqueSetBuilder {
	b.obj.Spec.Template.PodCliqueScalingGroupConfigs = append(b.obj.Spec.Template.PodCliqueScalingGroupConfigs, grovev1alpha1.PodCliqueScalingGroupConfig{
		Name: name, CliqueNames: cliques, Replicas: ptr.To(replicas), MinAvailable: ptr.To(minAvailable),
	})
	return b
}

// ScalingGroupMaxUnavailable gives the scaling group named name a rolling-update budget of n
// group replicas (rollingUpdate.maxUnavailable); add the group first.
func (b *PodCliqueSetBuilder) ScalingGroupMaxUnavailable(name string, n int32) *PodCliqueSetBuilder {
	for i := range b.obj.Spec.Template.PodCliqueScalingGroupConfigs {
		if g := &b.obj.Spec.Template.PodCliqueScalingGroupConfigs[i]; g.Name == name {
			if g.RollingUpdate == nil {
				g.RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{}
			}
			g.RollingUpdate.MaxUnavailable = ptr.To(n)
		}
	}
	return b
}

// EachClique applies edits to every clique added so far.
func (b *PodCliqueSetBuilder) EachClique(edits ...func(*grovev1alpha1.PodCliqueTemplateSpec)) *PodCliqueSetBuilder {
	for _, c := range b.obj.Spec.Template.Cliques {
		for _, edit := range edits {
			edit(c)
		}
	}
	return b
}

// StartupType sets the template's cliqueStartupType.
func (b *PodCliqueSetBuilder) StartupType(t grovev1alpha1.CliqueStartupType) *PodCliqueSetBuilder {
	b.obj.Spec.Template.StartupType = ptr.To(t)
	return b
}

// Training makes it a Training workload with that restart budget and immediate gang termination.
func (b *PodCliqueSetBuilder) Training(maxRestarts int32) *PodCliqueSetBuilder {
	b.obj.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
	b.obj.Spec.TrainingSpec = &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To(maxRestarts)}
	b.obj.Spec.Template.TerminationDelay = &metav1.Duration{}
	return b
}

// SucceedsWhen gives a Training workload a success policy over the target cliques.
func (b *PodCliqueSetBuilder) SucceedsWhen(op grovev1alpha1.TrainingSuccessOperator, targets ...string) *PodCliqueSetBuilder {
	if b.obj.Spec.TrainingSpec == nil {
		b.obj.Spec.TrainingSpec = &grovev1alpha1.TrainingSpec{}
	}
	b.obj.Spec.TrainingSpec.SuccessPolicy = &grovev1alpha1.TrainingSuccessPolicy{Operator: op, TargetCliques: targets}
	return b
}

// TerminationDelay enables gang termination with that delay.
func (b *PodCliqueSetBuilder) TerminationDelay(d metav1.Duration) *PodCliqueSetBuilder {
	b.obj.Spec.Template.TerminationDelay = &d
	return b
}

// Label sets a label (a Kueue queue, MultiKueue's origin).
func (b *PodCliqueSetBuilder) Label(key, value string) *PodCliqueSetBuilder {
	if b.obj.Labels == nil {
		b.obj.Labels = map[string]string{}
	}
	b.obj.Labels[key] = value
	return b
}

// ManagedBy sets spec.managedBy.
func (b *PodCliqueSetBuilder) ManagedBy(manager string) *PodCliqueSetBuilder {
	b.obj.Spec.ManagedBy = ptr.To(manager)
	return b
}

// Obj returns the PodCliqueSet.
func (b *PodCliqueSetBuilder) Obj() *grovev1alpha1.PodCliqueSet { return b.obj }

// UpdateStrategy sets spec.updateStrategy.type.
func (b *PodCliqueSetBuilder) UpdateStrategy(t grovev1alpha1.UpdateStrategyType) *PodCliqueSetBuilder {
	b.obj.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: t}
	return b
}

// Updating records in status an update in progress that is replacing replicas now.
func (b *PodCliqueSetBuilder) Updating(replicas ...int32) *PodCliqueSetBuilder {
	up := &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: metav1.Now()}
	for _, r := range replicas {
		up.CurrentlyUpdating = append(up.CurrentlyUpdating, grovev1alpha1.PodCliqueSetReplicaUpdateProgress{ReplicaIndex: r, UpdateStartedAt: up.UpdateStartedAt})
	}
	b.obj.Status.UpdateProgress = up
	return b
}

// UpdateEnded records in status that the update in progress ended.
func (b *PodCliqueSetBuilder) UpdateEnded() *PodCliqueSetBuilder {
	if b.obj.Status.UpdateProgress == nil {
		b.obj.Status.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: metav1.Now()}
	}
	now := metav1.Now()
	b.obj.Status.UpdateProgress.UpdateEndedAt = &now
	b.obj.Status.UpdateProgress.CurrentlyUpdating = nil
	return b
}

// PodCliqueBuilder builds a PodClique.
type PodCliqueBuilder struct{ obj *grovev1alpha1.PodClique }

// PodClique starts a PodClique of one pod, minAvailable 1, managed by the operator.
func PodClique(namespace, name string) *PodCliqueBuilder {
	return &PodCliqueBuilder{obj: &grovev1alpha1.PodClique{
		TypeMeta: metav1.TypeMeta{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: "PodClique"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("podclique-" + name), Generation: 1,
			Labels: map[string]string{grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue, grovev1alpha1.LabelPodClique: name}},
		Spec: grovev1alpha1.PodCliqueObjectSpec{PodCliqueSpec: grovev1alpha1.PodCliqueSpec{
			RoleName: "role", Replicas: 1, MinAvailable: ptr.To[int32](1), PodSpec: PodSpec("c"),
		}},
	}}
}

// Replicas sets spec.replicas and minAvailable.
func (b *PodCliqueBuilder) Replicas(replicas, minAvailable int32) *PodCliqueBuilder {
	b.obj.Spec.Replicas, b.obj.Spec.MinAvailable = replicas, ptr.To(minAvailable)
	return b
}

// Label sets a label.
func (b *PodCliqueBuilder) Label(key, value string) *PodCliqueBuilder {
	b.obj.Labels[key] = value
	return b
}

// OfReplica labels it as a child of PodCliqueSet replica i.
func (b *PodCliqueBuilder) OfReplica(pcs string, i string) *PodCliqueBuilder {
	return b.Label(grovev1alpha1.LabelPartOf, pcs).Label(grovev1alpha1.LabelPodCliqueSetReplicaIndex, i)
}

// OfGroupReplica labels it as a member of scaling-group replica j.
func (b *PodCliqueBuilder) OfGroupReplica(pcsg string, j string) *PodCliqueBuilder {
	return b.Label(grovev1alpha1.LabelPodCliqueScalingGroup, pcsg).Label(grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex, j)
}

// StartsAfter sets the resolved parent PodCliques.
func (b *PodCliqueBuilder) StartsAfter(parents ...string) *PodCliqueBuilder {
	b.obj.Spec.StartsAfter = parents
	return b
}

// Training marks it as a child of a Training PodCliqueSet.
func (b *PodCliqueBuilder) Training() *PodCliqueBuilder {
	b.obj.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
	return b
}

// ControlledBy sets its controller reference.
func (b *PodCliqueBuilder) ControlledBy(owner metav1.Object, kind string) *PodCliqueBuilder {
	b.obj.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, grovev1alpha1.GroupVersion.WithKind(kind))}
	return b
}

// Condition sets a status condition.
func (b *PodCliqueBuilder) Condition(c metav1.Condition) *PodCliqueBuilder {
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.Now()
	}
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, c)
	return b
}

// Ready sets the ready pods in status.
func (b *PodCliqueBuilder) Ready(n int32) *PodCliqueBuilder {
	b.obj.Status.ReadyReplicas, b.obj.Status.Replicas = n, b.obj.Spec.Replicas
	return b
}

// UID sets the UID (a PodClique deleted and created again under its name has a new one).
func (b *PodCliqueBuilder) UID(uid string) *PodCliqueBuilder {
	b.obj.UID = types.UID(uid)
	return b
}

// Created sets the creation time.
func (b *PodCliqueBuilder) Created(t time.Time) *PodCliqueBuilder {
	b.obj.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Annotation sets an annotation (the clique template's, which reach its pods).
func (b *PodCliqueBuilder) Annotation(key, value string) *PodCliqueBuilder {
	if b.obj.Annotations == nil {
		b.obj.Annotations = map[string]string{}
	}
	b.obj.Annotations[key] = value
	return b
}

// InGang labels it as a member of the named PodGang.
func (b *PodCliqueBuilder) InGang(podGang string) *PodCliqueBuilder {
	return b.Label(grovev1alpha1.LabelPodGang, podGang)
}

// PodSpec replaces the pod template's spec.
func (b *PodCliqueBuilder) PodSpec(spec corev1.PodSpec) *PodCliqueBuilder {
	b.obj.Spec.PodSpec = spec
	return b
}

// StartsAfterSucceeded sets the resolved parents that must have succeeded.
func (b *PodCliqueBuilder) StartsAfterSucceeded(parents ...string) *PodCliqueBuilder {
	b.obj.Spec.StartsAfterSucceeded = parents
	return b
}

// GroupTemplateNumPods sets the pods of one replica of its scaling group.
func (b *PodCliqueBuilder) GroupTemplateNumPods(n int32) *PodCliqueBuilder {
	b.obj.Spec.ScalingGroupTemplateNumPods = ptr.To(n)
	return b
}

// Status replaces the status.
func (b *PodCliqueBuilder) Status(st grovev1alpha1.PodCliqueStatus) *PodCliqueBuilder {
	b.obj.Status = st
	return b
}

// Succeeded sets Succeeded=True: every pod exited 0.
func (b *PodCliqueBuilder) Succeeded() *PodCliqueBuilder {
	return b.Condition(metav1.Condition{Type: grovev1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: "AllPodsSucceeded"})
}

// Generation sets metadata.generation.
func (b *PodCliqueBuilder) Generation(g int64) *PodCliqueBuilder {
	b.obj.Generation = g
	return b
}

// Role sets spec.roleName (the name of its clique template).
func (b *PodCliqueBuilder) Role(name string) *PodCliqueBuilder {
	b.obj.Spec.RoleName = name
	return b
}

// GenerationHash sets the PodCliqueSet template revision it was made from
// (spec.podCliqueSetGenerationHash).
func (b *PodCliqueBuilder) GenerationHash(hash string) *PodCliqueBuilder {
	b.obj.Spec.PodCliqueSetGenerationHash = hash
	return b
}

// UpdateStrategy sets the update strategy it inherits (spec.updateStrategy).
func (b *PodCliqueBuilder) UpdateStrategy(t grovev1alpha1.UpdateStrategyType) *PodCliqueBuilder {
	b.obj.Spec.UpdateStrategy = t
	return b
}

// MaxUnavailable gives it a rolling-update budget of n pods (spec.rollingUpdate.maxUnavailable).
func (b *PodCliqueBuilder) MaxUnavailable(n int32) *PodCliqueBuilder {
	if b.obj.Spec.RollingUpdate == nil {
		b.obj.Spec.RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{}
	}
	b.obj.Spec.RollingUpdate.MaxUnavailable = ptr.To(n)
	return b
}

// TemplateReplicas sets the replicas its clique template had when it was made
// (spec.templateReplicas).
func (b *PodCliqueBuilder) TemplateReplicas(n int32) *PodCliqueBuilder {
	b.obj.Spec.TemplateReplicas = ptr.To(n)
	return b
}

// Requests makes every container of its pods request these resources (limits left unset).
func (b *PodCliqueBuilder) Requests(resources corev1.ResourceList) *PodCliqueBuilder {
	for i := range b.obj.Spec.PodSpec.Containers {
		b.obj.Spec.PodSpec.Containers[i].Resources.Requests = resources
	}
	return b
}

// Obj returns the PodClique.
func (b *PodCliqueBuilder) Obj() *grovev1alpha1.PodClique { return b.obj }

// PodCliqueScalingGroupBuilder builds a PodCliqueScalingGroup.
type PodCliqueScalingGroupBuilder struct {
	obj *grovev1alpha1.PodCliqueScalingGroup
}

// PodCliqueScalingGroup starts a group of the named member cliques, one replica, minAvailable 1.
func PodCliqueScalingGroup(namespace, name string, cliques ...string) *PodCliqueScalingGroupBuilder {
	return &PodCliqueScalingGroupBuilder{obj: &grovev1alpha1.PodCliqueScalingGroup{
		TypeMeta: metav1.TypeMeta{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: "PodCliqueScalingGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("podcliquescalinggroup-" + name), Generation: 1,
			Labels: map[string]string{grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue, grovev1alpha1.LabelPodCliqueScalingGroup: name}},
		Spec: grovev1alpha1.PodCliqueScalingGroupSpec{Replicas: 1, MinAvailable: ptr.To[int32](1), CliqueNames: cliques},
	}}
}

// Replicas sets spec.replicas and minAvailable.
func (b *PodCliqueScalingGroupBuilder) Replicas(replicas, minAvailable int32) *PodCliqueScalingGroupBuilder {
	b.obj.Spec.Replicas, b.obj.Spec.MinAvailable = replicas, ptr.To(minAvailable)
	return b
}

// OfReplica labels it as a child of PodCliqueSet replica i.
func (b *PodCliqueScalingGroupBuilder) OfReplica(pcs string, i string) *PodCliqueScalingGroupBuilder {
	b.obj.Labels[grovev1alpha1.LabelPartOf] = pcs
	b.obj.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] = i
	return b
}

// Inherited sets what it takes from its PodCliqueSet.
func (b *PodCliqueScalingGroupBuilder) Inherited(s grovev1alpha1.InheritedSpec) *PodCliqueScalingGroupBuilder {
	b.obj.Spec.InheritedSpec = s
	return b
}

// TerminationDelay enables gang termination inside the group.
func (b *PodCliqueScalingGroupBuilder) TerminationDelay(d metav1.Duration) *PodCliqueScalingGroupBuilder {
	b.obj.Spec.TerminationDelay = &d
	return b
}

// Obj returns the PodCliqueScalingGroup.
func (b *PodCliqueScalingGroupBuilder) Obj() *grovev1alpha1.PodCliqueScalingGroup { return b.obj }

// PodGangBuilder builds a PodGang.
type PodGangBuilder struct{ obj *schedulerv1alpha1.PodGang }

// PodGang starts a PodGang of no pod groups, at generation 1.
func PodGang(namespace, name string) *PodGangBuilder {
	return &PodGangBuilder{obj: &schedulerv1alpha1.PodGang{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedulerv1alpha1.GroupVersion.String(), Kind: "PodGang"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("podgang-" + name), Generation: 1, Labels: map[string]string{}},
	}}
}

// Backend labels it for a scheduler backend.
func (b *PodGangBuilder) Backend(name string) *PodGangBuilder {
	b.obj.Labels[grovev1alpha1.LabelSchedulerName] = name
	return b
}

// Label sets a label.
func (b *PodGangBuilder) Label(key, value string) *PodGangBuilder {
	b.obj.Labels[key] = value
	return b
}

// OfReplica labels it as a gang of PodCliqueSet replica i.
func (b *PodGangBuilder) OfReplica(pcs string, i string) *PodGangBuilder {
	return b.Label(grovev1alpha1.LabelPartOf, pcs).Label(grovev1alpha1.LabelPodCliqueSetReplicaIndex, i)
}

// PodGroup adds a pod group of the named pods needing minReplicas.
func (b *PodGangBuilder) PodGroup(name string, minReplicas int32, pods ...string) *PodGangBuilder {
	g := schedulerv1alpha1.PodGroup{Name: name, MinReplicas: minReplicas}
	for _, p := range pods {
		g.PodReferences = append(g.PodReferences, schedulerv1alpha1.NamespacedName{Namespace: b.obj.Namespace, Name: p})
	}
	b.obj.Spec.PodGroups = append(b.obj.Spec.PodGroups, g)
	return b
}

// Queue queues it in a Kueue LocalQueue.
func (b *PodGangBuilder) Queue(name string) *PodGangBuilder {
	b.obj.Spec.QueueName = name
	return b
}

// SchedulerQueue names the gang scheduler's own queue (Volcano's).
func (b *PodGangBuilder) SchedulerQueue(name string) *PodGangBuilder {
	b.obj.Spec.SchedulerQueueName = name
	return b
}

// AdmittedByOwner says its PodCliqueSet's owner holds Kueue's admission for it.
func (b *PodGangBuilder) AdmittedByOwner() *PodGangBuilder {
	b.obj.Spec.QueueAdmittedByOwner = true
	return b
}

// Requests sets the per-pod requests of the named pod group.
func (b *PodGangBuilder) Requests(group string, requests corev1.ResourceList) *PodGangBuilder {
	for i := range b.obj.Spec.PodGroups {
		if b.obj.Spec.PodGroups[i].Name == group {
			b.obj.Spec.PodGroups[i].PodResourceRequests = requests
		}
	}
	return b
}

// Pack gives the whole gang a pack constraint (PackKeys).
func (b *PodGangBuilder) Pack(required, preferred string) *PodGangBuilder {
	b.obj.Spec.TopologyConstraint = PackKeys(required, preferred)
	return b
}

// PackKeys is a PodGang's pack constraint of required and preferred node-label keys, "" for
// none.
func PackKeys(required, preferred string) *schedulerv1alpha1.TopologyConstraint {
	c := &schedulerv1alpha1.TopologyPackConstraint{}
	if required != "" {
		c.Required = ptr.To(required)
	}
	if preferred != "" {
		c.Preferred = ptr.To(preferred)
	}
	return &schedulerv1alpha1.TopologyConstraint{PackConstraint: c}
}

// Priority names its PriorityClass.
func (b *PodGangBuilder) Priority(class string) *PodGangBuilder {
	b.obj.Spec.PriorityClassName = class
	return b
}

// Condition sets one status condition.
func (b *PodGangBuilder) Condition(t string, status metav1.ConditionStatus, reason string) *PodGangBuilder {
	meta.SetStatusCondition(&b.obj.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, ObservedGeneration: b.obj.Generation})
	return b
}

// ConditionMessage sets one status condition with its message (a manager gang's Dispatched names
// the worker cluster in it).
func (b *PodGangBuilder) ConditionMessage(t string, status metav1.ConditionStatus, reason, message string) *PodGangBuilder {
	meta.SetStatusCondition(&b.obj.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message,
		ObservedGeneration: b.obj.Generation})
	return b
}

// Generation sets metadata.generation.
func (b *PodGangBuilder) Generation(g int64) *PodGangBuilder {
	b.obj.Generation = g
	return b
}

// Created sets the creation time.
func (b *PodGangBuilder) Created(t time.Time) *PodGangBuilder {
	b.obj.CreationTimestamp = metav1.NewTime(t)
	return b
}

// AcknowledgedAt sets SchedulerBackendReady=True for generation g (an older one than the
// current is a stale acknowledgement).
func (b *PodGangBuilder) AcknowledgedAt(g int64) *PodGangBuilder {
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionSchedulerBackendReady,
		Status: metav1.ConditionTrue, Reason: "Synced", ObservedGeneration: g, LastTransitionTime: metav1.Now()})
	return b
}

// Acknowledged sets SchedulerBackendReady=True for its current generation.
func (b *PodGangBuilder) Acknowledged() *PodGangBuilder {
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionSchedulerBackendReady,
		Status: metav1.ConditionTrue, Reason: "Synced", ObservedGeneration: b.obj.Generation, LastTransitionTime: metav1.Now()})
	return b
}

// ControlledBy sets its controller reference (a PodCliqueSet's gang).
func (b *PodGangBuilder) ControlledBy(owner metav1.Object, kind string) *PodGangBuilder {
	b.obj.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, grovev1alpha1.GroupVersion.WithKind(kind))}
	return b
}

// MultiKueue sets the gang's side of MultiKueue (spec.multiKueue), and the gang whose placement it
// waits for ("" for none).
func (b *PodGangBuilder) MultiKueue(role schedulerv1alpha1.MultiKueueRole, placedAfter string) *PodGangBuilder {
	b.obj.Spec.MultiKueue = &schedulerv1alpha1.PodGangMultiKueue{Role: role, PlacedAfter: placedAfter}
	return b
}

// Obj returns the PodGang.
func (b *PodGangBuilder) Obj() *schedulerv1alpha1.PodGang { return b.obj }
