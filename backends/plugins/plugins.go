// Package plugins is the scheduler-plugins coscheduling backend: each PodGang becomes a
// scheduling.x-k8s.io/v1alpha1 PodGroup of the same name, owned by the PodGang, whose minMember
// and minResources the coscheduling plugin waits for before it binds any member.
package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/internal/ownedobject"
	"github.com/kubegrove/grove/internal/app/servedapis"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
)

// ReasonPodGroupCreated is the reason of SchedulerBackendReady=True.
const ReasonPodGroupCreated = "PodGroupCreated"

// Backend is the scheduler-plugins coscheduling backend.
type Backend struct {
	cfg    configv1alpha1.SchedulerPluginsConfig
	client client.Client
}

// New returns the backend for a profile's config; c may be nil where nothing is synced.
func New(cfg configv1alpha1.SchedulerPluginsConfig, c client.Client) *Backend {
	return &Backend{cfg: cfg, client: c}
}

// Name returns scheduler-plugins.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNamePlugins }

// PodSchedulerName is the configured schedulerName of the scheduler-plugins scheduler.
func (b *Backend) PodSchedulerName() string { return b.cfg.SchedulerName }

// Init checks that the coscheduling PodGroup CRD is installed.
func (b *Backend) Init(context.Context) error {
	return servedapis.Check(b.client.RESTMapper(), "install scheduler-plugins' CRDs before running the scheduler-plugins backend",
		schedv1alpha1.SchemeGroupVersion.WithKind("PodGroup"))
}

// SyncPodGang keeps the PodGang's PodGroup as built here, from the PodGang alone.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	want := b.BuildPodGroup(pg)
	if _, err := ownedobject.Keep(ctx, b.client, pg, &schedv1alpha1.PodGroup{}, want, podGroupFields); err != nil { // logs what it wrote
		return "", "", fmt.Errorf("PodGroup %s: %w", want.Name, err)
	}
	return ReasonPodGroupCreated, fmt.Sprintf("coscheduling PodGroup %s needs %d pods", want.Name, want.Spec.MinMember), nil
}

// podGroupFields: the backend owns a PodGroup's spec and its labels.
var podGroupFields = ownedobject.Fields[*schedv1alpha1.PodGroup]{
	Same: func(have, want *schedv1alpha1.PodGroup) bool {
		return ownedobject.HasLabels(have, want) && equality.Semantic.DeepEqual(have.Spec, want.Spec)
	},
	Set: func(have, want *schedv1alpha1.PodGroup) {
		ownedobject.SetLabels(have, want)
		have.Spec = want.Spec
	},
}

// BuildPodGroup is the PodGroup of a PodGang: minMember its minimum, minResources every pod
// group's per-pod requests (podResourceRequests, written by the operator) times its minReplicas.
func (b *Backend) BuildPodGroup(pg *schedulerv1alpha1.PodGang) *schedv1alpha1.PodGroup {
	out := &schedv1alpha1.PodGroup{Spec: schedv1alpha1.PodGroupSpec{
		MinMember: pg.Spec.MinMember(), ScheduleTimeoutSeconds: b.cfg.ScheduleTimeoutSeconds,
		MinResources: pg.Spec.MinResources(),
	}}
	out.Name, out.Namespace = pg.Name, pg.Namespace
	out.Labels = map[string]string{grovev1alpha1.LabelManagedBy: "backend-controller", grovev1alpha1.LabelPodGang: pg.Name}
	return out
}

// OnPodGangDelete has nothing to do: the PodGroup is owned by the PodGang.
func (b *Backend) OnPodGangDelete(context.Context, *schedulerv1alpha1.PodGang) error { return nil }

// PreparePod names the scheduler and the pod's PodGroup.
func (b *Backend) PreparePod(pod *corev1.Pod) {
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = b.cfg.SchedulerName
	}
	if gang := pod.Labels[grovev1alpha1.LabelPodGang]; gang != "" {
		pod.Labels[schedv1alpha1.PodGroupLabel] = gang
	}
}

// ValidatePodCliqueSet rejects required topology constraints: coscheduling places a gang
// anywhere it fits.
func (b *Backend) ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	return topologyconstraints.RefuseRequired(pcs, "scheduler-plugins coscheduling cannot keep a gang within a topology domain; use a topology-aware backend")
}

// KeepsTopology is false: the coscheduling plugin keeps no topology object.
func (b *Backend) KeepsTopology() bool { return false }

// NotHonoured lists the preferred topology levels coscheduling ignores.
func (b *Backend) NotHonoured(pcs *grovev1alpha1.PodCliqueSet, _ map[string]*schedulerv1alpha1.PodGang) []string {
	return topologyconstraints.PreferredIgnored(pcs, "scheduler-plugins")
}

// OwnedTypes is the coscheduling PodGroup.
func (b *Backend) OwnedTypes() []client.Object { return []client.Object{&schedv1alpha1.PodGroup{}} }

// GangScheduling reports whether PodGangs are placed whole.
func (b *Backend) GangScheduling() bool { return true }

// BuildObjects is the coscheduling PodGroup of a PodGang.
func (b *Backend) BuildObjects(pg *schedulerv1alpha1.PodGang, _ *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error) {
	want := b.BuildPodGroup(pg)
	want.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pg, schedulerv1alpha1.GroupVersion.WithKind("PodGang"))}
	return []client.Object{want}, nil
}

// SchedulingGroups is nil: coscheduling finds a gang's pods by their pod-group label.
func (b *Backend) SchedulingGroups(*schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup {
	return nil
}
