package topodcliqueset

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	webhook "github.com/kubegrove/grove/webhooks/pcsadmission"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func job(name, ancestor string, dependsOn ...string) jobsetv1alpha2.ReplicatedJob {
	rj := jobsetv1alpha2.ReplicatedJob{
		Name: name, Replicas: 1,
		Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{plan.AncestorLabel: ancestor}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					RestartPolicy:     corev1.RestartPolicyOnFailure,
					PriorityClassName: "training-high",
					Containers:        []corev1.Container{{Name: name, Image: "runtime/" + name}},
				},
			}},
		},
	}
	for _, d := range dependsOn {
		rj.DependsOn = append(rj.DependsOn, jobsetv1alpha2.DependsOn{Name: d, Status: jobsetv1alpha2.DependencyComplete})
	}
	return rj
}

func torchRuntime() *plan.Runtime {
	return &plan.Runtime{Kind: trainerv1alpha1.TrainingRuntimeKind, Name: "torch-grove", Spec: trainerv1alpha1.TrainingRuntimeSpec{
		WorkloadKind: trainerv1alpha1.WorkloadKindPodCliqueSet,
		MLPolicy:     &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](2), MLPolicySource: trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}},
		Template: trainerv1alpha1.JobSetTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "research"}},
			Spec: jobsetv1alpha2.JobSetSpec{
				FailurePolicy: &jobsetv1alpha2.FailurePolicy{MaxRestarts: 2},
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
					job(plan.DatasetInitializer, plan.DatasetInitializer),
					job(plan.ModelInitializer, plan.ModelInitializer),
					job(plan.Node, plan.AncestorTrainer, plan.DatasetInitializer),
				},
			},
		},
	}}
}

func torchJob() *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "team-a", Labels: map[string]string{"kai.scheduler/queue": "gpu-queue"}},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef:            trainerv1alpha1.RuntimeRef{Name: "torch-grove"},
			ActiveDeadlineSeconds: ptr.To[int64](600),
			Trainer: &trainerv1alpha1.Trainer{
				Image: ptr.To("my/trainer:v1"), Command: []string{"torchrun", "train.py"}, NumNodes: ptr.To[int32](4),
				ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
			},
		},
	}
}

func TestBuildMatchesTheGoldenPodCliqueSet(t *testing.T) {
	pcs, extra, err := Build(torchJob(), torchRuntime(), plan.Options{})
	require.NoError(t, err)
	assert.Empty(t, extra, "torch needs no objects besides the PodCliqueSet")
	got, err := yaml.Marshal(pcs)
	require.NoError(t, err)
	golden := filepath.Join("testdata", "torch.golden.yaml")
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "run go test -update and review the diff")
}

