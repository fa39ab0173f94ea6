package trainjobadmission

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

func TestRuntimeLifetimeRules(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(*trainerv1alpha1.TrainingRuntimeSpec)
		paths    []string
		warnings int
	}{
		{"plain runtime", func(*trainerv1alpha1.TrainingRuntimeSpec) {}, nil, 0},
		{"short TTL warns", func(s *trainerv1alpha1.TrainingRuntimeSpec) { s.TTLSecondsAfterFinished = ptr.To[int32](30) }, nil, 1},
		{"an hour TTL is quiet", func(s *trainerv1alpha1.TrainingRuntimeSpec) { s.TTLSecondsAfterFinished = ptr.To[int32](3600) }, nil, 0},
		{"JobSet TTL forbidden", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.TTLSecondsAfterFinished = ptr.To[int32](10)
		}, []string{"spec.template.spec.ttlSecondsAfterFinished"}, 0},
		{"Job deadline forbidden", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
		}, []string{"spec.template.spec.replicatedJobs[0].template.spec.activeDeadlineSeconds"}, 0},
		{"Job TTL forbidden", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.TTLSecondsAfterFinished = ptr.To[int32](10)
		}, []string{"spec.template.spec.replicatedJobs[0].template.spec.ttlSecondsAfterFinished"}, 0},
		{"zero nodes", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.MLPolicy = &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](0)}
		}, []string{"spec.mlPolicy.numNodes"}, 0},
		{"10000 pods in one job is the most", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Replicas = 100
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](100)
		}, nil, 0},
		{"a job of 2^31-1 pods", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](math.MaxInt32)
		}, []string{"spec.template.spec.replicatedJobs[0]"}, 0},
		{"replicas times parallelism beyond int32", func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Replicas = math.MaxInt32
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Parallelism = ptr.To[int32](math.MaxInt32)
		}, []string{"spec.template.spec.replicatedJobs[0]"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &trainerv1alpha1.TrainingRuntimeSpec{Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: "node"}},
			}}}
			tc.mutate(spec)
			errs, warnings := ValidateRuntimeSpec(spec)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.ElementsMatch(t, tc.paths, got)
			assert.Len(t, warnings, tc.warnings)
		})
	}
}

func trainJob(ns string) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: ns},
		Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{
			Name: "rt", APIGroup: ptr.To("trainer.kubeflow.org"), Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind),
		}},
	}
}

func TestTrainJobRules(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, trainerv1alpha1.AddToScheme(s))
	rt := &trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "rt", Namespace: "ns"}}
	v := &TrainJobValidator{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(rt).Build()}
	ctx := context.Background()

	t.Run("an existing runtime: no warning", func(t *testing.T) {
		w, err := v.ValidateCreate(ctx, trainJob("ns"))
		require.NoError(t, err)
		assert.Empty(t, w)
	})
	t.Run("a runtime that does not exist yet: admitted with a warning", func(t *testing.T) {
		w, err := v.ValidateCreate(ctx, trainJob("other"))
		require.NoError(t, err)
		require.Len(t, w, 1)
		assert.Contains(t, w[0], `TrainingRuntime "rt" does not exist yet`)
	})
	t.Run("a runtime the cache has not seen yet is read through and checked", func(t *testing.T) {
		// A coscheduling timeout the PodCliqueSet path cannot honour: refused only if it is read.
		bad := frameworkRuntime("rt", trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}, "")
		bad.Namespace = "fresh"
		bad.Spec.WorkloadKind = trainerv1alpha1.WorkloadKindPodCliqueSet
		bad.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{
			Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To[int32](300)}}}
		fresh := &TrainJobValidator{Client: fake.NewClientBuilder().WithScheme(s).Build(),
			Cluster: fake.NewClientBuilder().WithScheme(s).WithObjects(bad).Build(), Coscheduling: &configv1alpha1.SchedulerPluginsConfig{}}
		w, err := fresh.ValidateCreate(ctx, trainJob("fresh"))
		assert.Empty(t, w, "no 'does not exist yet' warning")
		require.ErrorContains(t, err, "scheduleTimeoutSeconds is 300")
	})
	t.Run("an unsupported runtime kind", func(t *testing.T) {
		tj := trainJob("ns")
		tj.Spec.RuntimeRef.Kind = ptr.To("Deployment")
		_, err := v.ValidateCreate(ctx, tj)
		require.ErrorContains(t, err, "spec.runtimeRef.kind")
	})
	t.Run("numNodes and numProcPerNode at least 1", func(t *testing.T) {
		tj := trainJob("ns")
		tj.Spec.Trainer = &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](0), NumProcPerNode: ptr.To[int32](0)}
		_, err := v.ValidateCreate(ctx, tj)
		require.ErrorContains(t, err, "spec.trainer.numNodes")
		require.ErrorContains(t, err, "spec.trainer.numProcPerNode")
	})
	t.Run("runtimePatches change only while suspended", func(t *testing.T) {
		old := trainJob("ns")
		patched := old.DeepCopy()
		patched.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{{Manager: "kueue"}}
		_, err := v.ValidateUpdate(ctx, old, patched)
		require.ErrorContains(t, err, "spec.runtimePatches")
		old.Spec.Suspend, patched.Spec.Suspend = ptr.To(true), ptr.To(true)
		_, err = v.ValidateUpdate(ctx, old, patched)
		require.NoError(t, err)
	})
}

