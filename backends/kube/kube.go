// Package kube is the kube-scheduler backend. Plain mode only names the scheduler: pods are
// placed one by one. Gang mode (gangScheduling: true) turns each PodGang into a Kubernetes
// Workload API gang and points every pod at its PodGroup when it is created. Where the API
// server serves CompositePodGroup (scheduling.k8s.io/v1alpha3, Kubernetes 1.37's feature gate
// CompositePodGroup), the gang is hierarchical: one composite group per PodGang, intermediate
// composites for the scaling-group topology groups, and one PodGroup per pod group with that
// group's own minimum. Without it the gang is flat: one Workload and one PodGroup whose minimum
// is the PodGang's total, so per-clique minimums are not kept.
package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/internal/ownedobject"
	"github.com/kubegrove/grove/internal/app/servedapis"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
)

// SchedulerName is the pod schedulerName of kube-scheduler.
const SchedulerName = corev1.DefaultSchedulerName

// GangTemplateName is the one pod-group template of each Workload the backend creates.
const GangTemplateName = "gang"

// Reasons of SchedulerBackendReady=True.
const (
	ReasonPodsScheduledIndividually = "PodsScheduledIndividually"
	ReasonWorkloadCreated           = "WorkloadCreated"
	// ReasonAwaitingPods: gang mode holds a new gang's Workload API objects until its pods exist.
	ReasonAwaitingPods = "AwaitingPods"
	// ReasonCompositeWorkloadCreated: a hierarchical gang keeps each pod group's minimum.
	ReasonCompositeWorkloadCreated = "CompositeWorkloadCreated"
)

// Mode is how the backend places pods.
type Mode string

// Modes of the kube-scheduler backend.
const (
	// ModePlain: pods are placed one by one.
	ModePlain Mode = "plain"
	// ModeGang: each PodGang is one flat gang of its total minimum.
	ModeGang Mode = "gang"
	// ModeCompositeGang: each PodGang is a hierarchical gang; every pod group keeps its minimum.
	ModeCompositeGang Mode = "composite-gang"
)

// CompositePodGroupHelp says how to keep per-clique minimums; the flat gang mode reports it.
const CompositePodGroupHelp = "serve CompositePodGroup (kube-apiserver and kube-scheduler --feature-gates=CompositePodGroup=true, " +
	"kube-apiserver --runtime-config=scheduling.k8s.io/v1alpha3=true) to keep each pod group's minimum"

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
	// composite is set by Init when gang mode finds CompositePodGroup served.
	composite bool
}

// New returns the backend for a profile's config; c may be nil where nothing is synced.
func New(cfg configv1alpha1.KubeSchedulerConfig, c client.Client) *Backend {
	return &Backend{cfg: cfg, client: c}
}

// Name returns kube-scheduler.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKube }

// PodSchedulerName returns default-scheduler.
func (b *Backend) PodSchedulerName() string { return SchedulerName }