func TestBuildMapsTheTrainJobOntoATrainingPodCliqueSet(t *testing.T) {
	pcs, _, err := Build(torchJob(), torchRuntime(), plan.Options{})
	require.NoError(t, err)
	assert.Equal(t, "llm", pcs.Name)
	assert.Equal(t, grovev1alpha1.WorkloadTypeTraining, pcs.Spec.WorkloadType)
	assert.EqualValues(t, 1, pcs.Spec.Replicas, "a TrainJob is one gang")
	assert.Equal(t, 10*time.Minute, pcs.Spec.TrainingSpec.MaxRuntime.Duration, "maxRuntime from activeDeadlineSeconds")
	assert.EqualValues(t, 2, *pcs.Spec.TrainingSpec.MaxRestarts, "maxRestarts from the JobSet failure policy")
	assert.Equal(t, "gpu-queue", pcs.Labels["kai.scheduler/queue"], "queue label carried to the backend")
	assert.Equal(t, "research", pcs.Labels["team"])
	assert.Equal(t, "training-high", pcs.Spec.Template.PriorityClassName)
	assert.True(t, pcs.Spec.Template.HeadlessServiceConfig.PublishNotReadyAddresses, "rendezvous resolves before pods are Ready")
	assert.Equal(t, grovev1alpha1.CliqueStartupTypeExplicit, *pcs.Spec.Template.StartupType)

	byName := map[string]*grovev1alpha1.PodCliqueTemplateSpec{}
	for _, c := range pcs.Spec.Template.Cliques {
		byName[c.Name] = c
		assert.Equal(t, corev1.RestartPolicyNever, c.Spec.PodSpec.RestartPolicy, "%s: a failed pod restarts the gang, not a container", c.Name)
		assert.Equal(t, "llm", c.Labels[trainerv1alpha1.LabelTrainJobName])
		assert.Equal(t, c.Spec.Replicas, *c.Spec.MinAvailable, "%s: the whole clique is in the gang", c.Name)
	}
	require.Len(t, byName, 3)
	node := byName[plan.Node]
	assert.EqualValues(t, 4, node.Spec.Replicas, "trainer.numNodes overrides the runtime's")
	assert.Empty(t, node.Spec.StartsAfter)
	assert.Equal(t, []string{plan.DatasetInitializer, plan.ModelInitializer}, node.Spec.StartsAfterSucceeded,
		"dependsOn Complete first, then every initializer: the trainer starts once they exited 0")
	assert.Empty(t, byName[plan.DatasetInitializer].Spec.StartsAfterSucceeded)

	c := node.Spec.PodSpec.Containers[0]
	assert.Equal(t, "my/trainer:v1", c.Image)
	assert.Equal(t, []string{"torchrun", "train.py"}, c.Command)
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	assert.Equal(t, "4", env[plan.EnvTorchNumNodes].Value)
	assert.Equal(t, "llm-0-node-0.llm-0", env[plan.EnvTorchMasterAddr].Value)
	assert.Equal(t, "29500", env[plan.EnvTorchMasterPort].Value)
	require.NotNil(t, env[plan.EnvTorchNodeRank].ValueFrom)
	assert.Equal(t, "metadata.labels['grove.io/podclique-pod-index']", env[plan.EnvTorchNodeRank].ValueFrom.FieldRef.FieldPath)
	assert.Equal(t, "auto", env[plan.EnvTorchNumProcPerNode].Value, "with GPUs torchrun starts one process per GPU, as in Kubeflow")
}

func TestNetworkNamesPodsByCliqueAndIndexInTheReplicaService(t *testing.T) {
	net := Network(&trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "mpi"}})
	for _, tc := range []struct {
		job   string
		index int
		want  string
	}{
		{"node", 0, "mpi-0-node-0.mpi-0"},
		{"node", 3, "mpi-0-node-3.mpi-0"},
		{"launcher", 0, "mpi-0-launcher-0.mpi-0"},
	} {
		assert.Equal(t, tc.want, net.Host(tc.job, tc.index))
	}
}

func TestBuildRefusesWhatTheTemplateCannotRun(t *testing.T) {
	rt := torchRuntime()
	rt.Spec.MLPolicy.MPI = &trainerv1alpha1.MPIMLPolicySource{MPIImplementation: ptr.To(trainerv1alpha1.MPIImplementationIntel)}
	rt.Spec.MLPolicy.Torch = nil
	_, _, err := Build(torchJob(), rt, plan.Options{})
	var unsupported *plan.UnsupportedError
	require.ErrorAs(t, err, &unsupported)
	assert.Contains(t, err.Error(), "spec.mlPolicy.mpi.mpiImplementation")
}

func TestBuiltPodCliqueSetPassesAdmission(t *testing.T) {
	registry, err := backends.Admitters(configv1alpha1.SchedulerConfiguration{})
	require.NoError(t, err)
	pcs, _, err := Build(torchJob(), torchRuntime(), plan.Options{})
	require.NoError(t, err)
	webhook.Default(pcs, registry)
	assert.Empty(t, webhook.Validate(pcs, registry))
}

