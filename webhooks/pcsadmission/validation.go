package pcsadmission

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

// Validator rejects PodCliqueSets the operator could not run as written.
type Validator struct {
	// Backends are the enabled scheduler backends.
	Backends *backends.Registry[backends.Admitter]
	// TopologyAwareScheduling is topologyAwareScheduling.enabled of the operator configuration:
	// when false every topology constraint is rejected.
	TopologyAwareScheduling bool
	// AutoMNNVL is network.autoMNNVLEnabled: when false a PodCliqueSet asking for an MNNVL group
	// is refused.
	AutoMNNVL bool
	// Kueue is kueue.enabled: when false a PodCliqueSet labelled with a Kueue queue is refused.
	Kueue bool
	// Topologies reads ClusterTopologyBindings; nil treats every binding as not found.
	Topologies client.Reader
	// PodCliqueSets reads the namespace's PodCliqueSets, whose generated names a new one must not
	// share; nil skips the check (the operator still reports a collision in status).
	PodCliqueSets client.Reader
	// ClaimTemplates reads ResourceClaimTemplates that resourceSharing entries name; nil skips
	// the check (the operator still reports a missing template).
	ClaimTemplates client.Reader
	// SchedulerObjects reads what a backend checks in the cluster (backends.ClusterValidator:
	// Volcano's queues); nil skips those checks (the backend-controller still reports them).
	SchedulerObjects client.Reader
	// Queues reads Kueue's queues and admission checks, to refuse a spec.managedBy its queue
	// contradicts; nil skips the check (the Kueue integration is off).
	Queues client.Reader
}

// ValidateCreate checks a new PodCliqueSet. One naming a ClusterTopologyBinding that does not
// exist yet is admitted with a warning: it waits for the binding.
func (v *Validator) ValidateCreate(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	binding, err := v.topologyBinding(ctx, pcs)
	if err != nil {
		return nil, err
	}
	errs, warnings := ValidateCreate(pcs, v.Backends, Topology{Enabled: v.TopologyAwareScheduling, Binding: binding})
	overlapErrs, overlapWarnings, err := v.nameOverlap(ctx, pcs)
	if err != nil {
		return nil, err
	}
	errs = append(errs, overlapErrs...)
	errs = append(errs, validateMNNVLCreate(pcs, v.AutoMNNVL)...)
	errs = append(errs, validateQueueCreate(pcs, v.Kueue, v.Backends)...)
	errs = append(errs, validateMultiKueueCreate(pcs)...)
	queueErrs, err := validateManagedByQueue(ctx, v.Queues, pcs)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, queueErrs...)
	templateErrs, err := validateTemplatesExist(ctx, v.ClaimTemplates, pcs)
	if err != nil {
		return nil, err
	}
	errs = append(errs, templateErrs...)
	clusterErrs, err := v.validateInCluster(ctx, nil, pcs, errs)
	if err != nil {
		return nil, err
	}
	errs = append(errs, clusterErrs...)
	warnings = append(warnings, overlapWarnings...)
	warnings = append(warnings, unreadVolcanoQueue(pcs, v.Backends)...)
	return warnings, logRejection(ctx, pcs, toError(pcs, errs))
}

// unreadVolcanoQueue warns that a Volcano queue annotation does nothing when the PodCliqueSet's
// pods go to another backend.
func unreadVolcanoQueue(pcs *grovev1alpha1.PodCliqueSet, registry *backends.Registry[backends.Admitter]) admission.Warnings {
	b := registry.ForPodCliqueSet(pcs)
	if q := grovev1alpha1.VolcanoQueueOf(pcs); q == "" || b == nil || b.Name() == configv1alpha1.SchedulerNameVolcano {
		return nil
	}
	return admission.Warnings{fmt.Sprintf("%s %q is ignored: only the volcano backend reads it, and this PodCliqueSet's pods go to %s",
		grovev1alpha1.AnnotationVolcanoQueue, grovev1alpha1.VolcanoQueueOf(pcs), b.Name())}
}