// Init checks in gang mode that the API server serves the Workload API, and whether it serves
// CompositePodGroup too, which makes the gangs hierarchical. It logs the mode it chose.
func (b *Backend) Init(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("backend", configv1alpha1.SchedulerNameKube)
	if !b.cfg.GangScheduling {
		logger.Info("kube-scheduler backend runs in plain mode: pods are placed one by one", "mode", ModePlain)
		return nil
	}
	mapper := b.client.RESTMapper()
	if err := servedapis.Check(mapper, WorkloadAPIHelp,
		schedulingv1beta1.SchemeGroupVersion.WithKind("Workload"), schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup")); err != nil {
		return err
	}
	_, err := mapper.RESTMapping(schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup").GroupKind(), schedulingv1alpha3.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		b.composite = true
		logger.Info("kube-scheduler backend runs in composite gang mode: CompositePodGroup is served, every pod group keeps its own minimum", "mode", ModeCompositeGang)
	case meta.IsNoMatchError(err):
		logger.Info("kube-scheduler backend runs in flat gang mode: CompositePodGroup is not served, a PodGang's pod groups share one minimum; "+CompositePodGroupHelp, "mode", ModeGang)
	default:
		return fmt.Errorf("looking up %s: %w", schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup"), err)
	}
	return nil
}

// Mode is the mode Init chose (before Init: gang mode is flat).
func (b *Backend) Mode() Mode {
	switch {
	case !b.cfg.GangScheduling:
		return ModePlain
	case b.composite:
		return ModeCompositeGang
	}
	return ModeGang
}

// SetComposite makes gang mode hierarchical without asking the API server, for tools that
// render objects offline (kubectl grove render --composite-pod-groups).
func (b *Backend) SetComposite(on bool) { b.composite = on && b.cfg.GangScheduling }

// SyncPodGang keeps, in gang mode, the PodGang's Workload API objects as built here. A new gang
// gets them once all its pods exist (the operator's Initialized condition): kube-scheduler
// re-checks a gang short of its minimum at the arrival of each of its pods (1,000 pods created
// one after another cost it ~440,000 checks and 25 s in make bench), while a pod whose PodGroup
// does not exist yet waits at no cost; given the objects at once, it places the whole gang.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	if !b.cfg.GangScheduling {
		return ReasonPodsScheduledIndividually, "kube-scheduler places the pods one by one; it needs no objects", nil
	}
	if !meta.IsStatusConditionTrue(pg.Status.Conditions, schedulerv1alpha1.ConditionInitialized) {
		err := b.client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: pg.Name}, &schedulingv1beta1.Workload{})
		switch {
		case apierrors.IsNotFound(err):
			log.FromContext(ctx).V(1).Info("holding the gang's Workload API objects until its pods exist", "podGang", klog.KObj(pg), "pods", pg.Spec.MinMember())
			return ReasonAwaitingPods, fmt.Sprintf("kube-scheduler gets the gang's Workload and PodGroups once its pods exist (PodGang condition Initialized): "+
				"its pods wait for their PodGroup until then, and the gang of %d pods is placed at once", pg.Spec.MinMember()), nil
		case err != nil:
			return "", "", err
		}
		// Objects created earlier are kept in step while a pod is missing (one lost, or a scale-out).
	}
	if b.composite {
		if objs, flattened, ok := BuildCompositeObjects(pg); ok {
			return b.syncComposite(ctx, pg, objs, flattened)
		}
	}
	reason, message, err := b.syncFlat(ctx, pg)
	if err == nil && b.composite {
		// Even flattened, the tree did not fit: the PodGang is one flat gang.
		message = fmt.Sprintf("%s; flattened: its %d pod groups exceed CompositePodGroup's limits (8 templates per list, depth 4), so they share one minimum",
			message, len(pg.Spec.PodGroups))
	}
	return reason, message, err
}

// syncFlat keeps the flat gang: one Workload and one PodGroup asking for the PodGang's total.
func (b *Backend) syncFlat(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	wantWorkload, wantGroup := BuildWorkload(pg), BuildPodGroup(pg)
	if err := ensure(ctx, b.client, pg, &schedulingv1beta1.Workload{}, wantWorkload, workloadFields); err != nil {
		return "", "", fmt.Errorf("keeping Workload %s: %w", wantWorkload.Name, err)
	}
	if err := ensure(ctx, b.client, pg, &schedulingv1beta1.PodGroup{}, wantGroup, podGroupFields); err != nil {
		return "", "", fmt.Errorf("PodGroup %s: %w", wantGroup.Name, err)
	}
	if err := b.deleteStale(ctx, pg, []client.Object{wantGroup}); err != nil {
		return "", "", err
	}
	return ReasonWorkloadCreated, fmt.Sprintf("Workload and PodGroup %s ask kube-scheduler for a gang of %d pods", pg.Name, pg.Spec.MinMember()), nil
}

// syncComposite keeps the hierarchical gang: the Workload, then each CompositePodGroup parent
// first, then the PodGroups, and deletes the groups of an earlier shape.
func (b *Backend) syncComposite(ctx context.Context, pg *schedulerv1alpha1.PodGang, objs []client.Object, flattened []string) (string, string, error) {
	composites, groups := 0, 0
	for _, want := range objs {
		var err error
		switch w := want.(type) {
		case *schedulingv1beta1.Workload:
			err = ensure(ctx, b.client, pg, &schedulingv1beta1.Workload{}, w, workloadFields)
		case *schedulingv1alpha3.CompositePodGroup:
			composites++
			err = ensure(ctx, b.client, pg, &schedulingv1alpha3.CompositePodGroup{}, w, compositePodGroupFields)
		case *schedulingv1beta1.PodGroup:
			groups++
			err = ensure(ctx, b.client, pg, &schedulingv1beta1.PodGroup{}, w, podGroupFields)
		}
		if err != nil {
			return "", "", fmt.Errorf("%T %s: %w", want, want.GetName(), err)
		}
	}
	if err := b.deleteStale(ctx, pg, objs); err != nil {
		return "", "", err
	}
	message := fmt.Sprintf("Workload %s, %d CompositePodGroups and %d PodGroups ask kube-scheduler for a gang of %d pod groups, each with its own minimum",
		pg.Name, composites, groups, groups)
	if len(flattened) > 0 {
		message += "; flattened to fit CompositePodGroup's limits (8 templates per list, depth 4): " + strings.Join(flattened, "; ")
	}
	return ReasonCompositeWorkloadCreated, message, nil
}

