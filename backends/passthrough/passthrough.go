// Package passthrough is the backend of schedulers Grove only hands pods to: upstream Grove's
// lpx-scheduler profile, and External profiles naming any scheduler a cluster runs. Pods carry
// the scheduler's name; no scheduler object is made (a scheduler that gang-schedules reads
// Grove's PodGangs itself); each PodGang is acknowledged at once; topology constraints are
// refused, since Grove cannot tell such a scheduler about them.
package passthrough

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// ReasonPassThrough is SchedulerBackendReady's reason for a pass-through backend's PodGangs.
const ReasonPassThrough = "PassThrough"

// lpxRefusal is upstream Grove's message for a topology constraint under lpx-scheduler.
const lpxRefusal = "lpx-scheduler does not support Grove topology constraints; placement topology must be expressed through the LPX workload contract"

// Backend hands pods to one scheduler by name.
type Backend struct {
	name    configv1alpha1.SchedulerName
	gang    bool
	refusal string
}

// LPX is upstream Grove's lpx-scheduler profile: LPX reads Grove's PodGangs and places each whole.
func LPX() *Backend {
	return &Backend{name: configv1alpha1.SchedulerNameLPX, gang: true, refusal: lpxRefusal}
}

// New is an External profile's backend: its pods name the profile's name.
func New(name configv1alpha1.SchedulerName, cfg configv1alpha1.ExternalSchedulerConfig) *Backend {
	return &Backend{name: name, gang: cfg.GangScheduling,
		refusal: fmt.Sprintf("%s is an External (pass-through) scheduler profile: Grove cannot hand it topology constraints; express placement in that scheduler's own terms", name)}
}

// Name is the profile's name.
func (b *Backend) Name() configv1alpha1.SchedulerName { return b.name }

// PodSchedulerName is the profile's name too.
func (b *Backend) PodSchedulerName() string { return string(b.name) }

// Init has nothing to check: the scheduler's API is its own.
func (b *Backend) Init(context.Context) error { return nil }

// SyncPodGang makes nothing and acknowledges the gang.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	log.FromContext(ctx).V(1).Info("pass-through backend: nothing to create, the PodGang is acknowledged", "backend", b.name, "podGang", pg.Name)
	return ReasonPassThrough, fmt.Sprintf("pods go to %s as they are; no scheduler object is made for the gang", b.name), nil
}

// BuildObjects is empty: there is no scheduler object.
func (b *Backend) BuildObjects(*schedulerv1alpha1.PodGang, *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error) {
	return nil, nil
}

// OnPodGangDelete has nothing to remove.
func (b *Backend) OnPodGangDelete(context.Context, *schedulerv1alpha1.PodGang) error { return nil }

// PreparePod names the scheduler.
func (b *Backend) PreparePod(pod *corev1.Pod) { pod.Spec.SchedulerName = string(b.name) }

// SchedulingGroups is nil: the scheduler finds a gang's pods itself.
func (b *Backend) SchedulingGroups(*schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup {
	return nil
}

// ValidatePodCliqueSet refuses every topology constraint, even an empty one (as upstream's lpx
// backend does): placement would silently ignore it.
func (b *Backend) ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	tp := field.NewPath("spec", "template")
	if pcs.Spec.Template.TopologyConstraint != nil {
		errs = append(errs, field.Forbidden(tp.Child("topologyConstraint"), b.refusal))
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.TopologyConstraint != nil {
			errs = append(errs, field.Forbidden(tp.Child("cliques").Index(i).Child("topologyConstraint"), b.refusal))
		}
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if g.TopologyConstraint != nil {
			errs = append(errs, field.Forbidden(tp.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint"), b.refusal))
		}
	}
	return errs
}

// NotHonoured is empty: what it cannot honour is refused.
func (b *Backend) NotHonoured(*grovev1alpha1.PodCliqueSet, map[string]*schedulerv1alpha1.PodGang) []string {
	return nil
}

// KeepsTopology is false: a pass-through scheduler reads the PodGang itself.
func (b *Backend) KeepsTopology() bool { return false }

// GangScheduling is what the profile says (true for LPX).
func (b *Backend) GangScheduling() bool { return b.gang }

// OwnedTypes is empty.
func (b *Backend) OwnedTypes() []client.Object { return nil }
