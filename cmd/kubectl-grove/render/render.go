package render

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/podclique"
	"github.com/kubegrove/grove/controllers/operator/podcliquescalinggroup"
	"github.com/kubegrove/grove/controllers/operator/podcliqueset"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/controllers/trainer/statusserver"
	"github.com/kubegrove/grove/controllers/trainer/tojobset"
	"github.com/kubegrove/grove/controllers/trainer/topodcliqueset"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
	"github.com/kubegrove/grove/webhooks/pcsadmission"
	"github.com/kubegrove/grove/webhooks/topologyadmission"
	"github.com/kubegrove/grove/webhooks/trainjobadmission"
)

// Webhook names, as admission refusals name them.
const (
	webhookPodCliqueSet = "vpodcliqueset.grove.io"
	webhookTrainJob     = "vtrainjob.trainer.kubeflow.org"
	webhookRuntime      = "vtrainingruntime.trainer.kubeflow.org"
)

// Workload is what one PodCliqueSet or TrainJob of the input becomes.
type Workload struct {
	// Source is the object as given.
	Source client.Object
	// Rejected is admission's refusal, worded as grove-webhook's; nothing is rendered then.
	Rejected error
	// Unrenderable says why a workload admission would take cannot be rendered from the input
	// (its runtime is not in it) or would not be built by the trainer-controller.
	Unrenderable error
	Warnings     []string

	// JobSet and Extra are a TrainJob's workload on the JobSet path and the objects the
	// trainer-controller creates before its workload (hostfiles, keys).
	JobSet *jobsetv1alpha2.JobSet
	Extra  []client.Object

	// PodCliqueSet is the defaulted PodCliqueSet: the input's, or the one built from a TrainJob.
	PodCliqueSet  *grovev1alpha1.PodCliqueSet
	Backend       backends.Renderer
	Services      []*corev1.Service
	ScalingGroups []*grovev1alpha1.PodCliqueScalingGroup
	// PodCliques are every PodClique, standalone and scaling-group members, by name.
	PodCliques  []*grovev1alpha1.PodClique
	Pods        map[string][]*corev1.Pod // by PodClique
	PodGangs    []*schedulerv1alpha1.PodGang
	Autoscalers []*autoscalingv2.HorizontalPodAutoscaler
	// SchedulerObjects are the backend's objects of each PodGang, by PodGang name.
	SchedulerObjects map[string][]client.Object
	// MissingDomains are topology domains the constraints name that the binding lacks.
	MissingDomains []grovev1alpha1.TopologyDomain
}

// Renderer renders with one operator configuration.
type Renderer struct {
	config *configv1alpha1.OperatorConfiguration
	// Each binary's share of the backends: grove-webhook's to default and admit, grove-operator's
	// to prepare pods, and the backend-controller's objects as kubectl grove builds them.
	admitters *backends.Registry[backends.Admitter]
	preparers *backends.Registry[backends.PodPreparer]
	renderers *backends.Registry[backends.Renderer]
	defaults  schemaDefaults
}

// New checks the configuration as the binaries do at start.
func New(cfg *configv1alpha1.OperatorConfiguration) (*Renderer, error) {
	if errs := configv1alpha1.Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("the operator configuration is invalid: %w", errs.ToAggregate())
	}
	admitters, err := backends.Admitters(cfg.Scheduler)
	if err != nil {
		return nil, err
	}
	preparers, err := backends.PodPreparers(cfg.Scheduler)
	if err != nil {
		return nil, err
	}
	renderers, err := backends.Renderers(cfg.Scheduler, false)
	if err != nil {
		return nil, err
	}
	defaults, err := loadSchemaDefaults()
	if err != nil {
		return nil, fmt.Errorf("reading the CRD schemas compiled in: %w", err)
	}
	return &Renderer{config: cfg, admitters: admitters, preparers: preparers, renderers: renderers, defaults: defaults}, nil
}

// CompositePodGroups renders kube-scheduler's gang mode as it runs where the API server serves
// CompositePodGroup (hierarchical gangs); by default as where it does not (flat gangs).
func (r *Renderer) CompositePodGroups(on bool) error {
	renderers, err := backends.Renderers(r.config.Scheduler, on)
	if err != nil {
		return err
	}
	r.renderers = renderers
	return nil
}

// Render renders every PodCliqueSet and TrainJob of the input, in input order.
func (r *Renderer) Render(in *Input) []*Workload {
	r.checkBindings(in)
	var out []*Workload
	for _, pcs := range in.PodCliqueSets {
		w := &Workload{Source: pcs}
		r.renderPodCliqueSet(w, pcs.DeepCopy(), in)
		out = append(out, w)
	}
	for _, tj := range in.TrainJobs {
		w := &Workload{Source: tj}
		r.renderTrainJob(w, tj.DeepCopy(), in)
		out = append(out, w)
	}
	return out
}