// deleteStale deletes the PodGang's PodGroups and CompositePodGroups that are not wanted: those
// of pod groups it no longer has, or of the other mode after a restart in another one.
func (b *Backend) deleteStale(ctx context.Context, pg *schedulerv1alpha1.PodGang, wanted []client.Object) error {
	keep := map[string]bool{}
	for _, o := range wanted {
		keep[fmt.Sprintf("%T/%s", o, o.GetName())] = true
	}
	lists := []client.ObjectList{&schedulingv1beta1.PodGroupList{}}
	if b.composite {
		lists = append(lists, &schedulingv1alpha3.CompositePodGroupList{})
	}
	for _, list := range lists {
		if err := b.client.List(ctx, list, client.InNamespace(pg.Namespace), client.MatchingLabels{grovev1alpha1.LabelPodGang: pg.Name}); err != nil {
			return err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			o := item.(client.Object)
			if keep[fmt.Sprintf("%T/%s", o, o.GetName())] || !metav1.IsControlledBy(o, pg) || !o.GetDeletionTimestamp().IsZero() {
				continue
			}
			log.FromContext(ctx).Info("deleting a Workload API object the PodGang no longer has", "kind", fmt.Sprintf("%T", o), "object", klog.KObj(o))
			if err := b.client.Delete(ctx, o, client.Preconditions{UID: ptr.To(o.GetUID())}); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// The fields the backend owns of each Workload API object: its labels and the spec fields it
// sets (the API server defaults others, disruption mode and priority, that must not count as
// drift). Their specs are largely immutable, so a drifted object is recreated, and each write is
// checked against what the API server stored (Verify).
var (
	workloadFields = ownedobject.Fields[*schedulingv1beta1.Workload]{
		Same: func(h, w *schedulingv1beta1.Workload) bool {
			return ownedobject.HasLabels(h, w) && sameWorkloadSpec(h, w)
		},
		Set: func(h, w *schedulingv1beta1.Workload) {
			ownedobject.SetLabels(h, w)
			h.Spec.PodGroupTemplates, h.Spec.CompositePodGroupTemplates = w.Spec.PodGroupTemplates, w.Spec.CompositePodGroupTemplates
		},
		Recreate: true,
		// Labels are stored as sent; what an API server drops silently are spec fields.
		Verify: kept(sameWorkloadSpec),
	}
	compositePodGroupFields = ownedobject.Fields[*schedulingv1alpha3.CompositePodGroup]{
		Same: func(h, w *schedulingv1alpha3.CompositePodGroup) bool {
			return ownedobject.HasLabels(h, w) && sameCompositePodGroupSpec(h, w)
		},
		// Its fields are immutable: the update is refused and the object recreated.
		Set: func(h, w *schedulingv1alpha3.CompositePodGroup) {
			ownedobject.SetLabels(h, w)
			h.Spec.ParentCompositePodGroupName, h.Spec.WorkloadRef = w.Spec.ParentCompositePodGroupName, w.Spec.WorkloadRef
			h.Spec.SchedulingPolicy, h.Spec.SchedulingConstraints = w.Spec.SchedulingPolicy, w.Spec.SchedulingConstraints
		},
		Recreate: true,
		// Labels are stored as sent; what an API server drops silently are spec fields.
		Verify: kept(sameCompositePodGroupSpec),
	}
	podGroupFields = ownedobject.Fields[*schedulingv1beta1.PodGroup]{
		Same: func(h, w *schedulingv1beta1.PodGroup) bool {
			return ownedobject.HasLabels(h, w) && samePodGroupSpec(h, w)
		},
		Set: func(h, w *schedulingv1beta1.PodGroup) {
			ownedobject.SetLabels(h, w)
			h.Spec.SchedulingPolicy, h.Spec.SchedulingConstraints = w.Spec.SchedulingPolicy, w.Spec.SchedulingConstraints
			h.Spec.ParentCompositePodGroupName, h.Spec.WorkloadRef = w.Spec.ParentCompositePodGroupName, w.Spec.WorkloadRef
		},
		Recreate: true,
		// Labels are stored as sent; what an API server drops silently are spec fields.
		Verify: kept(samePodGroupSpec),
	}
)

// sameWorkloadSpec compares the spec fields the backend sets.
func sameWorkloadSpec(h, w *schedulingv1beta1.Workload) bool {
	return equality.Semantic.DeepEqual(h.Spec.ControllerRef, w.Spec.ControllerRef) &&
		equality.Semantic.DeepEqual(podGroupTemplateShapes(h.Spec.PodGroupTemplates), podGroupTemplateShapes(w.Spec.PodGroupTemplates)) &&
		equality.Semantic.DeepEqual(compositeTemplateShapes(h.Spec.CompositePodGroupTemplates), compositeTemplateShapes(w.Spec.CompositePodGroupTemplates))
}

// sameCompositePodGroupSpec compares the spec fields the backend sets.
func sameCompositePodGroupSpec(h, w *schedulingv1alpha3.CompositePodGroup) bool {
	return equality.Semantic.DeepEqual(h.Spec.ParentCompositePodGroupName, w.Spec.ParentCompositePodGroupName) &&
		equality.Semantic.DeepEqual(h.Spec.WorkloadRef, w.Spec.WorkloadRef) &&
		equality.Semantic.DeepEqual(h.Spec.SchedulingPolicy, w.Spec.SchedulingPolicy) &&
		equality.Semantic.DeepEqual(h.Spec.SchedulingConstraints, w.Spec.SchedulingConstraints)
}

// samePodGroupSpec compares the spec fields the backend sets.
func samePodGroupSpec(h, w *schedulingv1beta1.PodGroup) bool {
	return equality.Semantic.DeepEqual(h.Spec.WorkloadRef, w.Spec.WorkloadRef) &&
		equality.Semantic.DeepEqual(h.Spec.ParentCompositePodGroupName, w.Spec.ParentCompositePodGroupName) &&
		equality.Semantic.DeepEqual(h.Spec.SchedulingPolicy, w.Spec.SchedulingPolicy) &&
		equality.Semantic.DeepEqual(h.Spec.SchedulingConstraints, w.Spec.SchedulingConstraints)
}

// podGroupTemplateShapes and compositeTemplateShapes keep of each template the fields the
// backend sets.
func podGroupTemplateShapes(ts []schedulingv1beta1.PodGroupTemplate) []schedulingv1beta1.PodGroupTemplate {
	out := make([]schedulingv1beta1.PodGroupTemplate, 0, len(ts))
	for _, t := range ts {
		out = append(out, schedulingv1beta1.PodGroupTemplate{Name: t.Name, SchedulingPolicy: t.SchedulingPolicy, SchedulingConstraints: t.SchedulingConstraints})
	}
	return out
}

func compositeTemplateShapes(ts []schedulingv1beta1.CompositePodGroupTemplate) []schedulingv1beta1.CompositePodGroupTemplate {
	out := make([]schedulingv1beta1.CompositePodGroupTemplate, 0, len(ts))
	for _, t := range ts {
		out = append(out, schedulingv1beta1.CompositePodGroupTemplate{
			Name: t.Name, SchedulingPolicy: t.SchedulingPolicy, SchedulingConstraints: t.SchedulingConstraints,
			PodGroupTemplates:          podGroupTemplateShapes(t.PodGroupTemplates),
			CompositePodGroupTemplates: compositeTemplateShapes(t.CompositePodGroupTemplates),
		})
	}
	return out
}

// ensure keeps want, owned by the PodGang (ownedobject.Keep, which logs what it wrote).
func ensure[T client.Object](ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, have, want T, fields ownedobject.Fields[T]) error {
	_, err := ownedobject.Keep(ctx, c, pg, have, want, fields)
	return err
}

// kept turns a write the API server did not store as written into an error: it drops fields of
// disabled feature gates silently, and a gang would lose its topology unnoticed.
func kept[T client.Object](same func(have, want T) bool) func(stored, wanted T) error {
	return func(stored, wanted T) error {
		if same(stored, wanted) {
			return nil
		}
		help := TopologyGateHelp
		if w, ok := any(wanted).(*schedulingv1beta1.Workload); ok && len(w.Spec.CompositePodGroupTemplates) > 0 {
			help += "; composite templates need the CompositePodGroup feature gate on kube-apiserver"
		}
		if p, ok := any(wanted).(*schedulingv1beta1.PodGroup); ok && p.Spec.ParentCompositePodGroupName != nil {
			help += "; a parent composite needs the CompositePodGroup feature gate on kube-apiserver"
		}
		return fmt.Errorf("the API server dropped fields of %s: %s", stored.GetName(), help)
	}
}

// BuildWorkload is the Workload of a PodGang: one gang template asking for its minimum.
func BuildWorkload(pg *schedulerv1alpha1.PodGang) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{
		ObjectMeta: objectMeta(pg, pg.Name),
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: controllerRef(pg),
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
		ObjectMeta: objectMeta(pg, pg.Name),
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: pg.Name, TemplateName: GangTemplateName},
			SchedulingPolicy:      gangPolicy(pg),
			SchedulingConstraints: schedulingConstraints(pg),
		},
	}
}

