// Package kai is the KAI scheduler backend: each PodGang becomes a scheduling.run.ai/v2alpha2
// PodGroup of the same name, owned by the PodGang, with one leaf subgroup per PodClique and a
// parent subgroup per topology-constrained set of them, in the queue the PodCliqueSet names; and
// each ClusterTopologyBinding becomes a kai.scheduler/v1alpha1 Topology (topology.go).
package kai

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/internal/ownedobject"
	"github.com/kubegrove/grove/internal/app/servedapis"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
)

// NodePoolLabel places a KAI workload in a node pool; KAI may set it on the PodGroup itself.
const NodePoolLabel = "kai.scheduler/node-pool"

// ReasonPodGroupCreated is the reason of SchedulerBackendReady=True.
const ReasonPodGroupCreated = "PodGroupCreated"

// Backend is the KAI scheduler backend.
type Backend struct {
	cfg    configv1alpha1.KAISchedulerConfig
	client client.Client
}

// New returns the backend for a profile's config; c may be nil where nothing is synced.
func New(cfg configv1alpha1.KAISchedulerConfig, c client.Client) *Backend {
	return &Backend{cfg: cfg, client: c}
}

// Name returns kai-scheduler.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKAI }

// PodSchedulerName returns kai-scheduler.
func (b *Backend) PodSchedulerName() string { return kaiv2alpha2.SchedulerName }

// Init checks that KAI's PodGroup and Topology CRDs are installed.
func (b *Backend) Init(context.Context) error {
	return servedapis.Check(b.client.RESTMapper(), "install KAI scheduler's CRDs before running the kai-scheduler backend",
		kaiv2alpha2.GroupVersion.WithKind("PodGroup"), kaiv1alpha1.GroupVersion.WithKind("Topology"))
}

// Queue is the KAI queue of a workload: its kai.scheduler/queue label, else the profile's
// default queue, else "".
func (b *Backend) Queue(labels map[string]string) string {
	if q := labels[kaiv2alpha2.QueueLabel]; q != "" {
		return q
	}
	return b.cfg.DefaultQueue
}

// SyncPodGang keeps the PodGang's PodGroup as built here while leaving alone what KAI itself
// manages on it: the queue once set, markUnschedulable, schedulingBackoff and its labels.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	topologyName, err := b.topologyName(ctx, pg)
	if err != nil {
		return "", "", err
	}
	want, err := b.BuildPodGroup(pg, topologyName)
	if err != nil {
		return "", "", err
	}
	have := &kaiv2alpha2.PodGroup{}
	done, err := ownedobject.Keep(ctx, b.client, pg, have, want, podGroupFields)
	if err != nil {
		return "", "", fmt.Errorf("PodGroup %s: %w", want.Name, err)
	}
	kept := have // as stored, KAI's queue included, unless it was just created
	if done == ownedobject.Created || done == ownedobject.Recreated {
		kept = want
	}
	return ReasonPodGroupCreated, fmt.Sprintf("KAI PodGroup %s in queue %s needs %d pods", kept.Name, kept.Spec.Queue, *kept.Spec.MinMember), nil
}

// podGroupFields: the backend owns a PodGroup's spec and labels but for what KAI manages
// (Merge).
var podGroupFields = ownedobject.Fields[*kaiv2alpha2.PodGroup]{
	Same: func(have, want *kaiv2alpha2.PodGroup) bool {
		merged := have.DeepCopy()
		Merge(merged, want)
		return equality.Semantic.DeepEqual(merged.Labels, have.Labels) && equality.Semantic.DeepEqual(merged.Spec, have.Spec)
	},
	Set: Merge,
}

// Merge writes the fields the backend owns from want into have and keeps the ones KAI owns.
func Merge(have, want *kaiv2alpha2.PodGroup) {
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		if _, kaiOwned := have.Labels[k]; kaiOwned && (k == kaiv2alpha2.QueueLabel || k == NodePoolLabel) {
			continue
		}
		have.Labels[k] = v
	}
	spec := want.Spec.DeepCopy()
	if have.Spec.Queue != "" {
		spec.Queue = have.Spec.Queue
	}
	spec.MarkUnschedulable = have.Spec.MarkUnschedulable
	spec.SchedulingBackoff = have.Spec.SchedulingBackoff
	have.Spec = *spec
}