// renderPodCliqueSet defaults and validates as grove-webhook, then expands as grove-operator
// and the backend-controller.
func (r *Renderer) renderPodCliqueSet(w *Workload, pcs *grovev1alpha1.PodCliqueSet, in *Input) {
	// The API server applies its schema (defaults, then validation) before admission sees the
	// object, and refuses it with the field paths.
	if errs, err := r.defaults.apply(pcs); err != nil || len(errs) > 0 {
		w.Rejected, w.Unrenderable = schemaRefusal(pcs, errs), err
		return
	}
	pcsadmission.Default(pcs, r.admitters)
	binding := bindingFor(pcs, in)
	topo := pcsadmission.Topology{Enabled: r.config.TopologyAwareScheduling.Enabled}
	if binding != nil {
		topo.Binding = &binding.Spec
	}
	errs, warnings := pcsadmission.ValidateCreate(pcs, r.admitters, topo)
	w.Warnings = append(w.Warnings, warnings...)
	if len(errs) > 0 {
		w.Rejected = denied(webhookPodCliqueSet, apierrors.NewInvalid(grovev1alpha1.GroupVersion.WithKind("PodCliqueSet").GroupKind(), pcs.Name, errs))
		return
	}
	w.PodCliqueSet, w.Backend = pcs, r.renderers.ForPodCliqueSet(pcs)
	e := podcliqueset.Initial(pcs)
	w.Services, w.ScalingGroups, w.Autoscalers = e.Services, e.ScalingGroups, e.Autoscalers
	w.PodCliques = append(w.PodCliques, e.PodCliques...)
	for _, pcsg := range e.ScalingGroups {
		replica, _ := grovev1alpha1.ReplicaIndexOf(pcsg)
		members := podcliquescalinggroup.Members(pcs, pcsg, replica, podcliqueset.NewReplicaGangs(pcs, replica))
		for _, name := range slices.Sorted(maps.Keys(members)) {
			w.PodCliques = append(w.PodCliques, members[name])
		}
	}
	sort.SliceStable(w.PodCliques, func(i, j int) bool { return w.PodCliques[i].Name < w.PodCliques[j].Name })
	for _, pclq := range w.PodCliques {
		// Stored PodCliques are defaulted too, and their pods are built from what is stored; one
		// the schema refused would stay uncreated (the PodCliqueSet's CreateFailed event).
		if errs, err := r.defaults.apply(pclq); err != nil || len(errs) > 0 {
			w.Unrenderable = errors.Join(err, schemaRefusal(pclq, errs))
			return
		}
	}
	backendName := ""
	if w.Backend != nil {
		backendName = string(w.Backend.Name())
	}
	w.PodGangs, w.MissingDomains = podcliqueset.InitialPodGangs(pcs, w.PodCliques, backendName,
		podcliqueset.TopologyInput{Enabled: r.config.TopologyAwareScheduling.Enabled, Binding: binding})
	gangs := map[string]*schedulerv1alpha1.PodGang{}
	for _, pg := range w.PodGangs {
		if w.Backend != nil {
			// As the backend-controller acknowledges it: the operator creates pods after that.
			pg.Status.SchedulingGroups = w.Backend.SchedulingGroups(pg)
		}
		gangs[pg.Name] = pg
	}
	w.Pods = map[string][]*corev1.Pod{}
	for _, pclq := range w.PodCliques {
		if b := r.preparers.ForPodScheduler(pclq.Spec.PodSpec.SchedulerName); b != nil {
			w.Pods[pclq.Name] = podclique.Pods(pclq, b, gangs[pclq.Labels[grovev1alpha1.LabelPodGang]])
		}
	}
	w.SchedulerObjects = map[string][]client.Object{}
	for _, pg := range w.PodGangs {
		if w.Backend == nil {
			continue
		}
		objs, err := w.Backend.BuildObjects(pg, binding)
		if err != nil {
			w.Warnings = append(w.Warnings, fmt.Sprintf("PodGang %s: the %s backend cannot build its objects: %v", pg.Name, backendName, err))
			continue
		}
		w.SchedulerObjects[pg.Name] = objs
	}
}

// renderTrainJob validates as grove-webhook and builds as the trainer-controller: a JobSet, or a
// PodCliqueSet rendered in turn.
func (r *Renderer) renderTrainJob(w *Workload, tj *trainerv1alpha1.TrainJob, in *Input) {
	if errs := trainjobadmission.ValidateTrainJob(tj); len(errs) > 0 {
		w.Rejected = denied(webhookTrainJob, apierrors.NewInvalid(trainerv1alpha1.GroupVersion.WithKind("TrainJob").GroupKind(), tj.Name, errs))
		return
	}
	rt, err := runtimeFor(tj, in)
	if err != nil {
		w.Unrenderable = err
		return
	}
	errs, warnings := trainjobadmission.ValidateRuntimeSpec(&rt.Spec)
	w.Warnings = append(w.Warnings, warnings...)
	if len(errs) > 0 {
		w.Rejected = denied(webhookRuntime, apierrors.NewInvalid(trainerv1alpha1.GroupVersion.WithKind(rt.Kind).GroupKind(), rt.Name, errs))
		return
	}
	switch rt.Spec.WorkloadKind {
	case trainerv1alpha1.WorkloadKindPodCliqueSet:
		pcs, extra, err := topodcliqueset.Build(tj, rt, r.buildOptions())
		if err != nil {
			w.Unrenderable = fmt.Errorf("the trainer-controller cannot build TrainJob %s: %w", tj.Name, err)
			return
		}
		w.Extra = extra
		r.renderPodCliqueSet(w, pcs, in)
	case trainerv1alpha1.WorkloadKindJobSet, "":
		js, extra, err := tojobset.Build(tj, rt, false, r.buildOptions())
		if err != nil {
			w.Unrenderable = fmt.Errorf("the trainer-controller cannot build TrainJob %s: %w", tj.Name, err)
			return
		}
		w.JobSet, w.Extra = js, extra
	default:
		w.Unrenderable = fmt.Errorf("%s %s: spec.workloadKind: %q is not supported", rt.Kind, rt.Name, rt.Spec.WorkloadKind)
	}
}