func controllerRef(pg *schedulerv1alpha1.PodGang) *schedulingv1beta1.TypedLocalObjectReference {
	return &schedulingv1beta1.TypedLocalObjectReference{APIGroup: schedulerv1alpha1.GroupVersion.Group, Kind: "PodGang", Name: pg.Name}
}

func objectMeta(pg *schedulerv1alpha1.PodGang, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: pg.Namespace,
		Labels: map[string]string{grovev1alpha1.LabelManagedBy: "backend-controller", grovev1alpha1.LabelPodGang: pg.Name},
	}
}

func gangPolicy(pg *schedulerv1alpha1.PodGang) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: max(pg.Spec.MinMember(), 1)}}
}

// schedulingConstraints is the gang's one required topology key; the Workload API has no preferred one
// (admission rejects preferred constraints in gang mode).
func schedulingConstraints(pg *schedulerv1alpha1.PodGang) *schedulingv1beta1.PodGroupSchedulingConstraints {
	if key := topologyconstraints.RequiredKey(pg.Spec.TopologyConstraint); key != "" {
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
// honours no required constraint; gang mode has no preferred one. A clique's or scaling
// group's own required level is admitted in gang mode: a hierarchical gang keeps it on its
// level, a flat one does not, and the PodCliqueSet's SchedulingConstraintsHonored says so
// (admission cannot tell which the backend-controller runs).
//
// A PodCliqueSet queued gang by gang in Kueue is placed by Kueue's topology-aware scheduling
// (docs/kueue.md): its required levels are admitted, and the gang's QueueAdmitted condition says
// when the queue's ClusterQueue has no topology to honour them.
func (b *Backend) ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	placedByKueue := kueuePlaced(pcs)
	for _, c := range topologyconstraints.All(pcs) {
		required, preferred := topologyconstraints.Required(c.Constraint), topologyconstraints.Preferred(c.Constraint)
		switch {
		case !b.cfg.GangScheduling && required != "" && !placedByKueue:
			errs = append(errs, field.Invalid(c.Path.Child("pack", "required"), required,
				"kube-scheduler without gangScheduling cannot keep pods within a topology domain; use a topology-aware backend or enable gangScheduling"))
		case b.cfg.GangScheduling && preferred != "":
			errs = append(errs, field.Invalid(c.Path.Child("pack", "preferred"), preferred,
				"kube-scheduler gang scheduling has no preferred topology level; use pack.required"))
		}
	}
	return errs
}

// NotHonoured reports, in plain mode, that gangs are not kept together and preferred levels
// are ignored; in gang mode, the gangs that are flat (flatGangs). The levels of a PodCliqueSet queued gang by gang go to Kueue's topology-aware
// scheduling instead; its QueueAdmitted condition says when the queue cannot honour them.
func (b *Backend) NotHonoured(pcs *grovev1alpha1.PodCliqueSet, gangs map[string]*schedulerv1alpha1.PodGang) []string {
	if b.cfg.GangScheduling {
		return flatGangs(pcs, gangs)
	}
	var out []string
	if topologyconstraints.MaxGangSize(pcs) > 1 {
		out = append(out, "gang scheduling: kube-scheduler places pods one by one (enable gangScheduling in the kube-scheduler profile)")
	}
	if kueuePlaced(pcs) {
		return out
	}
	return append(out, topologyconstraints.PreferredIgnored(pcs, "kube-scheduler")...)
}

// flatGangs reports the PodGangs whose pod groups the backend-controller put in one scheduler
// group (gang mode without CompositePodGroup, as their status says): their pods are placed
// against the group's total, so neither each clique's minimum nor a clique's or scaling group's
// own pack.required is kept.
func flatGangs(pcs *grovev1alpha1.PodCliqueSet, gangs map[string]*schedulerv1alpha1.PodGang) []string {
	var flat []string
	for name, pg := range gangs {
		if len(pg.SharedSchedulingGroups()) > 0 {
			flat = append(flat, name)
		}
	}
	if len(flat) == 0 {
		return nil
	}
	sort.Strings(flat)
	if len(flat) > 3 {
		flat = append(flat[:3], fmt.Sprintf("and %d more", len(flat)-3))
	}
	out := []string{fmt.Sprintf("per-clique minimums: the pod groups of PodGang %s share one scheduler group and its total minimum; %s",
		strings.Join(flat, ", "), CompositePodGroupHelp)}
	pcsRequired := topologyconstraints.Required(pcs.Spec.Template.TopologyConstraint)
	for _, c := range topologyconstraints.All(pcs) {
		if r := topologyconstraints.Required(c.Constraint); r != "" && c.Level != topologyconstraints.LevelPodCliqueSet && r != pcsRequired {
			out = append(out, fmt.Sprintf("%s: a flat gang packs only at the PodCliqueSet's level, not at %q", c.Path.Child("pack", "required"), r))
		}
	}
	return out
}

// KeepsTopology is false: kube-scheduler reads topology keys from the Workload API objects.
func (b *Backend) KeepsTopology() bool { return false }

// kueuePlaced reports whether Kueue admits the PodCliqueSet gang by gang, and so places its
// gangs' pack constraints where the queue's ClusterQueue has a topology.
func kueuePlaced(pcs *grovev1alpha1.PodCliqueSet) bool {
	return grovev1alpha1.QueueNameOf(pcs) != "" && !grovev1alpha1.AdmittedByOwner(pcs)
}

// OwnedTypes are the Workload API kinds in gang mode.
func (b *Backend) OwnedTypes() []client.Object {
	switch b.Mode() {
	case ModeCompositeGang:
		return []client.Object{&schedulingv1beta1.Workload{}, &schedulingv1beta1.PodGroup{}, &schedulingv1alpha3.CompositePodGroup{}}
	case ModeGang:
		return []client.Object{&schedulingv1beta1.Workload{}, &schedulingv1beta1.PodGroup{}}
	}
	return nil
}

// SchedulingGroups names each pod group's scheduler group in gang mode: its own PodGroup in a
// hierarchical gang, the PodGang's one PodGroup in a flat gang. Plain mode has none.
func (b *Backend) SchedulingGroups(pg *schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup {
	if !b.cfg.GangScheduling {
		return nil
	}
	// Only the tree's fit matters here, not its objects.
	composite := b.composite && buildTree(pg) != nil
	out := make([]schedulerv1alpha1.SchedulingGroup, 0, len(pg.Spec.PodGroups))
	for _, g := range pg.Spec.PodGroups {
		name := pg.Name
		if composite {
			name = PodGroupObjectName(pg, g.Name)
		}
		out = append(out, schedulerv1alpha1.SchedulingGroup{PodGroup: g.Name, Name: name})
	}
	return out
}

// GangScheduling reports whether PodGangs are placed whole.
func (b *Backend) GangScheduling() bool { return b.cfg.GangScheduling }

// BuildObjects is the Workload and PodGroup of a PodGang in gang mode; plain mode has none.
func (b *Backend) BuildObjects(pg *schedulerv1alpha1.PodGang, _ *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error) {
	if !b.cfg.GangScheduling {
		return nil, nil
	}
	objs := []client.Object{BuildWorkload(pg), BuildPodGroup(pg)}
	if b.composite {
		if composite, _, ok := BuildCompositeObjects(pg); ok {
			objs = composite
		}
	}
	for _, o := range objs {
		o.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(pg, schedulerv1alpha1.GroupVersion.WithKind("PodGang"))})
	}
	return objs, nil
}