// validateInCluster asks the PodCliqueSet's backend to check the cluster's objects it depends
// on (backends.ClusterValidator), once the PodCliqueSet passed every other rule.
func (v *Validator) validateInCluster(ctx context.Context, old, pcs *grovev1alpha1.PodCliqueSet, errs field.ErrorList) (field.ErrorList, error) {
	if len(errs) > 0 || v.SchedulerObjects == nil {
		return nil, nil
	}
	cv, ok := v.Backends.ForPodCliqueSet(pcs).(backends.ClusterValidator)
	if !ok {
		return nil, nil
	}
	clusterErrs, err := cv.ValidatePodCliqueSetInCluster(ctx, v.SchedulerObjects, old, pcs)
	if err != nil {
		// The backend's error is a failed read, not a verdict: an internal error (500).
		return nil, apierrors.NewInternalError(err)
	}
	return clusterErrs, nil
}

// logRejection notes a refused PodCliqueSet (V(1): the user sees the answer; the log is for
// whoever looks into why a deployment keeps failing).
func logRejection(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, err error) error {
	if err != nil {
		log.FromContext(ctx).V(1).Info("refused PodCliqueSet", "podCliqueSet", client.ObjectKeyFromObject(pcs), "error", err.Error())
	}
	return err
}

// ValidateUpdate checks a changed PodCliqueSet, including what may not change. Topology
// constraints were checked on create and are immutable, so a later change of the operator
// configuration or of the binding never blocks updates (finalizers, images) of existing objects.
func (v *Validator) ValidateUpdate(ctx context.Context, old, pcs *grovev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	errs := Validate(pcs, v.Backends)
	errs = append(errs, ValidateImmutable(old, pcs)...)
	errs = append(errs, validateStrategySwitch(old, pcs)...)
	errs = append(errs, validateMNNVLUpdate(old, pcs)...)
	errs = append(errs, validateQueueUpdate(old, pcs)...)
	errs = append(errs, validateMultiKueueUpdate(old, pcs)...)
	errs = append(errs, validateCliqueMetadata(pcs, old)...)
	errs = append(errs, validateTrainingCreate(pcs)...)
	errs = append(errs, validateTrainingUpdate(old, pcs)...)
	clusterErrs, err := v.validateInCluster(ctx, old, pcs, errs)
	if err != nil {
		return nil, err
	}
	errs = append(errs, clusterErrs...)
	return nil, logRejection(ctx, pcs, toError(pcs, errs))
}

// ValidateDelete allows every deletion.
func (v *Validator) ValidateDelete(context.Context, *grovev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	return nil, nil
}

func toError(pcs *grovev1alpha1.PodCliqueSet, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(grovev1alpha1.GroupVersion.WithKind("PodCliqueSet").GroupKind(), pcs.Name, errs)
}

// ValidateCreate is Validate plus the rules only new objects must follow, among them the
// topology rules; it returns the errors and the admission warnings.
func ValidateCreate(pcs *grovev1alpha1.PodCliqueSet, registry *backends.Registry[backends.Admitter], topology Topology) (field.ErrorList, admission.Warnings) {
	errs := Validate(pcs, registry)
	// The headless Service of each replica is named <pcs>-<replica> and pod hostnames
	// <pcs>-<replica>-…: both must be DNS-1035 labels, a rule the API server does not apply to
	// custom resource names (a name like "9lives" or "a.b" is stored, and no Service could be).
	for _, msg := range validation.IsDNS1035Label(pcs.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), pcs.Name, msg))
	}
	errs = append(errs, validateCliqueMetadata(pcs, nil)...)
	errs = append(errs, validateTrainingCreate(pcs)...)
	topologyErrs, warnings := validateTopology(pcs, topology.Enabled, topology.Binding)
	errs = append(errs, topologyErrs...)
	cliques := field.NewPath("spec", "template", "cliques")
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		ps := cliques.Index(i).Child("spec", "podSpec")
		if c.Spec.PodSpec.NodeName != "" {
			errs = append(errs, field.Forbidden(ps.Child("nodeName"), "pods are placed by the gang scheduler; nodeName must not be set"))
		}
		if len(c.Spec.PodSpec.TopologySpreadConstraints) > 0 {
			errs = append(errs, field.Forbidden(ps.Child("topologySpreadConstraints"), "use topologyConstraint; topologySpreadConstraints conflict with gang placement"))
		}
	}
	return errs, warnings
}