// Failed is the reason nothing was rendered for the workload, nil when it was.
func (w *Workload) Failed() error {
	if w.Rejected != nil {
		return w.Rejected
	}
	return w.Unrenderable
}

// runtimeFor finds the runtime a TrainJob names among the input.
func runtimeFor(tj *trainerv1alpha1.TrainJob, in *Input) (*plan.Runtime, error) {
	kind := ptr.Deref(tj.Spec.RuntimeRef.Kind, trainerv1alpha1.ClusterTrainingRuntimeKind)
	name := tj.Spec.RuntimeRef.Name
	switch kind {
	case trainerv1alpha1.TrainingRuntimeKind:
		for _, rt := range in.Runtimes {
			if rt.Name == name && rt.Namespace == tj.Namespace {
				return &plan.Runtime{Kind: kind, Name: name, Spec: *rt.Spec.DeepCopy()}, nil
			}
		}
	case trainerv1alpha1.ClusterTrainingRuntimeKind:
		for _, rt := range in.ClusterRuntimes {
			if rt.Name == name {
				return &plan.Runtime{Kind: kind, Name: name, Spec: *rt.Spec.DeepCopy()}, nil
			}
		}
	default:
		return nil, field.NotSupported(field.NewPath("spec", "runtimeRef", "kind"), kind, []string{trainerv1alpha1.TrainingRuntimeKind, trainerv1alpha1.ClusterTrainingRuntimeKind})
	}
	return nil, fmt.Errorf("TrainJob %s names %s %q, which is not in the input: give it with another -f", tj.Name, kind, name)
}

// checkBindings drops the ClusterTopologyBindings the API server would refuse (its schema, then
// grove-webhook's admission): a PodCliqueSet naming one renders as if it did not exist, and says
// why.
func (r *Renderer) checkBindings(in *Input) {
	var kept []*grovev1alpha1.ClusterTopologyBinding
	for _, b := range in.Bindings {
		errs, err := r.defaults.apply(b)
		if err == nil && len(errs) == 0 {
			if refused := topologyadmission.Validate(b, nil, r.admitters); len(refused) > 0 {
				in.Skipped = append(in.Skipped, fmt.Sprintf("ClusterTopologyBinding %s is refused by admission: %v", b.Name, refused.ToAggregate()))
				continue
			}
			kept = append(kept, b)
			continue
		}
		in.Skipped = append(in.Skipped, fmt.Sprintf("ClusterTopologyBinding %s is refused by its schema: %v", b.Name, errors.Join(err, schemaRefusal(b, errs))))
	}
	in.Bindings = kept
}

// bindingFor is the ClusterTopologyBinding of the input the PodCliqueSet's constraints name.
func bindingFor(pcs *grovev1alpha1.PodCliqueSet, in *Input) *grovev1alpha1.ClusterTopologyBinding {
	name, _ := topologyconstraints.TopologyName(pcs)
	for _, b := range in.Bindings {
		if name != "" && b.Name == name {
			return b
		}
	}
	return nil
}

// schemaRefusal words a schema refusal as the API server does; nil without errors.
func schemaRefusal(obj client.Object, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	gvk, _ := apiutil.GVKForObject(obj, schemeForKinds)
	return apierrors.NewInvalid(gvk.GroupKind(), obj.GetName(), errs)
}

// denied words an admission refusal as kubectl shows the webhook's.
func denied(webhook string, err error) error {
	return fmt.Errorf("admission webhook %q denied the request: %w", webhook, err)
}

// buildOptions are the trainer-controller's, from the configuration: the scheduler-plugins
// backend's settings when it is enabled, and the status server a TrainJob's trainer is wired to
// when it is on. The CA is the running server's, unknown here: the ConfigMap shows where it
// comes from instead.
func (r *Renderer) buildOptions() plan.Options {
	var opts plan.Options
	opts.Coscheduling = r.config.Scheduler.SchedulerPlugins()
	if r.config.Server.TrainerStatus.Enabled {
		ca := fmt.Sprintf("<the trainer-controller's CA: %s/%s>", r.config.Server.TrainerStatus.ServerCertDir, plan.StatusCAKey)
		opts.StatusServer = &plan.StatusServer{BaseURL: statusserver.BaseURL(r.config), CA: []byte(ca)}
	}
	return opts
}