func frameworkRuntime(name string, policy trainerv1alpha1.MLPolicySource, gpus string) *trainerv1alpha1.TrainingRuntime {
	node := corev1.Container{Name: "node", Image: "img"}
	if gpus != "" {
		node.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}
	}
	rt := &trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	rt.Spec.MLPolicy = &trainerv1alpha1.MLPolicy{MLPolicySource: policy}
	rt.Spec.Template.Spec.ReplicatedJobs = []jobsetv1alpha2.ReplicatedJob{{Name: "node"}}
	rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers = []corev1.Container{node}
	return rt
}

func TestTrainJobRulesOfTheRuntimesFramework(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, trainerv1alpha1.AddToScheme(s))
	v := &TrainJobValidator{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(
		frameworkRuntime("jax", trainerv1alpha1.MLPolicySource{JAX: &trainerv1alpha1.JAXMLPolicySource{}}, ""),
		frameworkRuntime("xgboost-gpu", trainerv1alpha1.MLPolicySource{XGBoost: &trainerv1alpha1.XGBoostMLPolicySource{}}, "4"),
		frameworkRuntime("xgboost-cpu", trainerv1alpha1.MLPolicySource{XGBoost: &trainerv1alpha1.XGBoostMLPolicySource{}}, ""),
	).Build()}
	cases := []struct {
		name, runtime string
		trainer       trainerv1alpha1.Trainer
		wantPaths     []string
	}{
		{"JAX: one process per node is accepted", "jax", trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](4), NumProcPerNode: ptr.To[int32](1)}, nil},
		{"JAX: more processes per node cannot run", "jax", trainerv1alpha1.Trainer{NumProcPerNode: ptr.To[int32](8)}, []string{"spec.trainer.numProcPerNode"}},
		{"XGBoost: one worker per GPU is accepted", "xgboost-gpu", trainerv1alpha1.Trainer{NumProcPerNode: ptr.To[int32](4)}, nil},
		{"XGBoost: another worker count cannot run", "xgboost-gpu", trainerv1alpha1.Trainer{NumProcPerNode: ptr.To[int32](2)}, []string{"spec.trainer.numProcPerNode"}},
		{"XGBoost: the TrainJob's resources decide", "xgboost-gpu", trainerv1alpha1.Trainer{
			NumProcPerNode:   ptr.To[int32](2),
			ResourcesPerNode: &corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}},
		}, nil},
		{"XGBoost: a CPU node runs one worker", "xgboost-cpu", trainerv1alpha1.Trainer{NumProcPerNode: ptr.To[int32](3)}, []string{"spec.trainer.numProcPerNode"}},
		{"XGBoost: the collective's variables are reserved", "xgboost-cpu", trainerv1alpha1.Trainer{Env: []corev1.EnvVar{
			{Name: "OK", Value: "1"}, {Name: "DMLC_NUM_WORKER", Value: "9"}, {Name: "DMLC_TRACKER_URI", Value: "x"},
		}}, []string{"spec.trainer.env[1].name", "spec.trainer.env[2].name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := trainJob("ns")
			tj.Spec.RuntimeRef.Name = tc.runtime
			tj.Spec.Trainer = &tc.trainer
			_, err := v.ValidateCreate(context.Background(), tj)
			if tc.wantPaths == nil {
				require.NoError(t, err)
				return
			}
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status)
			var got []string
			for _, c := range status.Status().Details.Causes {
				got = append(got, c.Field)
			}
			assert.ElementsMatch(t, tc.wantPaths, got)
		})
	}
}

func TestFluxRuntimeReservesTheInstallerInitContainer(t *testing.T) {
	rt := frameworkRuntime("flux", trainerv1alpha1.MLPolicySource{Flux: &trainerv1alpha1.FluxMLPolicySource{}}, "")
	errs, _ := ValidateRuntimeSpec(&rt.Spec)
	assert.Empty(t, errs)
	rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "setup"}, {Name: "flux-installer"}}
	errs, _ = ValidateRuntimeSpec(&rt.Spec)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.spec.replicatedJobs[0].template.spec.template.spec.initContainers[1].name", errs[0].Field)
}

// jobSetOnly sets every JobSet setting the PodCliqueSet path cannot honour.
func jobSetOnly(s *trainerv1alpha1.TrainingRuntimeSpec) {
	s.Template.Spec.Coordinator = &jobsetv1alpha2.Coordinator{ReplicatedJob: "node"}
	s.Template.Spec.ManagedBy = ptr.To("example.com/other")
	s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{{Name: "r", Action: jobsetv1alpha2.FailJobSet}},
		RestartStrategy: jobsetv1alpha2.BlockingRecreate}
	s.Template.Spec.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(false), Subdomain: "other"}
	s.Template.Spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAny}
	s.Template.Spec.ReplicatedJobs[0].Replicas = 2
}