func TestDependsOnReadyWaitsForReadinessAndCompleteForSuccess(t *testing.T) {
	rt := torchRuntime()
	launcher := job("launcher", "launcher")
	launcher.DependsOn = []jobsetv1alpha2.DependsOn{{Name: plan.Node, Status: jobsetv1alpha2.DependencyReady}}
	rt.Spec.Template.Spec.ReplicatedJobs = append(rt.Spec.Template.Spec.ReplicatedJobs, launcher)
	pcs, _, err := Build(torchJob(), rt, plan.Options{})
	require.NoError(t, err)
	got := pcs.Spec.Template.Cliques[3]
	require.Equal(t, "launcher", got.Name)
	assert.Equal(t, []string{plan.Node}, got.Spec.StartsAfter)
	assert.Empty(t, got.Spec.StartsAfterSucceeded)
}

func TestAPodCliqueSetOfATrainJobKueueAdmitsWholeIsAdmittedThroughIt(t *testing.T) {
	kueuePatch := trainerv1alpha1.RuntimePatch{Manager: trainerv1alpha1.RuntimePatchManagerKueue}
	cases := []struct {
		name    string
		labels  map[string]string
		patches []trainerv1alpha1.RuntimePatch
		want    grovev1alpha1.QueueAdmission
	}{
		{"queued and carrying Kueue's runtime patch", map[string]string{trainerv1alpha1.LabelKueueQueueName: "team-a"}, []trainerv1alpha1.RuntimePatch{kueuePatch}, grovev1alpha1.QueueAdmissionOwner},
		{"queued without Kueue's TrainJob integration: its gangs queue one by one", map[string]string{trainerv1alpha1.LabelKueueQueueName: "team-a"}, nil, ""},
		{"Kueue's runtime patch without a queue", nil, []trainerv1alpha1.RuntimePatch{kueuePatch}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := torchJob()
			tj.Labels = tc.labels
			tj.Spec.RuntimePatches = tc.patches
			pcs, _, err := Build(tj, torchRuntime(), plan.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, pcs.Spec.QueueAdmission)
			assert.Equal(t, tc.labels[trainerv1alpha1.LabelKueueQueueName], grovev1alpha1.QueueNameOf(pcs), "the queue label reaches the PodCliqueSet")
		})
	}
}

func TestAVolcanoRuntimeSendsTheGangToTheVolcanoBackendInItsQueue(t *testing.T) {
	cases := []struct {
		name          string
		annotations   map[string]string
		schedulerName string
		wantQueue     string
		wantScheduler string
	}{
		{name: "no queue: Volcano's default", wantScheduler: "volcano"},
		{name: "the template's queue", annotations: map[string]string{"scheduling.volcano.sh/queue-name": "research"}, wantQueue: "research", wantScheduler: "volcano"},
		{name: "a scheduler the template names is kept", schedulerName: "volcano-gpu", wantScheduler: "volcano-gpu"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := torchRuntime()
			rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}}
			rt.Spec.Template.Annotations = tc.annotations
			for i := range rt.Spec.Template.Spec.ReplicatedJobs {
				rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulerName = tc.schedulerName
			}

			pcs, extra, err := Build(torchJob(), rt, plan.Options{})

			require.NoError(t, err)
			assert.Empty(t, extra, "the volcano backend keeps the PodGroups, one per PodGang")
			assert.Equal(t, tc.wantQueue, grovev1alpha1.VolcanoQueueOf(pcs))
			for _, c := range pcs.Spec.Template.Cliques {
				assert.Equal(t, tc.wantScheduler, c.Spec.PodSpec.SchedulerName, c.Name)
			}
		})
	}
}

func TestAVolcanoPodCliqueSetPassesTheVolcanoBackendsAdmission(t *testing.T) {
	registry, err := backends.Admitters(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameVolcano}}})
	require.NoError(t, err)
	rt := torchRuntime()
	rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}}
	rt.Spec.Template.Annotations = map[string]string{"scheduling.volcano.sh/queue-name": "research"}
	pcs, _, err := Build(torchJob(), rt, plan.Options{})
	require.NoError(t, err)
	webhook.Default(pcs, registry)
	assert.Empty(t, webhook.Validate(pcs, registry))
	assert.Equal(t, configv1alpha1.SchedulerNameVolcano, registry.ForPodCliqueSet(pcs).Name())
}

