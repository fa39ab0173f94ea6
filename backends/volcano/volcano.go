// Package volcano is the Volcano backend: each PodGang becomes a scheduling.volcano.sh/v1beta1
// PodGroup of the same name, owned by the PodGang, in the gang's Volcano queue. Its minMember
// and minResources hold the whole gang back until it fits, and one subgroup per pod group (the
// pods of one PodClique) keeps each clique's minimum, as upstream Grove's Volcano backend does.
package volcano

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/internal/ownedobject"
	"github.com/kubegrove/grove/internal/app/servedapis"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
	"github.com/kubegrove/grove/internal/contract/volcanoqueue"
)

const (
	// ReasonPodGroupCreated is the reason of SchedulerBackendReady=True.
	ReasonPodGroupCreated = "PodGroupCreated"
	// podGroupCRD is the CRD whose schema must have spec.subGroupPolicy (Volcano 1.14 or newer):
	// an older API server would prune the subgroups silently.
	podGroupCRD = "podgroups.scheduling.volcano.sh"
)

// Backend is the Volcano backend.
type Backend struct {
	client client.Client
}

// New returns the backend; c may be nil where nothing is synced.
func New(_ configv1alpha1.VolcanoConfig, c client.Client) *Backend {
	return &Backend{client: c}
}

// Name returns volcano.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameVolcano }

// PodSchedulerName is volcano, the schedulerName Volcano's scheduler serves.
func (b *Backend) PodSchedulerName() string { return configv1alpha1.VolcanoPodSchedulerName }

// Init checks that Volcano's PodGroup and Queue are served and that the PodGroup's schema has
// subGroupPolicy.
func (b *Backend) Init(ctx context.Context) error {
	help := "install Volcano (1.14 or newer) before running the volcano backend"
	if err := servedapis.Check(b.client.RESTMapper(), help,
		volcanov1beta1.SchemeGroupVersion.WithKind("PodGroup"), volcanov1beta1.SchemeGroupVersion.WithKind("Queue")); err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := b.client.Get(ctx, client.ObjectKey{Name: podGroupCRD}, crd); err != nil {
		return fmt.Errorf("reading CRD %s: %w", podGroupCRD, err)
	}
	if !hasSubGroupPolicy(crd) {
		return fmt.Errorf("CRD %s has no spec.subGroupPolicy in %s: %s", podGroupCRD, volcanov1beta1.SchemeGroupVersion.Version, help)
	}
	return nil
}

// hasSubGroupPolicy reports whether the served v1beta1 schema of the PodGroup CRD knows
// spec.subGroupPolicy.
func hasSubGroupPolicy(crd *unstructured.Unstructured) bool {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		version, ok := v.(map[string]any)
		if !ok || version["name"] != volcanov1beta1.SchemeGroupVersion.Version || version["served"] != true {
			continue
		}
		_, found, _ := unstructured.NestedMap(version, "schema", "openAPIV3Schema", "properties", "spec", "properties", "subGroupPolicy")
		return found
	}
	return false
}

// SyncPodGang keeps the PodGang's PodGroup as built here. A queue that does not exist or is not
// open fails the sync, naming the PodGang field and the PodCliqueSet annotation it came from:
// Volcano would never schedule the gang.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	want := BuildPodGroup(pg)
	state, problem, err := volcanoqueue.Check(ctx, b.client, want.Spec.Queue)
	if err != nil {
		return "", "", err
	}
	if state != volcanoqueue.Usable {
		return "", "", fmt.Errorf("spec.schedulerQueueName (the PodCliqueSet's %s annotation): %s", grovev1alpha1.AnnotationVolcanoQueue, problem)
	}
	if _, err := ownedobject.Keep(ctx, b.client, pg, &volcanov1beta1.PodGroup{}, want, podGroupFields); err != nil { // logs what it wrote
		return "", "", fmt.Errorf("keeping Volcano PodGroup %s: %w", want.Name, err)
	}
	return ReasonPodGroupCreated, fmt.Sprintf("Volcano PodGroup %s needs %d pods in queue %s", want.Name, want.Spec.MinMember, want.Spec.Queue), nil
}

// podGroupFields: the backend owns a PodGroup's spec and its labels.
var podGroupFields = ownedobject.Fields[*volcanov1beta1.PodGroup]{
	Same: func(have, want *volcanov1beta1.PodGroup) bool {
		return ownedobject.HasLabels(have, want) && equality.Semantic.DeepEqual(have.Spec, want.Spec)
	},
	Set: func(have, want *volcanov1beta1.PodGroup) {
		ownedobject.SetLabels(have, want)
		have.Spec = want.Spec
	},
}

// BuildPodGroup is the Volcano PodGroup of a PodGang: minMember its minimum, minResources every
// pod group's per-pod requests times its minReplicas, one subgroup per pod group (its pods by
// their PodClique label, at least minReplicas of them), the gang's queue (Volcano's default
// when it names none) and priority class.
func BuildPodGroup(pg *schedulerv1alpha1.PodGang) *volcanov1beta1.PodGroup {
	out := &volcanov1beta1.PodGroup{Spec: volcanov1beta1.PodGroupSpec{
		MinMember:         max(pg.Spec.MinMember(), 1),
		Queue:             QueueOf(pg),
		PriorityClassName: pg.Spec.PriorityClassName,
	}}
	if r := pg.Spec.MinResources(); r != nil {
		out.Spec.MinResources = &r
	}
	for _, g := range pg.Spec.PodGroups {
		out.Spec.SubGroupPolicy = append(out.Spec.SubGroupPolicy, volcanov1beta1.SubGroupPolicySpec{
			Name:           g.Name,
			LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{grovev1alpha1.LabelPodClique: g.Name}},
			MatchLabelKeys: []string{grovev1alpha1.LabelPodClique},
			SubGroupSize:   ptr.To(max(g.MinReplicas, 1)),
			MinSubGroups:   ptr.To[int32](1),
		})
	}
	out.Name, out.Namespace = pg.Name, pg.Namespace
	out.Labels = map[string]string{grovev1alpha1.LabelManagedBy: "backend-controller", grovev1alpha1.LabelPodGang: pg.Name}
	return out
}

