package trainjobadmission

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// gracePath is the field a runtime patch's pod terminationGracePeriodSeconds is refused at, as
// the API server reports it.
func gracePath(patch, job int) string {
	return fmt.Sprintf("spec.runtimePatches[%d].trainingRuntimeSpec.template.spec.replicatedJobs[%d].template.spec.template.spec.terminationGracePeriodSeconds", patch, job)
}

// podPatch is a runtime patch of manager's that patches the pod spec of the named jobs.
func podPatch(manager string, spec trainerv1alpha1.PodSpecPatch, jobs ...string) trainerv1alpha1.RuntimePatch {
	p := trainerv1alpha1.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
		Template: &trainerv1alpha1.JobSetTemplatePatch{Spec: &trainerv1alpha1.JobSetSpecPatch{}}}}
	for _, j := range jobs {
		p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs = append(p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs, trainerv1alpha1.ReplicatedJobPatch{
			Name: j, Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{Template: &trainerv1alpha1.PodTemplatePatch{Spec: spec.DeepCopy()}}}})
	}
	return p
}

var (
	grace     = trainerv1alpha1.PodSpecPatch{TerminationGracePeriodSeconds: ptr.To[int64](120)}
	placement = trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "a100"},
		Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}}
)

// multiKueueCases are TrainJobs with runtime patches, dispatched or not, and the fields refused.
var multiKueueCases = []struct {
	name      string
	managedBy *string
	patches   []trainerv1alpha1.RuntimePatch
	want      []string
}{
	{"dispatched: a patch's pod terminationGracePeriodSeconds is refused", ptr.To(trainerv1alpha1.MultiKueueManagedBy),
		[]trainerv1alpha1.RuntimePatch{podPatch("example.com/tool", grace, "node")}, []string{gracePath(0, 0)}},
	{"dispatched: each patch and job that sets it is named", ptr.To(trainerv1alpha1.MultiKueueManagedBy),
		[]trainerv1alpha1.RuntimePatch{podPatch("kueue.x-k8s.io/manager", placement, "node"), podPatch("example.com/tool", grace, "launcher", "node")},
		[]string{gracePath(1, 0), gracePath(1, 1)}},
	{"dispatched: zero seconds is set too", ptr.To(trainerv1alpha1.MultiKueueManagedBy),
		[]trainerv1alpha1.RuntimePatch{podPatch("example.com/tool", trainerv1alpha1.PodSpecPatch{TerminationGracePeriodSeconds: ptr.To[int64](0)}, "node")},
		[]string{gracePath(0, 0)}},
	{"dispatched: other pod fields (Kueue's own placement patch) are accepted", ptr.To(trainerv1alpha1.MultiKueueManagedBy),
		[]trainerv1alpha1.RuntimePatch{podPatch("kueue.x-k8s.io/manager", placement, "node")}, nil},
	{"dispatched: patches without a pod spec are accepted", ptr.To(trainerv1alpha1.MultiKueueManagedBy), []trainerv1alpha1.RuntimePatch{
		{Manager: "a"},
		{Manager: "b", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{}},
		{Manager: "c", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}}},
		{Manager: "d", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{Spec: &trainerv1alpha1.JobSetSpecPatch{
			ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{Name: "node"}, {Name: "launcher", Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{
				Template: &trainerv1alpha1.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}}}}}}}}},
	}, nil},
	{"not dispatched: terminationGracePeriodSeconds is accepted", nil,
		[]trainerv1alpha1.RuntimePatch{podPatch("example.com/tool", grace, "node")}, nil},
	{"run by the trainer-controller: terminationGracePeriodSeconds is accepted", ptr.To(trainerv1alpha1.TrainJobControllerManagedBy),
		[]trainerv1alpha1.RuntimePatch{podPatch("example.com/tool", grace, "node")}, nil},
}

func multiKueueJob(managedBy *string, patches []trainerv1alpha1.RuntimePatch) *trainerv1alpha1.TrainJob {
	tj := builders.TrainJob("ns", "tj", "rt").Obj()
	tj.Spec.ManagedBy = managedBy
	tj.Spec.RuntimePatches = patches
	return tj
}

func TestADispatchedTrainJobsRuntimePatchMayNotSetWhatMultiKueuesCopyDrops(t *testing.T) {
	for _, tc := range multiKueueCases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateTrainJob(multiKueueJob(tc.managedBy, tc.patches))
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				assert.Equal(t, field.ErrorTypeForbidden, e.Type)
				assert.Contains(t, e.Detail, "set it in the runtime instead")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// The refusal reaches the API server's answer, on create and on an update made while suspended
// (the only time runtimePatches may change).
func TestTheValidatorRefusesADispatchedTrainJobsGracePeriodPatchNamingTheField(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, trainerv1alpha1.AddToScheme(s))
	v := &TrainJobValidator{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(frameworkRuntime("rt", trainerv1alpha1.MLPolicySource{}, "")).Build()}
	ctx := context.Background()
	for _, tc := range multiKueueCases {
		for _, op := range []string{"create", "update"} {
			t.Run(op+": "+tc.name, func(t *testing.T) {
				tj := multiKueueJob(tc.managedBy, tc.patches)
				var err error
				if op == "create" {
					_, err = v.ValidateCreate(ctx, tj)
				} else {
					old := multiKueueJob(tc.managedBy, nil)
					old.Spec.Suspend, tj.Spec.Suspend = ptr.To(true), ptr.To(true)
					_, err = v.ValidateUpdate(ctx, old, tj)
				}
				if tc.want == nil {
					require.NoError(t, err)
					return
				}
				require.True(t, apierrors.IsInvalid(err), "%v", err)
				var status apierrors.APIStatus
				require.ErrorAs(t, err, &status)
				var got []string
				for _, c := range status.Status().Details.Causes {
					got = append(got, c.Field)
				}
				assert.Equal(t, tc.want, got)
				assert.Contains(t, err.Error(), "Kubeflow Trainer v2.2")
			})
		}
	}
}
