// Package kube is the kube-scheduler backend. Plain mode only names the scheduler: pods are
// placed one by one. Gang mode (gangScheduling: true) turns each PodGang into a Kubernetes
// Workload API gang — a scheduling.k8s.io/v1beta1 Workload and PodGroup whose gang policy asks
// for the PodGang's minimum — and points every pod at that PodGroup when it is created.
package kube

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/constraints"
	"github.com/kubegrove/grove/backends/served"
)

// SchedulerName is the pod schedulerName of kube-scheduler.
const SchedulerName = corev1.DefaultSchedulerName

// GangTemplateName is the one pod-group template of each Workload the backend creates.
const GangTemplateName = "gang"

// Reasons of SchedulerBackendReady=True.
const (
	ReasonPodsScheduledIndividually = "PodsScheduledIndividually"
	ReasonWorkloadCreated           = "WorkloadCreated"
)

// WorkloadAPIHelp says how to serve the Workload API; Init fails with it.
const WorkloadAPIHelp = "kube-scheduler gangScheduling needs the Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup): " +
	"start kube-apiserver with --feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true " +
	"and kube-scheduler with --feature-gates=GenericWorkload=true, or set gangScheduling: false in the kube-scheduler profile"

// TopologyGateHelp says how to keep topology constraints on Workload API objects.
const TopologyGateHelp = "topology constraints in gang mode need the TopologyAwareWorkloadScheduling feature gate on kube-apiserver and kube-scheduler"

// Backend is the kube-scheduler backend.
type Backend struct {
	cfg    configv1alpha1.KubeSchedulerConfig
	client client.Client
}

// New returns the backend for a profile's config; c may be nil where nothing is synced.
func New(cfg configv1alpha1.KubeSchedulerConfig, c client.Client) *Backend {
	return &Backend{cfg: cfg, client: c}
}

// Name returns kube-scheduler.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKube }

// PodSchedulerName returns default-scheduler.
func (b *Backend) PodSchedulerName() string { return SchedulerName }

// Init checks in gang mode that the API server serves the Workload API.
func (b *Backend) Init(context.Context) error {
	if !b.cfg.GangScheduling {
		return nil
	}
	return served.Check(b.client.RESTMapper(), WorkloadAPIHelp,
		schedulingv1beta1.SchemeGroupVersion.WithKind("Workload"), schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"))
}

// SyncPodGang keeps, in gang mode, the PodGang's Workload and PodGroup as built here.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	if !b.cfg.GangScheduling {
		return ReasonPodsScheduledIndividually, "kube-scheduler places the pods one by one; it needs no objects", nil
	}
	wantWorkload, wantGroup := BuildWorkload(pg), BuildPodGroup(pg)
	if err := b.ensure(ctx, pg, &schedulingv1beta1.Workload{}, wantWorkload, sameWorkload, repairWorkload); err != nil {
		return "", "", fmt.Errorf("Workload %s: %w", wantWorkload.Name, err)
	}
	if err := b.ensure(ctx, pg, &schedulingv1beta1.PodGroup{}, wantGroup, samePodGroup, repairPodGroup); err != nil {
		return "", "", fmt.Errorf("PodGroup %s: %w", wantGroup.Name, err)
	}
	return ReasonWorkloadCreated, fmt.Sprintf("Workload and PodGroup %s ask kube-scheduler for a gang of %d pods", pg.Name, pg.Spec.MinMember()), nil
}

// sameWorkload and samePodGroup compare the fields the backend sets; the API server defaults
// others (disruption mode, priority) that must not count as drift.
func sameWorkload(have, want client.Object) bool {
	h, w := have.(*schedulingv1beta1.Workload), want.(*schedulingv1beta1.Workload)
	if !equality.Semantic.DeepEqual(h.Spec.ControllerRef, w.Spec.ControllerRef) || len(h.Spec.PodGroupTemplates) != len(w.Spec.PodGroupTemplates) {
		return false
	}
	for i := range w.Spec.PodGroupTemplates {
		ht, wt := &h.Spec.PodGroupTemplates[i], &w.Spec.PodGroupTemplates[i]
		if ht.Name != wt.Name || !samePolicy(ht.SchedulingPolicy, wt.SchedulingPolicy, ht.SchedulingConstraints, wt.SchedulingConstraints) {
			return false
		}
	}
	return true
}

