// Package pcsadmission is grove-webhook's admission for PodCliqueSets: defaults that depend on
// the workload type and on the operator configuration, and the validation the CRD schema cannot
// express (cross-field rules, the pod-name budget, dependency cycles, immutable fields).
package pcsadmission

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

// Defaulter fills what users leave out.
type Defaulter struct {
	// Backends decide the default scheduler name of pods that name none.
	Backends *backends.Registry[backends.Admitter]
	// Queues reads Kueue's LocalQueues, ClusterQueues and AdmissionChecks, to mark a new
	// PodCliqueSet whose queue leads to MultiKueue (spec.managedBy); nil: none is marked (the
	// Kueue integration is off).
	Queues client.Reader
}

// Default applies the defaults; it is idempotent.
func (d *Defaulter) Default(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) error {
	old := storedObject(ctx)
	DefaultUpdate(pcs, old, d.Backends)
	if old == nil {
		return d.defaultManagedBy(ctx, pcs)
	}
	return nil
}

// storedObject is, on an update, the PodCliqueSet as stored (nil on create, or when it cannot be
// decoded: defaulting then treats the request as a create).
func storedObject(ctx context.Context) *grovev1alpha1.PodCliqueSet {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	old := &grovev1alpha1.PodCliqueSet{}
	if json.Unmarshal(req.OldObject.Raw, old) != nil {
		return nil
	}
	return old
}

// Default applies the defaults of DESIGN.md section 3: Training gets terminationDelay 0 and
// restartPolicy Never; inference gets no terminationDelay. Every clique's pods get the default
// backend's scheduler, roleName defaults to the clique's name, minAvailable defaults to replicas, autoscalers' minReplicas to
// minAvailable, and standalone cliques' and scaling groups' rollingUpdate.maxUnavailable to 1
// under RollingRecreate and to the component's minAvailable under Coherent.
func Default(pcs *grovev1alpha1.PodCliqueSet, registry *backends.Registry[backends.Admitter]) {
	DefaultUpdate(pcs, nil, registry)
}

// DefaultUpdate is Default for an update of the stored object old (nil on create): a strategy
// turned Coherent raises the budgets RollingRecreate defaulted to each component's minAvailable.
func DefaultUpdate(pcs, old *grovev1alpha1.PodCliqueSet, registry *backends.Registry[backends.Admitter]) {
	spec := &pcs.Spec
	if spec.WorkloadType == "" {
		spec.WorkloadType = grovev1alpha1.WorkloadTypeInference
	}
	training := spec.WorkloadType == grovev1alpha1.WorkloadTypeTraining
	t := &spec.Template
	if training && t.TerminationDelay == nil {
		t.TerminationDelay = &metav1.Duration{}
	}
	if t.StartupType == nil {
		anyOrder := grovev1alpha1.CliqueStartupTypeAnyOrder
		t.StartupType = &anyOrder
	}
	if t.HeadlessServiceConfig == nil {
		t.HeadlessServiceConfig = &grovev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: true}
	}
	defaultScheduler := registry.Default().PodSchedulerName()
	for _, c := range t.Cliques {
		if c == nil {
			continue
		}
		if c.Spec.RoleName == "" {
			c.Spec.RoleName = c.Name
		}
		ps := &c.Spec.PodSpec
		if ps.SchedulerName == "" {
			ps.SchedulerName = defaultScheduler
		}
		if training && ps.RestartPolicy == "" {
			ps.RestartPolicy = corev1.RestartPolicyNever
		}
		if c.Spec.MinAvailable == nil {
			min := max(c.Spec.Replicas, 1) // an idle clique (0 replicas) still needs 1 to count as up
			c.Spec.MinAvailable = &min
		}
		if sc := c.Spec.ScaleConfig; sc != nil && sc.MinReplicas == nil {
			min := *c.Spec.MinAvailable
			sc.MinReplicas = &min
		}
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		if g.Replicas == nil {
			one := int32(1)
			g.Replicas = &one
		}
		if g.MinAvailable == nil {
			one := int32(1)
			g.MinAvailable = &one
		}
		if sc := g.ScaleConfig; sc != nil && sc.MinReplicas == nil {
			min := *g.MinAvailable
			sc.MinReplicas = &min
		}
	}
	defaultRollingUpdate(pcs, old)
}