// QueueOf is the Volcano queue of a PodGang: its schedulerQueueName, else Volcano's default.
func QueueOf(pg *schedulerv1alpha1.PodGang) string {
	if pg.Spec.SchedulerQueueName != "" {
		return pg.Spec.SchedulerQueueName
	}
	return volcanoqueue.Default
}

// OnPodGangDelete has nothing to do: the PodGroup is owned by the PodGang.
func (b *Backend) OnPodGangDelete(context.Context, *schedulerv1alpha1.PodGang) error { return nil }

// PreparePod names the scheduler and, in both annotations Volcano reads, the pod's PodGroup.
func (b *Backend) PreparePod(pod *corev1.Pod) {
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = configv1alpha1.VolcanoPodSchedulerName
	}
	gang := pod.Labels[grovev1alpha1.LabelPodGang]
	if gang == "" {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[volcanov1beta1.KubeGroupNameAnnotationKey] = gang
	pod.Annotations[volcanov1beta1.VolcanoGroupNameAnnotationKey] = gang
}

// ValidatePodCliqueSet rejects required topology constraints (this backend does not translate
// them into Volcano's HyperNode network topology) and a queue annotation that is no valid
// queue name or that a clique template contradicts.
func (b *Backend) ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	errs := topologyconstraints.RefuseRequired(pcs, "the volcano backend cannot keep a gang within a topology domain; use a topology-aware backend")
	return append(errs, validateQueueAnnotations(pcs)...)
}

// validateQueueAnnotations checks the queue names of the PodCliqueSet and its clique templates:
// each a DNS subdomain, and all that are set equal.
func validateQueueAnnotations(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	check := func(p *field.Path, q string) {
		for _, msg := range validation.IsDNS1123Subdomain(q) {
			errs = append(errs, field.Invalid(p, q, msg))
		}
	}
	pcsQueue := pcs.Annotations[grovev1alpha1.AnnotationVolcanoQueue]
	if _, set := pcs.Annotations[grovev1alpha1.AnnotationVolcanoQueue]; set {
		check(field.NewPath("metadata", "annotations").Key(grovev1alpha1.AnnotationVolcanoQueue), pcsQueue)
	}
	first, firstPath := pcsQueue, field.NewPath("metadata", "annotations").Key(grovev1alpha1.AnnotationVolcanoQueue)
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		q, set := c.Annotations[grovev1alpha1.AnnotationVolcanoQueue]
		if !set {
			continue
		}
		p := field.NewPath("spec", "template", "cliques").Index(i).Child("annotations").Key(grovev1alpha1.AnnotationVolcanoQueue)
		check(p, q)
		switch {
		case first == "":
			first, firstPath = q, p
		case q != first:
			errs = append(errs, field.Invalid(p, q, fmt.Sprintf("a PodCliqueSet's gangs join one Volcano queue; %s says %q", firstPath, first)))
		}
	}
	return errs
}

// ValidatePodCliqueSetInCluster refuses a queue that does not exist or is not open, on create and
// when an update changes the queue.
func (b *Backend) ValidatePodCliqueSetInCluster(ctx context.Context, r client.Reader, old, pcs *grovev1alpha1.PodCliqueSet) (field.ErrorList, error) {
	queue := grovev1alpha1.VolcanoQueueOf(pcs)
	if old != nil && grovev1alpha1.VolcanoQueueOf(old) == queue {
		return nil, nil
	}
	if queue == "" {
		queue = volcanoqueue.Default
	}
	state, problem, err := volcanoqueue.Check(ctx, r, queue)
	if err != nil || state == volcanoqueue.Usable {
		return nil, err
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key(grovev1alpha1.AnnotationVolcanoQueue), queue, problem)}, nil
}

// KeepsTopology is false: Volcano's HyperNodes are not kept by Grove.
func (b *Backend) KeepsTopology() bool { return false }

// NotHonoured lists the preferred topology levels Volcano is not asked to keep.
func (b *Backend) NotHonoured(pcs *grovev1alpha1.PodCliqueSet, _ map[string]*schedulerv1alpha1.PodGang) []string {
	return topologyconstraints.PreferredIgnored(pcs, "the volcano backend")
}

// OwnedTypes is Volcano's PodGroup.
func (b *Backend) OwnedTypes() []client.Object { return []client.Object{&volcanov1beta1.PodGroup{}} }

// GangScheduling reports that Volcano places PodGangs whole.
func (b *Backend) GangScheduling() bool { return true }

// BuildObjects is the Volcano PodGroup of a PodGang.
func (b *Backend) BuildObjects(pg *schedulerv1alpha1.PodGang, _ *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error) {
	want := BuildPodGroup(pg)
	want.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pg, schedulerv1alpha1.GroupVersion.WithKind("PodGang"))}
	return []client.Object{want}, nil
}

// SchedulingGroups is nil: Volcano finds a gang's pods by their group-name annotation.
func (b *Backend) SchedulingGroups(*schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup {
	return nil
}
