package trainjob

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/controllers/trainer/tojobset"
	"github.com/kubegrove/grove/controllers/trainer/topodcliqueset"
)

// annotationBuiltFrom records the TrainJob generation a child was built from, so a suspended
// TrainJob's child is rebuilt only when the TrainJob changed.
const annotationBuiltFrom = "trainer.kubegrove.io/trainjob-generation"

// outcome is what a child says about the run.
type outcome struct {
	// done is the Complete or Failed condition to set, nil while running.
	done *metav1.Condition
	jobs []trainerv1alpha1.JobStatus
}

// workload is one of the two things a TrainJob becomes.
type workload interface {
	// kind names the child in events and conditions.
	kind() string
	// newChild is an empty child to read into.
	newChild() client.Object
	// build returns the child and the objects that must exist before it.
	// build builds the child and what it needs first with the deployment's options.
	build(tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, suspend bool, opts plan.Options) (client.Object, []client.Object, error)
	// suspended reports whether an existing child is suspended.
	suspended(child client.Object) bool
	// markSuspended sets an existing child's suspend flag.
	markSuspended(child client.Object)
	// freesPodsBySuspending reports whether suspending keeps the child (JobSet) or deletes it
	// (PodCliqueSet, which has no suspend: deleting it frees every pod and is rebuilt on resume).
	freesPodsBySuspending() bool
	// propagation is how deleting the child takes its dependents along.
	propagation() metav1.DeletionPropagation
	// observe reads the run's outcome and per-job counts from the child.
	observe(ctx context.Context, c client.Reader, child client.Object) (outcome, error)
}

func workloadFor(rt *plan.Runtime) (workload, error) {
	switch rt.Spec.WorkloadKind {
	case trainerv1alpha1.WorkloadKindPodCliqueSet:
		return pcsWorkload{}, nil
	case trainerv1alpha1.WorkloadKindJobSet, "":
		return jobSetWorkload{}, nil
	}
	return nil, &notSupportedError{msg: fmt.Sprintf("spec.workloadKind: %q is not supported", rt.Spec.WorkloadKind)}
}

type jobSetWorkload struct{}

func (jobSetWorkload) kind() string                { return "JobSet" }
func (jobSetWorkload) newChild() client.Object     { return &jobsetv1alpha2.JobSet{} }
func (jobSetWorkload) freesPodsBySuspending() bool { return true }

// propagation is foreground for a JobSet: it stays, marked for deletion, until its Jobs and pods
// are gone, and the JobSet controller leaves a JobSet so marked alone. Deleted in the background
// it vanishes at once, and the JobSet controller, from a cache that has not seen that yet,
// re-creates its Jobs under the same names; in that churn the first Job's pods were once left
// running for minutes (chaos seed 1795546506431047184). A foreground deletion that stalls is
// released after foregroundStall (decide.go).
func (jobSetWorkload) propagation() metav1.DeletionPropagation {
	return metav1.DeletePropagationForeground
}

func (jobSetWorkload) build(tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, suspend bool, opts plan.Options) (client.Object, []client.Object, error) {
	return tojobset.Build(tj, rt, suspend, opts)
}

func (jobSetWorkload) markSuspended(child client.Object) {
	child.(*jobsetv1alpha2.JobSet).Spec.Suspend = ptr.To(true)
}

func (jobSetWorkload) suspended(child client.Object) bool {
	return ptr.Deref(child.(*jobsetv1alpha2.JobSet).Spec.Suspend, false)
}

// observe maps the JobSet's Completed/Failed conditions as Kubeflow Trainer does, reason and
// message carried over, and its replicated-job counts.
func (jobSetWorkload) observe(_ context.Context, _ client.Reader, child client.Object) (outcome, error) {
	js := child.(*jobsetv1alpha2.JobSet)
	var out outcome
	for _, m := range []struct{ from, to string }{
		{string(jobsetv1alpha2.JobSetCompleted), trainerv1alpha1.TrainJobComplete},
		{string(jobsetv1alpha2.JobSetFailed), trainerv1alpha1.TrainJobFailed},
	} {
		if c := meta.FindStatusCondition(js.Status.Conditions, m.from); c != nil && c.Status == metav1.ConditionTrue {
			out.done = &metav1.Condition{Type: m.to, Status: metav1.ConditionTrue, Reason: c.Reason, Message: c.Message}
			break
		}
	}
	for _, s := range js.Status.ReplicatedJobsStatus {
		out.jobs = append(out.jobs, trainerv1alpha1.JobStatus{
			Name: s.Name, Ready: ptr.To(s.Ready), Succeeded: ptr.To(s.Succeeded), Failed: ptr.To(s.Failed),
			Active: ptr.To(s.Active), Suspended: ptr.To(s.Suspended),
		})
	}
	return out, nil
}