func samePodGroup(have, want client.Object) bool {
	h, w := have.(*schedulingv1beta1.PodGroup), want.(*schedulingv1beta1.PodGroup)
	return equality.Semantic.DeepEqual(h.Spec.WorkloadRef, w.Spec.WorkloadRef) &&
		samePolicy(h.Spec.SchedulingPolicy, w.Spec.SchedulingPolicy, h.Spec.SchedulingConstraints, w.Spec.SchedulingConstraints)
}

func samePolicy(have, want schedulingv1beta1.PodGroupSchedulingPolicy, haveC, wantC *schedulingv1beta1.PodGroupSchedulingConstraints) bool {
	return equality.Semantic.DeepEqual(have, want) && equality.Semantic.DeepEqual(haveC, wantC)
}

func repairWorkload(have, want client.Object) {
	have.(*schedulingv1beta1.Workload).Spec.PodGroupTemplates = want.(*schedulingv1beta1.Workload).Spec.PodGroupTemplates
}

func repairPodGroup(have, want client.Object) {
	h, w := have.(*schedulingv1beta1.PodGroup), want.(*schedulingv1beta1.PodGroup)
	h.Spec.SchedulingPolicy, h.Spec.SchedulingConstraints = w.Spec.SchedulingPolicy, w.Spec.SchedulingConstraints
}

// ensure creates want, owned by the PodGang, or repairs the existing object when the fields the
// backend sets drifted: in place where the API allows it, else by recreating it (the Workload
// API's specs are largely immutable). A PodGroup still referenced by pods is held by its
// protection finalizer, so a recreate may have to wait for the old one to go.
func (b *Backend) ensure(ctx context.Context, pg *schedulerv1alpha1.PodGang, have, want client.Object, same func(have, want client.Object) bool, repair func(have, want client.Object)) error {
	if err := controllerutil.SetControllerReference(pg, want, b.client.Scheme()); err != nil {
		return err
	}
	wanted := want.DeepCopyObject().(client.Object)
	err := b.client.Get(ctx, client.ObjectKeyFromObject(want), have)
	log := log.FromContext(ctx).WithValues("kind", fmt.Sprintf("%T", want), "name", want.GetName())
	switch {
	case apierrors.IsNotFound(err):
		log.Info("creating the Workload API object")
		return kept(b.client.Create(ctx, want), want, wanted, same)
	case err != nil:
		return err
	case !have.GetDeletionTimestamp().IsZero():
		return fmt.Errorf("waiting for the replaced object to be deleted")
	case same(have, want) && metav1.IsControlledBy(have, pg):
		return nil
	}
	repair(have, want)
	if err := controllerutil.SetControllerReference(pg, have, b.client.Scheme()); err != nil {
		return err
	}
	log.Info("repairing the Workload API object: it drifted from the PodGang")
	if err := b.client.Update(ctx, have); !apierrors.IsInvalid(err) {
		return kept(err, have, wanted, same)
	}
	log.Info("recreating the Workload API object: the drifted fields are immutable")
	if err := b.client.Delete(ctx, have, client.Preconditions{UID: ptr.To(have.GetUID())}); client.IgnoreNotFound(err) != nil {
		return err
	}
	return kept(b.client.Create(ctx, want), want, wanted, same)
}

// kept turns a successful write the API server did not store as written into an error: it drops
// fields of disabled feature gates silently, and a gang would lose its topology unnoticed.
func kept(writeErr error, stored, wanted client.Object, same func(have, want client.Object) bool) error {
	if writeErr != nil || same(stored, wanted) {
		return writeErr
	}
	return fmt.Errorf("the API server dropped fields of %s: %s", stored.GetName(), TopologyGateHelp)
}

// BuildWorkload is the Workload of a PodGang: one gang template asking for its minimum.
func BuildWorkload(pg *schedulerv1alpha1.PodGang) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{
		ObjectMeta: objectMeta(pg),
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: schedulerv1alpha1.GroupVersion.Group, Kind: "PodGang", Name: pg.Name},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
				Name:                  GangTemplateName,
				SchedulingPolicy:      gangPolicy(pg),
				SchedulingConstraints: schedulingConstraints(pg),
			}},
		},
	}
}

// BuildPodGroup is the PodGroup every pod of the PodGang names: the runtime instance of the
// Workload's gang template.
func BuildPodGroup(pg *schedulerv1alpha1.PodGang) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: objectMeta(pg),
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: pg.Name, TemplateName: GangTemplateName},
			SchedulingPolicy:      gangPolicy(pg),
			SchedulingConstraints: schedulingConstraints(pg),
		},
	}
}