// BuildPodGroup is the PodGroup of a PodGang: minMember the gang's minimum, a leaf subgroup per
// pod group (its minReplicas), and a parent subgroup per topology-constraint group config whose
// members must all be placed (minSubGroup). Topology constraints name the KAI Topology
// topologyName, which SyncPodGang resolves from the PodGang's ClusterTopologyBinding.
func (b *Backend) BuildPodGroup(pg *schedulerv1alpha1.PodGang, topologyName string) (*kaiv2alpha2.PodGroup, error) {
	queue := b.Queue(pg.Labels)
	if queue == "" {
		return nil, fmt.Errorf("no KAI queue: label the PodCliqueSet %s or set defaultQueue in the kai-scheduler profile", kaiv2alpha2.QueueLabel)
	}
	parents := map[string]string{}
	var subGroups []kaiv2alpha2.SubGroup
	for _, cfg := range pg.Spec.TopologyConstraintGroupConfigs {
		for _, member := range cfg.PodGroupNames {
			parents[member] = cfg.Name
		}
		subGroups = append(subGroups, kaiv2alpha2.SubGroup{
			Name: cfg.Name, MinSubGroup: ptr.To(int32(len(cfg.PodGroupNames))),
			TopologyConstraint: topologyConstraint(topologyName, cfg.TopologyConstraint),
		})
	}
	for _, g := range pg.Spec.PodGroups {
		sg := kaiv2alpha2.SubGroup{
			Name: g.Name, MinMember: ptr.To(g.MinReplicas),
			TopologyConstraint: topologyConstraint(topologyName, g.TopologyConstraint),
		}
		if p, ok := parents[g.Name]; ok {
			sg.Parent = ptr.To(p)
		}
		subGroups = append(subGroups, sg)
	}
	sort.SliceStable(subGroups, func(i, j int) bool { return subGroups[i].Name < subGroups[j].Name })
	labels := map[string]string{
		grovev1alpha1.LabelManagedBy: "backend-controller", grovev1alpha1.LabelPodGang: pg.Name,
		kaiv2alpha2.QueueLabel: queue,
	}
	if pool := pg.Labels[NodePoolLabel]; pool != "" {
		labels[NodePoolLabel] = pool
	}
	out := &kaiv2alpha2.PodGroup{Spec: kaiv2alpha2.PodGroupSpec{
		MinMember: ptr.To(pg.Spec.MinMember()), Queue: queue, PriorityClassName: pg.Spec.PriorityClassName,
		SubGroups: subGroups, TopologyConstraint: topologyConstraint(topologyName, pg.Spec.TopologyConstraint),
	}}
	out.Name, out.Namespace, out.Labels = pg.Name, pg.Namespace, labels
	return out, nil
}

func topologyConstraint(name string, tc *schedulerv1alpha1.TopologyConstraint) *kaiv2alpha2.TopologyConstraint {
	required, preferred := topologyconstraints.RequiredKey(tc), topologyconstraints.PreferredKey(tc)
	if required == "" && preferred == "" {
		return nil
	}
	return &kaiv2alpha2.TopologyConstraint{Topology: name, RequiredTopologyLevel: required, PreferredTopologyLevel: preferred}
}

// OnPodGangDelete has nothing to do: the PodGroup is owned by the PodGang.
func (b *Backend) OnPodGangDelete(context.Context, *schedulerv1alpha1.PodGang) error { return nil }

// PreparePod applies KAI's pod contract: its scheduler, the PodGroup (annotation), the subgroup
// (label, the PodClique) and no PodGroup of KAI's own podgrouper.
func (b *Backend) PreparePod(pod *corev1.Pod) {
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = kaiv2alpha2.SchedulerName
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if gang := pod.Labels[grovev1alpha1.LabelPodGang]; gang != "" {
		pod.Annotations[kaiv2alpha2.PodGroupNameAnnotation] = gang
	}
	if clique := pod.Labels[grovev1alpha1.LabelPodClique]; clique != "" {
		pod.Labels[kaiv2alpha2.SubGroupLabel] = clique
	}
	pod.Annotations[kaiv2alpha2.SkipPodGrouperAnnotation] = "true"
}

// ValidatePodCliqueSet requires a queue: KAI schedules nothing outside one. The PodCliqueSet's
// label wins; a clique's label is used as upstream Grove manifests set it there (the operator
// carries both onto the PodGang).
func (b *Backend) ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Labels[kaiv2alpha2.QueueLabel] != "" {
			return nil
		}
	}
	if b.Queue(pcs.Labels) == "" {
		return field.ErrorList{field.Required(field.NewPath("metadata", "labels").Key(kaiv2alpha2.QueueLabel),
			"kai-scheduler needs a queue: set this label or defaultQueue in the kai-scheduler profile")}
	}
	return nil
}

// NotHonoured is empty: KAI honours gangs, subgroups and both topology levels.
func (b *Backend) NotHonoured(*grovev1alpha1.PodCliqueSet, map[string]*schedulerv1alpha1.PodGang) []string {
	return nil
}

// KeepsTopology is true: KAI places by its own Topology objects (TopologySyncer).
func (b *Backend) KeepsTopology() bool { return true }

// OwnedTypes is KAI's PodGroup.
func (b *Backend) OwnedTypes() []client.Object { return []client.Object{&kaiv2alpha2.PodGroup{}} }

// GangScheduling reports whether PodGangs are placed whole.
func (b *Backend) GangScheduling() bool { return true }

// BuildObjects is the KAI PodGroup of a PodGang, in the Topology the binding gives (its
// schedulerTopologyBindings entry for KAI, or the one the backend-controller creates).
func (b *Backend) BuildObjects(pg *schedulerv1alpha1.PodGang, binding *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error) {
	topologyName := pg.Annotations[schedulerv1alpha1.AnnotationTopologyName]
	if binding != nil && topologyName == binding.Name {
		topologyName = TopologyName(binding)
	}
	want, err := b.BuildPodGroup(pg, topologyName)
	if err != nil {
		return nil, err
	}
	want.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pg, schedulerv1alpha1.GroupVersion.WithKind("PodGang"))}
	return []client.Object{want}, nil
}

// SchedulingGroups is nil: KAI finds a gang's pods by their pod-group annotation.
func (b *Backend) SchedulingGroups(*schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup {
	return nil
}