// Validate checks the rules every PodCliqueSet must follow.
func Validate(pcs *grovev1alpha1.PodCliqueSet, registry *backends.Registry[backends.Admitter]) field.ErrorList {
	errs := validateResourceSharing(pcs)
	t := &pcs.Spec.Template
	tp := field.NewPath("spec", "template")
	cliquesPath := tp.Child("cliques")

	names := map[string]int{}
	roles := map[string]int{}
	for i, c := range t.Cliques {
		p := cliquesPath.Index(i)
		if c == nil {
			errs = append(errs, field.Required(p, "a clique must not be null"))
			continue
		}
		errs = append(errs, dnsLabel(p.Child("name"), c.Name)...)
		if j, dup := names[c.Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also %s)", c.Name, cliquesPath.Index(j).Child("name"))))
		} else {
			names[c.Name] = i
		}
		if j, dup := roles[c.Role()]; dup {
			errs = append(errs, field.Duplicate(p.Child("spec", "roleName"), fmt.Sprintf("%s (also %s)", c.Role(), cliquesPath.Index(j).Child("spec", "roleName"))))
		} else {
			roles[c.Role()] = i
		}
		sp := p.Child("spec")
		if m := c.Spec.MinAvailable; m != nil && (*m < 1 || (c.Spec.Replicas > 0 && *m > c.Spec.Replicas)) {
			errs = append(errs, field.Invalid(sp.Child("minAvailable"), *m, fmt.Sprintf("must be between 1 and replicas (%d)", c.Spec.Replicas)))
		}
		if sc := c.Spec.ScaleConfig; sc != nil {
			errs = append(errs, validateScaleConfig(sp.Child("autoScalingConfig"), sc, c.Spec.MinAvailable, c.Spec.Replicas)...)
		}
	}

	errs = append(errs, validateGroups(pcs, names)...)
	errs = append(errs, validateStartup(pcs, names)...)
	errs = append(errs, validateNameBudget(pcs)...)
	errs = append(errs, validateScheduler(pcs, registry)...)
	errs = append(errs, validateRollingUpdate(pcs)...)
	if t.TerminationDelay == nil {
		for i, g := range t.PodCliqueScalingGroupConfigs {
			if g.TerminationDelay != nil {
				errs = append(errs, field.Forbidden(tp.Child("podCliqueScalingGroups").Index(i).Child("terminationDelay"),
					"a scaling-group terminationDelay overrides spec.template.terminationDelay, which must be set"))
			}
		}
	}
	if pcs.Spec.TrainingSpec != nil && pcs.Spec.WorkloadType != grovev1alpha1.WorkloadTypeTraining {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "trainingSpec"), "only allowed with workloadType Training"))
	}
	if ts := pcs.Spec.TrainingSpec; ts != nil && ts.SuccessPolicy != nil {
		targets := field.NewPath("spec", "trainingSpec", "successPolicy", "targetCliques")
		for i, name := range ts.SuccessPolicy.TargetCliques {
			if _, ok := names[name]; !ok {
				errs = append(errs, field.Invalid(targets.Index(i), name, "must name a clique of spec.template.cliques"))
			}
		}
	}
	return errs
}