func objectMeta(pg *schedulerv1alpha1.PodGang) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: pg.Name, Namespace: pg.Namespace,
		Labels: map[string]string{grovev1alpha1.LabelManagedBy: "backend-controller", grovev1alpha1.LabelPodGang: pg.Name},
	}
}

func gangPolicy(pg *schedulerv1alpha1.PodGang) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: max(pg.Spec.MinMember(), 1)}}
}

// schedulingConstraints is the gang's one required topology key; the Workload API has no preferred one
// (admission rejects preferred constraints in gang mode).
func schedulingConstraints(pg *schedulerv1alpha1.PodGang) *schedulingv1beta1.PodGroupSchedulingConstraints {
	if key := constraints.RequiredKey(pg.Spec.TopologyConstraint); key != "" {
		return &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
	}
	return nil
}

// OnPodGangDelete has nothing to do: the Workload and PodGroup are owned by the PodGang.
func (b *Backend) OnPodGangDelete(context.Context, *schedulerv1alpha1.PodGang) error { return nil }

// PreparePod names kube-scheduler and, in gang mode, the PodGang's PodGroup (immutable on a pod,
// hence set at creation).
func (b *Backend) PreparePod(pod *corev1.Pod) {
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = SchedulerName
	}
	if gang := pod.Labels[grovev1alpha1.LabelPodGang]; b.cfg.GangScheduling && gang != "" {
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(gang)}
	}
}

// ValidatePodCliqueSet rejects topology constraints kube-scheduler cannot honour: plain mode
// honours no required constraint; gang mode packs a whole gang at one required level and
// nothing else.
func (b *Backend) ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	pcsRequired := constraints.Required(pcs.Spec.Template.TopologyConstraint)
	for _, c := range constraints.All(pcs) {
		required, preferred := constraints.Required(c.Constraint), constraints.Preferred(c.Constraint)
		switch {
		case !b.cfg.GangScheduling && required != "":
			errs = append(errs, field.Invalid(c.Path.Child("pack", "required"), required,
				"kube-scheduler without gangScheduling cannot keep pods within a topology domain; use a topology-aware backend or enable gangScheduling"))
		case b.cfg.GangScheduling && preferred != "":
			errs = append(errs, field.Invalid(c.Path.Child("pack", "preferred"), preferred,
				"kube-scheduler gang scheduling has no preferred topology level; use pack.required"))
		case b.cfg.GangScheduling && required != "" && c.Level != constraints.LevelPodCliqueSet && required != pcsRequired:
			errs = append(errs, field.Invalid(c.Path.Child("pack", "required"), required,
				"kube-scheduler gang scheduling packs a whole gang at one level; set it on spec.template.topologyConstraint"))
		}
	}
	return errs
}

// NotHonoured reports, in plain mode, that gangs are not kept together and preferred levels
// are ignored.
func (b *Backend) NotHonoured(pcs *grovev1alpha1.PodCliqueSet) []string {
	if b.cfg.GangScheduling {
		return nil
	}
	var out []string
	if constraints.MaxGangSize(pcs) > 1 {
		out = append(out, "gang scheduling: kube-scheduler places pods one by one (enable gangScheduling in the kube-scheduler profile)")
	}
	for _, c := range constraints.All(pcs) {
		if p := constraints.Preferred(c.Constraint); p != "" {
			out = append(out, fmt.Sprintf("%s: preferred topology %q is ignored by kube-scheduler", c.Path.Child("pack", "preferred"), p))
		}
	}
	return out
}

// OwnedTypes are the Workload API kinds in gang mode.
func (b *Backend) OwnedTypes() []client.Object {
	if !b.cfg.GangScheduling {
		return nil
	}
	return []client.Object{&schedulingv1beta1.Workload{}, &schedulingv1beta1.PodGroup{}}
}

// GangScheduling reports whether PodGangs are placed whole.
func (b *Backend) GangScheduling() bool { return b.cfg.GangScheduling }

// BuildObjects is the Workload and PodGroup of a PodGang in gang mode; plain mode has none.
func (b *Backend) BuildObjects(pg *schedulerv1alpha1.PodGang, _ *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error) {
	if !b.cfg.GangScheduling {
		return nil, nil
	}
	objs := []client.Object{BuildWorkload(pg), BuildPodGroup(pg)}
	for _, o := range objs {
		o.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(pg, schedulerv1alpha1.GroupVersion.WithKind("PodGang"))})
	}
	return objs, nil
}