type pcsWorkload struct{}

// Reasons of a TrainJob that ran as a PodCliqueSet.
const (
	ReasonPodCliqueSetSucceeded = "PodCliqueSetSucceeded"
)

func (pcsWorkload) kind() string                { return "PodCliqueSet" }
func (pcsWorkload) newChild() client.Object     { return &grovev1alpha1.PodCliqueSet{} }
func (pcsWorkload) freesPodsBySuspending() bool { return false }

// propagation is background for a PodCliqueSet: the grove-operator creates nothing for a
// PodCliqueSet once it is gone, and a resume rebuilds it under the same name at once.
func (pcsWorkload) propagation() metav1.DeletionPropagation {
	return metav1.DeletePropagationBackground
}
func (pcsWorkload) suspended(client.Object) bool { return false }
func (pcsWorkload) markSuspended(client.Object)  {}

func (pcsWorkload) build(tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, _ bool, opts plan.Options) (client.Object, []client.Object, error) {
	return topodcliqueset.Build(tj, rt, opts)
}

// observe maps the PodCliqueSet's terminal phase (its Failed condition gives reason and message;
// running out of time is the TrainJob's DeadlineExceeded) and each clique's pods, as counted in its
// status.
func (pcsWorkload) observe(ctx context.Context, c client.Reader, child client.Object) (outcome, error) {
	pcs := child.(*grovev1alpha1.PodCliqueSet)
	var out outcome
	switch pcs.Status.Phase {
	case grovev1alpha1.PodCliqueSetPhaseSucceeded:
		msg := "every pod of every clique exited 0"
		if ts := pcs.Spec.TrainingSpec; ts != nil && ts.SuccessPolicy != nil && len(ts.SuccessPolicy.TargetCliques) > 0 {
			sp := ts.SuccessPolicy
			msg = fmt.Sprintf("the runtime's successPolicy (%s of %s) was met", cmp.Or(sp.Operator, grovev1alpha1.TrainingSuccessAll), strings.Join(sp.TargetCliques, ", "))
		}
		out.done = &metav1.Condition{Type: trainerv1alpha1.TrainJobComplete, Status: metav1.ConditionTrue,
			Reason: ReasonPodCliqueSetSucceeded, Message: msg}
	case grovev1alpha1.PodCliqueSetPhaseFailed:
		out.done = &metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Status: metav1.ConditionTrue, Reason: "PodCliqueSetFailed"}
		if f := meta.FindStatusCondition(pcs.Status.Conditions, grovev1alpha1.ConditionFailed); f != nil {
			out.done.Reason, out.done.Message = f.Reason, f.Message
		}
		if out.done.Reason == grovev1alpha1.ReasonMaxRuntimeExceeded {
			out.done.Reason = trainerv1alpha1.TrainJobDeadlineExceededReason
		}
	}
	// The operator sums each clique's pods in the PodCliqueSet's status: no PodClique is read.
	counted := map[string]grovev1alpha1.CliqueStatus{}
	for _, c := range pcs.Status.CliqueStatuses {
		counted[c.Name] = c
	}
	for _, t := range pcs.Spec.Template.Cliques {
		c := counted[t.Name]
		out.jobs = append(out.jobs, trainerv1alpha1.JobStatus{Name: t.Name, Ready: ptr.To(c.ReadyReplicas), Succeeded: ptr.To(c.SucceededReplicas),
			Failed: ptr.To(c.FailedReplicas), Active: ptr.To(c.Replicas), Suspended: ptr.To[int32](0)})
	}
	return out, nil
}