// validateCliqueMetadata checks the labels and annotations of each clique template by the rules
// the API server applies to object metadata: they become the PodCliques' and pods' own, and the
// API server checks nothing inside a custom resource's spec, so a bad one would be stored and
// every PodClique or pod made from it refused. On update (old set) only cliques whose metadata
// changed are checked, so an object stored before this rule can still be updated and deleted.
func validateCliqueMetadata(pcs, old *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	before := map[string]*grovev1alpha1.PodCliqueTemplateSpec{}
	if old != nil {
		for _, c := range old.Spec.Template.Cliques {
			if c != nil {
				before[c.Name] = c
			}
		}
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		if o := before[c.Name]; o != nil && maps.Equal(o.Labels, c.Labels) && maps.Equal(o.Annotations, c.Annotations) {
			continue
		}
		p := field.NewPath("spec", "template", "cliques").Index(i)
		errs = append(errs, metav1validation.ValidateLabels(c.Labels, p.Child("labels"))...)
		errs = append(errs, apimachineryvalidation.ValidateAnnotations(c.Annotations, p.Child("annotations"))...)
	}
	return errs
}

func dnsLabel(p *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateScaleConfig(p *field.Path, sc *grovev1alpha1.AutoScalingConfig, minAvailable *int32, replicas int32) field.ErrorList {
	var errs field.ErrorList
	if sc.MinReplicas != nil && *sc.MinReplicas == 0 {
		// Scaling to zero (an idle component) is the HPA's HPAScaleToZero feature, which needs a
		// metric that still reads with no pod running.
		if !slices.ContainsFunc(sc.Metrics, func(m autoscalingv2.MetricSpec) bool {
			return m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType
		}) {
			errs = append(errs, field.Invalid(p.Child("minReplicas"), 0, "0 (scale to zero) needs at least one Object or External metric, which still reads with no pod running (and the cluster's HPAScaleToZero feature gate)"))
		}
	} else if sc.MinReplicas != nil && minAvailable != nil && *sc.MinReplicas < *minAvailable {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *sc.MinReplicas, fmt.Sprintf("must be at least minAvailable (%d)", *minAvailable)))
	}
	if sc.MaxReplicas < replicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), sc.MaxReplicas, fmt.Sprintf("must be at least replicas (%d)", replicas)))
	}
	if sc.MinReplicas != nil && *sc.MinReplicas > sc.MaxReplicas {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *sc.MinReplicas, "must not exceed maxReplicas"))
	}
	return errs
}

func validateGroups(pcs *grovev1alpha1.PodCliqueSet, cliques map[string]int) field.ErrorList {
	var errs field.ErrorList
	gp := field.NewPath("spec", "template", "podCliqueScalingGroups")
	groupNames := map[string]int{}
	member := map[string]string{}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		p := gp.Index(i)
		errs = append(errs, dnsLabel(p.Child("name"), g.Name)...)
		if j, dup := groupNames[g.Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also %s)", g.Name, gp.Index(j).Child("name"))))
		} else {
			groupNames[g.Name] = i
		}
		if _, clash := cliques[g.Name]; clash {
			errs = append(errs, field.Invalid(p.Child("name"), g.Name, "must differ from every clique name (generated names would collide)"))
		}
		for k, name := range g.CliqueNames {
			cp := p.Child("cliqueNames").Index(k)
			idx, known := cliques[name]
			switch {
			case !known:
				errs = append(errs, field.NotFound(cp, name))
			case member[name] != "":
				errs = append(errs, field.Invalid(cp, name, fmt.Sprintf("already a member of scaling group %q: membership is exclusive", member[name])))
			default:
				member[name] = g.Name
				if pcs.Spec.Template.Cliques[idx].Spec.ScaleConfig != nil {
					errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "cliques").Index(idx).Child("spec", "autoScalingConfig"),
						fmt.Sprintf("clique %q scales with scaling group %q; use the group's scaleConfig", name, g.Name)))
				}
			}
		}
		replicas := int32(1)
		if g.Replicas != nil {
			replicas = *g.Replicas
		}
		if g.MinAvailable != nil && (*g.MinAvailable < 1 || (replicas > 0 && *g.MinAvailable > replicas)) {
			errs = append(errs, field.Invalid(p.Child("minAvailable"), *g.MinAvailable, fmt.Sprintf("must be between 1 and replicas (%d)", replicas)))
		}
		if g.ScaleConfig != nil {
			errs = append(errs, validateScaleConfig(p.Child("scaleConfig"), g.ScaleConfig, g.MinAvailable, replicas)...)
		}
	}
	return errs
}