// jobOnly sets every Job setting a PodClique cannot honour.
func jobOnly(s *trainerv1alpha1.TrainingRuntimeSpec) {
	job := &s.Template.Spec.ReplicatedJobs[0].Template.Spec
	job.BackoffLimit, job.BackoffLimitPerIndex, job.MaxFailedIndexes = ptr.To[int32](3), ptr.To[int32](1), ptr.To[int32](1)
	job.PodFailurePolicy = &batchv1.PodFailurePolicy{}
	job.PodReplacementPolicy = ptr.To(batchv1.Failed)
	job.SuccessPolicy = &batchv1.SuccessPolicy{}
	job.Completions, job.Parallelism = ptr.To[int32](4), ptr.To[int32](2)
}

func TestPodCliqueSetPathRefusesWhatItCannotBuild(t *testing.T) {
	jobsetName := corev1.EnvVar{Name: "TRAIN_JOB_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: "metadata.labels['jobset.sigs.k8s.io/jobset-name']",
	}}}
	cases := []struct {
		name   string
		kind   trainerv1alpha1.WorkloadKind
		mutate func(*trainerv1alpha1.TrainingRuntimeSpec)
		paths  []string
	}{
		{"volume claim templates on the JobSet path", trainerv1alpha1.WorkloadKindJobSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.VolumeClaimPolicies = []jobsetv1alpha2.VolumeClaimPolicy{{}}
		}, nil},
		{"volume claim templates on the PodCliqueSet path", trainerv1alpha1.WorkloadKindPodCliqueSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.VolumeClaimPolicies = []jobsetv1alpha2.VolumeClaimPolicy{{}}
		}, []string{"spec.template.spec.volumeClaimPolicies"}},
		{"a JobSet label read by the JobSet path", trainerv1alpha1.WorkloadKindJobSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{jobsetName}
		}, nil},
		{"a JobSet label read by the PodCliqueSet path", trainerv1alpha1.WorkloadKindPodCliqueSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "i", Env: []corev1.EnvVar{{Name: "A", Value: "b"}, jobsetName}}}
		}, []string{"spec.template.spec.replicatedJobs[0].template.spec.template.spec.initContainers[0].env[1].valueFrom.fieldRef.fieldPath"}},
		{"JobSet-only settings on the JobSet path", trainerv1alpha1.WorkloadKindJobSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			jobSetOnly(s)
		}, nil},
		{"JobSet-only settings on the PodCliqueSet path", trainerv1alpha1.WorkloadKindPodCliqueSet, jobSetOnly, []string{
			"spec.template.spec.coordinator", "spec.template.spec.managedBy", "spec.template.spec.failurePolicy.rules",
			"spec.template.spec.failurePolicy.restartStrategy", "spec.template.spec.network.enableDNSHostnames",
			"spec.template.spec.network.subdomain", "spec.template.spec.replicatedJobs[0].replicas",
		}},
		{"Job-only settings on the JobSet path", trainerv1alpha1.WorkloadKindJobSet, jobOnly, nil},
		{"Job-only settings on the PodCliqueSet path", trainerv1alpha1.WorkloadKindPodCliqueSet, jobOnly, []string{
			"spec.template.spec.replicatedJobs[0].template.spec.backoffLimit",
			"spec.template.spec.replicatedJobs[0].template.spec.backoffLimitPerIndex",
			"spec.template.spec.replicatedJobs[0].template.spec.maxFailedIndexes",
			"spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy",
			"spec.template.spec.replicatedJobs[0].template.spec.podReplacementPolicy",
			"spec.template.spec.replicatedJobs[0].template.spec.successPolicy",
			"spec.template.spec.replicatedJobs[0].template.spec.completions",
		}},
		{"no pod retries and completions = parallelism are the PodCliqueSet path's own", trainerv1alpha1.WorkloadKindPodCliqueSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			job := &s.Template.Spec.ReplicatedJobs[0].Template.Spec
			job.BackoffLimit, job.Completions, job.Parallelism = ptr.To[int32](0), ptr.To[int32](2), ptr.To[int32](2)
		}, nil},
		{"what the PodCliqueSet path maps is admitted", trainerv1alpha1.WorkloadKindPodCliqueSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{"node"}}
			s.Template.Spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.InOrder}
			s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 3, RestartStrategy: jobsetv1alpha2.Recreate}
			s.Template.Spec.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(true), PublishNotReadyAddresses: ptr.To(false)}
		}, nil},
		{"the pod's own name is fine on the PodCliqueSet path", trainerv1alpha1.WorkloadKindPodCliqueSet, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := frameworkRuntime("rt", trainerv1alpha1.MLPolicySource{}, "")
			rt.Spec.WorkloadKind = tc.kind
			tc.mutate(&rt.Spec)
			errs, _ := ValidateRuntimeSpec(&rt.Spec)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.ElementsMatch(t, tc.paths, got)
		})
	}
}