// launcherRuntime is DeepSpeed's shape: a launcher and sshd nodes, succeeding with the launcher.
func launcherRuntime() *plan.Runtime {
	return &plan.Runtime{Kind: trainerv1alpha1.TrainingRuntimeKind, Name: "mpi", Spec: trainerv1alpha1.TrainingRuntimeSpec{
		WorkloadKind: trainerv1alpha1.WorkloadKindPodCliqueSet,
		Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
			SuccessPolicy:  &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{"launcher"}},
			ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{job("launcher", ""), job(plan.Node, plan.AncestorTrainer)},
		}},
	}}
}

func TestJobSetSuccessPolicyBecomesTheTrainingSuccessPolicyOverCliques(t *testing.T) {
	pcs, _, err := Build(torchJob(), launcherRuntime(), plan.Options{})
	require.NoError(t, err)
	assert.Equal(t, &grovev1alpha1.TrainingSuccessPolicy{Operator: grovev1alpha1.TrainingSuccessAll, TargetCliques: []string{"launcher"}},
		pcs.Spec.TrainingSpec.SuccessPolicy, "the PodCliqueSet succeeds with its launcher, as Kubeflow's JobSet does")

	plain, _, err := Build(torchJob(), torchRuntime(), plan.Options{})
	require.NoError(t, err)
	assert.Nil(t, plain.Spec.TrainingSpec.SuccessPolicy, "no policy: every clique must succeed, JobSet's default")
}

func TestInOrderStartupWaitsForTheJobListedBefore(t *testing.T) {
	rt := launcherRuntime()
	rt.Spec.Template.Spec.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.InOrder}
	pcs, _, err := Build(torchJob(), rt, plan.Options{})
	require.NoError(t, err)
	assert.Empty(t, pcs.Spec.Template.Cliques[0].Spec.StartsAfter, "the first job starts at once")
	assert.Equal(t, []string{"launcher"}, pcs.Spec.Template.Cliques[1].Spec.StartsAfter, "the node waits for the launcher to be ready")
	assert.Empty(t, rt.Spec.Template.Spec.ReplicatedJobs[1].DependsOn, "the runtime is not changed")
}

func TestPublishNotReadyAddressesFollowsTheTemplate(t *testing.T) {
	pcs, _, err := Build(torchJob(), torchRuntime(), plan.Options{})
	require.NoError(t, err)
	assert.True(t, pcs.Spec.Template.HeadlessServiceConfig.PublishNotReadyAddresses, "JobSet's default")

	rt := torchRuntime()
	rt.Spec.Template.Spec.Network = &jobsetv1alpha2.Network{PublishNotReadyAddresses: ptr.To(false)}
	pcs, _, err = Build(torchJob(), rt, plan.Options{})
	require.NoError(t, err)
	assert.False(t, pcs.Spec.Template.HeadlessServiceConfig.PublishNotReadyAddresses)
}

func TestCoschedulingSendsTheGangToTheSchedulerPluginsBackend(t *testing.T) {
	rt := torchRuntime()
	rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{
		Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To[int32](60)}}}
	rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.SchedulerName = "my-scheduler"
	sched := configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNamePlugins}}}

	pcs, _, err := Build(torchJob(), rt, plan.Options{Coscheduling: sched.SchedulerPlugins()})
	require.NoError(t, err)
	for _, c := range pcs.Spec.Template.Cliques {
		want := configv1alpha1.DefaultSchedulerPluginsSchedulerName
		if c.Name == plan.DatasetInitializer {
			want = "my-scheduler" // the template's own choice stays
		}
		assert.Equal(t, want, c.Spec.PodSpec.SchedulerName, c.Name)
	}
	registry, err := backends.Admitters(sched)
	require.NoError(t, err)
	b := registry.ForPodScheduler(configv1alpha1.DefaultSchedulerPluginsSchedulerName)
	require.NotNil(t, b)
	assert.Equal(t, configv1alpha1.SchedulerNamePlugins, b.Name(), "the trainer's cliques reach the scheduler-plugins backend")

	_, _, err = Build(torchJob(), rt, plan.Options{})
	require.Error(t, err, "without the backend the PodCliqueSet path cannot gang it")
	assert.Contains(t, err.Error(), "scheduler-plugins scheduler backend")
}