// validateStartup checks startsAfter and startsAfterSucceeded: only with the Explicit startup
// type, naming known cliques, not the clique itself, without repeats, startsAfterSucceeded only in
// Training workloads (inference pods never exit 0), and without cycles over both lists (the cycle
// is reported).
func validateStartup(pcs *grovev1alpha1.PodCliqueSet, cliques map[string]int) field.ErrorList {
	var errs field.ErrorList
	explicit := pcs.Spec.Template.StartupType != nil && *pcs.Spec.Template.StartupType == grovev1alpha1.CliqueStartupTypeExplicit
	cp := field.NewPath("spec", "template", "cliques")
	graph := map[string][]string{}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		seen := map[string]bool{}
		for _, list := range []struct {
			name    string
			parents []string
		}{{"startsAfter", c.Spec.StartsAfter}, {"startsAfterSucceeded", c.Spec.StartsAfterSucceeded}} {
			if len(list.parents) == 0 {
				continue
			}
			p := cp.Index(i).Child("spec", list.name)
			if !explicit {
				errs = append(errs, field.Forbidden(p, list.name+" requires cliqueStartupType CliqueStartupTypeExplicit"))
				continue
			}
			if list.name == "startsAfterSucceeded" && pcs.Spec.WorkloadType != grovev1alpha1.WorkloadTypeTraining {
				errs = append(errs, field.Forbidden(p, "startsAfterSucceeded requires workloadType Training: inference pods never exit 0"))
				continue
			}
			for k, parent := range list.parents {
				switch {
				case parent == c.Name:
					errs = append(errs, field.Invalid(p.Index(k), parent, "a clique cannot start after itself"))
				case seen[parent]:
					errs = append(errs, field.Duplicate(p.Index(k), parent))
				default:
					if _, known := cliques[parent]; !known {
						errs = append(errs, field.NotFound(p.Index(k), parent))
					} else {
						graph[c.Name] = append(graph[c.Name], parent)
					}
				}
				seen[parent] = true
			}
		}
	}
	if cycle := findCycle(graph); cycle != nil {
		errs = append(errs, field.Invalid(cp, strings.Join(cycle, " -> "), "startsAfter dependencies must not form a cycle"))
	}
	return errs
}

// findCycle returns one dependency cycle (first node repeated at the end), or nil.
func findCycle(graph map[string][]string) []string {
	const (
		unvisited = iota
		inProgress
		done
	)
	state := map[string]int{}
	var stack []string
	var cycle []string
	var visit func(string) bool
	visit = func(n string) bool {
		state[n] = inProgress
		stack = append(stack, n)
		for _, m := range graph[n] {
			switch state[m] {
			case inProgress:
				for i, s := range stack {
					if s == m {
						cycle = append(append([]string{}, stack[i:]...), m)
					}
				}
				return true
			case unvisited:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return false
	}
	nodes := make([]string, 0, len(graph))
	for n := range graph {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		if state[n] == unvisited && visit(n) {
			return cycle
		}
	}
	return nil
}

// validateNameBudget checks that the longest pod name (and hostname) the operator will generate
// stays a DNS label: <pcs>-<replica>[-<group>-<groupReplica>]-<clique>-<podIndex>.
func validateNameBudget(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	digits := func(n int32) int {
		if n < 1 {
			n = 1
		}
		return len(strconv.Itoa(int(n - 1)))
	}
	maxOf := func(replicas int32, sc *grovev1alpha1.AutoScalingConfig) int32 {
		if sc != nil && sc.MaxReplicas > replicas {
			return sc.MaxReplicas
		}
		return replicas
	}
	base := len(pcs.Name) + 1 + digits(pcs.Spec.Replicas)
	groupOf := map[string]grovev1alpha1.PodCliqueScalingGroupConfig{}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, n := range g.CliqueNames {
			groupOf[n] = g
		}
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		length := base + 1 + len(c.Name) + 1 + digits(maxOf(c.Spec.Replicas, c.Spec.ScaleConfig))
		if g, ok := groupOf[c.Name]; ok {
			replicas := int32(1)
			if g.Replicas != nil {
				replicas = *g.Replicas
			}
			length += 1 + len(g.Name) + 1 + digits(maxOf(replicas, g.ScaleConfig))
		}
		if length > validation.DNS1123LabelMaxLength {
			errs = append(errs, field.Invalid(field.NewPath("spec", "template", "cliques").Index(i).Child("name"), c.Name,
				fmt.Sprintf("generated pod names would be %d characters, over the %d of a DNS label: shorten the PodCliqueSet, scaling-group or clique name", length, validation.DNS1123LabelMaxLength)))
		}
	}
	return errs
}

// validateScheduler requires every clique's pods to go to one enabled scheduler backend, and
// lets that backend reject what it cannot honour. A PodCliqueSet whose cliques name several
// schedulers is refused naming all of them, known or not.
func validateScheduler(pcs *grovev1alpha1.PodCliqueSet, registry *backends.Registry[backends.Admitter]) field.ErrorList {
	var errs field.ErrorList
	var first backends.Admitter
	if mix := schedulerMix(pcs, registry); mix != nil {
		errs = append(errs, mix)
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		p := field.NewPath("spec", "template", "cliques").Index(i).Child("spec", "podSpec", "schedulerName")
		name := c.Spec.PodSpec.SchedulerName
		backend := registry.ForPodScheduler(name)
		if backend == nil {
			if known, ok := backends.KnownPodScheduler(name); ok {
				errs = append(errs, field.Invalid(p, name, fmt.Sprintf("scheduler backend %q is not enabled; enabled: %v (add a scheduler.profiles entry to the operator configuration)", known, registry.PodSchedulerNames())))
			} else {
				errs = append(errs, field.NotSupported(p, name, registry.PodSchedulerNames()))
			}
			continue
		}
		if first == nil {
			first = backend
		}
	}
	if first != nil && len(errs) == 0 {
		errs = append(errs, first.ValidatePodCliqueSet(pcs)...)
	}
	return errs
}

// schedulerMix is the error of a PodCliqueSet whose cliques' schedulerNames lead to more than one
// scheduler backend (or name a scheduler no backend serves beside another), on the first clique
// that names another than the first: one gang has one scheduler.
func schedulerMix(pcs *grovev1alpha1.PodCliqueSet, registry *backends.Registry[backends.Admitter]) *field.Error {
	var order []string
	cliques := map[string][]string{}
	at, atName := -1, ""
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		name := c.Spec.PodSpec.SchedulerName
		key := strconv.Quote(name) // a scheduler no backend serves, as written
		if b := registry.ForPodScheduler(name); b != nil {
			key = string(b.Name())
		} else if known, ok := backends.KnownPodScheduler(name); ok {
			key = string(known)
		}
		if _, seen := cliques[key]; !seen {
			order = append(order, key)
			if len(order) == 2 {
				at, atName = i, name
			}
		}
		cliques[key] = append(cliques[key], c.Name)
	}
	if len(order) < 2 {
		return nil
	}
	parts := make([]string, len(order))
	for i, key := range order {
		parts[i] = fmt.Sprintf("%s (cliques %s)", key, strings.Join(cliques[key], ", "))
	}
	p := field.NewPath("spec", "template", "cliques").Index(at).Child("spec", "podSpec", "schedulerName")
	return field.Invalid(p, atName, "all cliques must use one scheduler backend; this PodCliqueSet mixes "+strings.Join(parts, " and "))
}
