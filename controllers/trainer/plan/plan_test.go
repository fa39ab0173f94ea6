package plan

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubegrove/grove/test/builders"
)

func TestTrainerOverridesReachOnlyTheTrainerNodeContainer(t *testing.T) {
	cases := []struct {
		name    string
		trainer string
		check   func(t *testing.T, node *corev1.Container)
	}{
		{
			name:    "no trainer keeps the runtime's container",
			trainer: ``,
			check: func(t *testing.T, node *corev1.Container) {
				assert.Equal(t, "trainer:1", node.Image)
				assert.Equal(t, []string{"torchrun"}, node.Command)
				assert.Equal(t, []string{"train.py"}, node.Args)
				assert.Equal(t, []string{"RUNTIME_ENV", "SHARED"}, envNames(node))
			},
		},
		{
			name:    "image, command and args replace the runtime's",
			trainer: "trainer: {image: mine:2, command: [python], args: [-m, mine]}",
			check: func(t *testing.T, node *corev1.Container) {
				assert.Equal(t, "mine:2", node.Image)
				assert.Equal(t, []string{"python"}, node.Command)
				assert.Equal(t, []string{"-m", "mine"}, node.Args)
			},
		},
		{
			name:    "an empty command still replaces the runtime's",
			trainer: "trainer: {command: []}",
			check: func(t *testing.T, node *corev1.Container) {
				assert.Empty(t, node.Command)
				assert.Equal(t, []string{"train.py"}, node.Args)
			},
		},
		{
			name:    "env replaces same-named variables in place and appends new ones",
			trainer: "trainer: {env: [{name: NEW, value: job}, {name: SHARED, value: job}]}",
			check: func(t *testing.T, node *corev1.Container) {
				assert.Equal(t, []string{"RUNTIME_ENV", "SHARED", "NEW"}, envNames(node))
				assert.Equal(t, map[string]string{"RUNTIME_ENV": "runtime", "SHARED": "job", "NEW": "job"}, builders.EnvOf(*node))
			},
		},
		{
			name:    "resourcesPerNode merges by resource name",
			trainer: "trainer: {resourcesPerNode: {requests: {cpu: '8', nvidia.com/gpu: '1'}, limits: {nvidia.com/gpu: '1'}}}",
			check: func(t *testing.T, node *corev1.Container) {
				assert.Equal(t, corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("4Gi"), "nvidia.com/gpu": resource.MustParse("1"),
				}, node.Resources.Requests)
				assert.Equal(t, corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("8Gi"), "nvidia.com/gpu": resource.MustParse("1"),
				}, node.Resources.Limits)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlan(t, trainJobYAML(t, "runtimeRef: {name: rt}\n"+tc.trainer), runtimeYAML(t, torchRuntime))
			tc.check(t, containerOf(t, p, Node, Node))
			sidecar := containerOf(t, p, Node, "sidecar")
			assert.Equal(t, "sidecar:1", sidecar.Image)
			assert.Empty(t, sidecar.Env)
			assert.Equal(t, "dataset:1", containerOf(t, p, DatasetInitializer, DatasetInitializer).Image)
		})
	}
}

func TestTrainerEnvAndResourcesReachTheMPINodeJobOnlyWhenTheLauncherIsANode(t *testing.T) {
	tj := trainJobYAML(t, `
runtimeRef: {name: rt}
trainer:
  image: mine:2
  env: [{name: A, value: "1"}]
  resourcesPerNode: {requests: {cpu: "3"}}
`)
	cases := []struct {
		name     string
		asNode   bool
		wantNode map[string]string
	}{
		{name: "launcher runs as a node", asNode: true, wantNode: map[string]string{"A": "1"}},
		{name: "launcher only launches", asNode: false, wantNode: map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := runtimeYAML(t, mpiRuntime)
			rt.Spec.MLPolicy.MPI.RunLauncherAsNode = ptr.To(tc.asNode)
			p := newPlan(t, tj, rt)
			node, launcher := containerOf(t, p, Node, Node), containerOf(t, p, Launcher, Node)
			assert.Equal(t, "mpi:1", node.Image, "the image is the trainer job's only")
			assert.Equal(t, "mine:2", launcher.Image)
			assert.Equal(t, map[string]string{"A": "1"}, builders.EnvOf(*launcher))
			assert.Equal(t, tc.wantNode, builders.EnvOf(*node))
			_, hasCPU := node.Resources.Requests[corev1.ResourceCPU]
			assert.Equal(t, tc.asNode, hasCPU)
		})
	}
}

func TestInitializerOverridesReachTheirContainers(t *testing.T) {
	tj := trainJobYAML(t, `
runtimeRef: {name: rt}
initializer:
  dataset:
    storageUri: hf://job/dataset
    env: [{name: EXTRA, value: "1"}]
    secretRef: {name: dataset-creds}
  model:
    storageUri: hf://job/model
`)
	p := newPlan(t, tj, runtimeYAML(t, torchRuntime))

	dataset := containerOf(t, p, DatasetInitializer, DatasetInitializer)
	assert.Equal(t, []string{EnvStorageURI, "KEEP", "EXTRA"}, envNames(dataset), "STORAGE_URI is replaced in place")
	assert.Equal(t, map[string]string{EnvStorageURI: "hf://job/dataset", "KEEP": "yes", "EXTRA": "1"}, builders.EnvOf(*dataset))
	assert.Equal(t, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dataset-creds"}}}}, dataset.EnvFrom)

	model := containerOf(t, p, ModelInitializer, ModelInitializer)
	assert.Equal(t, map[string]string{EnvStorageURI: "hf://job/model"}, builders.EnvOf(*model))
	assert.Empty(t, model.EnvFrom)

	for _, job := range []string{DatasetInitializer, ModelInitializer, Node} {
		assert.EqualValues(t, 1, jobOf(t, p, job).Replicas, "job %s runs once", job)
	}
}

func TestNoInitializerLeavesInitializerContainersAsTheRuntimeHasThem(t *testing.T) {
	rt := runtimeYAML(t, torchRuntime)
	p := newPlan(t, trainJobYAML(t, "runtimeRef: {name: rt}"), rt)
	assert.Equal(t, rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers,
		jobOf(t, p, DatasetInitializer).Template.Spec.Template.Spec.Containers)
}

func TestRuntimePatchesMergeInListOrder(t *testing.T) {
	tj := trainJobYAML(t, `
runtimeRef: {name: rt}
runtimePatches:
- manager: z.example.com/first
  trainingRuntimeSpec:
    template:
      metadata:
        labels: {team: b, queue: q1}
        annotations: {note: first}
      spec:
        replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {patched: "yes"}
            spec:
              template:
                metadata:
                  annotations: {pod: patched}
                spec:
                  nodeSelector: {zone: a}
                  tolerations: [{key: gpu, operator: Exists}]
                  containers:
                  - name: sidecar
                    env: [{name: SIDE, value: "1"}]
                  volumes: [{name: scratch, emptyDir: {}}]
- manager: a.example.com/second
  trainingRuntimeSpec:
    template:
      metadata:
        labels: {queue: q2}
      spec:
        replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  nodeSelector: {rack: r1}
                  tolerations: [{key: spot, operator: Exists}]
                  serviceAccountName: trainer
        - name: dataset-initializer
          template:
            spec:
              template:
                spec:
                  schedulingGates: [{name: wait}]
`)
	p := newPlan(t, tj, runtimeYAML(t, torchRuntime))

	assert.Equal(t, map[string]string{"team": "b", "queue": "q2"}, p.Template.Labels, "later patches win")
	assert.Equal(t, map[string]string{"note": "first"}, p.Template.Annotations)
	var names []string
	for _, rj := range p.Template.Spec.ReplicatedJobs {
		names = append(names, rj.Name)
	}
	assert.Equal(t, []string{DatasetInitializer, ModelInitializer, Node}, names, "the runtime's job order is kept")

	node := jobOf(t, p, Node)
	assert.Equal(t, map[string]string{AncestorLabel: AncestorTrainer, "patched": "yes"}, node.Template.Labels)
	pod := node.Template.Spec.Template
	assert.Equal(t, map[string]string{"pod": "patched"}, pod.Annotations)
	assert.Equal(t, map[string]string{"zone": "a", "rack": "r1"}, pod.Spec.NodeSelector, "maps merge")
	assert.Equal(t, []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}, pod.Spec.Tolerations, "tolerations replace")
	assert.Equal(t, "trainer", pod.Spec.ServiceAccountName)
	assert.Equal(t, []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, pod.Spec.Volumes)
	assert.Equal(t, map[string]string{"SIDE": "1"}, builders.EnvOf(*containerOf(t, p, Node, "sidecar")))
	assert.Equal(t, "sidecar:1", containerOf(t, p, Node, "sidecar").Image, "a container patch keeps the container")
	assert.Equal(t, "trainer:1", containerOf(t, p, Node, Node).Image)
	assert.Equal(t, []corev1.PodSchedulingGate{{Name: "wait"}}, jobOf(t, p, DatasetInitializer).Template.Spec.Template.Spec.SchedulingGates)
	assert.Equal(t, "dataset:1", containerOf(t, p, DatasetInitializer, DatasetInitializer).Image)
}

func TestRuntimePatchOfAMissingReplicatedJobIsAnError(t *testing.T) {
	tj := trainJobYAML(t, `
runtimeRef: {name: rt}
runtimePatches:
- manager: example.com/m
  trainingRuntimeSpec:
    template:
      spec:
        replicatedJobs: [{name: ghost}]
`)
	_, err := NewPlan(tj, runtimeYAML(t, torchRuntime))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name")
	assert.Contains(t, err.Error(), `"ghost"`)
}

func TestNewPlanLeavesTheRuntimeAndTrainJobUntouched(t *testing.T) {
	rt := runtimeYAML(t, torchRuntime)
	tj := trainJobYAML(t, `
runtimeRef: {name: rt}
trainer: {image: x, env: [{name: A, value: "1"}], numNodes: 3, resourcesPerNode: {requests: {cpu: "1"}}}
initializer: {dataset: {storageUri: hf://x}}
runtimePatches: [{manager: example.com/m, trainingRuntimeSpec: {template: {metadata: {labels: {x: y}}}}}]
`)
	rtBefore, tjBefore := *rt.Spec.DeepCopy(), tj.DeepCopy()
	p := newPlan(t, tj, rt)
	_, err := ApplyFramework(tj, rt, p, testNetwork)
	require.NoError(t, err)
	assert.Equal(t, rtBefore, rt.Spec)
	assert.Equal(t, tjBefore, tj)
}

func TestPodCountsFollowNumNodes(t *testing.T) {
	withNode := func(name string, ancestor, parallelism string) string {
		return `
    - name: ` + name + `
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: ` + ancestor + `}}
        spec:
          parallelism: ` + parallelism + `
          template: {spec: {containers: [{name: node, image: i}]}}`
	}
	cases := []struct {
		name     string
		runtime  string
		trainer  string
		want     map[string]int32
		numNodes int32
	}{
		{
			name:     "torch trainer job runs mlPolicy.numNodes",
			runtime:  torchRuntime,
			want:     map[string]int32{DatasetInitializer: 1, ModelInitializer: 1, Node: 2},
			numNodes: 2,
		},
		{
			name:     "trainer.numNodes overrides mlPolicy.numNodes",
			runtime:  torchRuntime,
			trainer:  "trainer: {numNodes: 5}",
			want:     map[string]int32{DatasetInitializer: 1, ModelInitializer: 1, Node: 5},
			numNodes: 5,
		},
		{
			name:     "without an ML policy the trainer job keeps its parallelism",
			runtime:  "template:\n  spec:\n    replicatedJobs:" + withNode("node", "trainer", "3"),
			want:     map[string]int32{Node: 3},
			numNodes: 1,
		},
		{
			name:     "without an ML policy trainer.numNodes still sets the trainer job",
			runtime:  "template:\n  spec:\n    replicatedJobs:" + withNode("node", "trainer", "3"),
			trainer:  "trainer: {numNodes: 4}",
			want:     map[string]int32{Node: 4},
			numNodes: 4,
		},
		{
			name:     "a job that is not the trainer keeps its parallelism",
			runtime:  "mlPolicy: {numNodes: 2, torch: {}}\ntemplate:\n  spec:\n    replicatedJobs:" + withNode("node", "trainer", "1") + withNode("aux", "other", "3"),
			trainer:  "trainer: {numNodes: 6}",
			want:     map[string]int32{Node: 6, "aux": 3},
			numNodes: 6,
		},
		{
			name:     "MPI launcher as a node takes one of the nodes",
			runtime:  mpiRuntime,
			trainer:  "trainer: {numNodes: 3}",
			want:     map[string]int32{Node: 2, Launcher: 1},
			numNodes: 3,
		},
		{
			name:     "MPI without trainer.numNodes keeps the node job's parallelism",
			runtime:  mpiRuntime,
			want:     map[string]int32{Node: 1, Launcher: 1},
			numNodes: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlan(t, trainJobYAML(t, "runtimeRef: {name: rt}\n"+tc.trainer), runtimeYAML(t, tc.runtime))
			got := map[string]int32{}
			for _, rj := range p.Template.Spec.ReplicatedJobs {
				require.Equal(t, rj.Template.Spec.Parallelism, rj.Template.Spec.Completions, "job %s", rj.Name)
				got[rj.Name] = *rj.Template.Spec.Parallelism
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.numNodes, p.NumNodes)
		})
	}
}

func TestMPINodeJobWithoutLauncherAsNodeRunsAllNodes(t *testing.T) {
	rt := runtimeYAML(t, mpiRuntime)
	rt.Spec.MLPolicy.MPI.RunLauncherAsNode = ptr.To(false)
	p := newPlan(t, trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {numNodes: 3}"), rt)
	assert.Equal(t, ptr.To[int32](3), jobOf(t, p, Node).Template.Spec.Parallelism)
}

func TestNumProcPerNodeResolution(t *testing.T) {
	torch := func(resources string) string {
		return `
mlPolicy: {torch: {}}
template:
  spec:
    replicatedJobs:
    - name: node
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
        spec:
          template: {spec: {containers: [{name: node, image: i, resources: ` + resources + `}]}}`
	}
	mpi := func(procs, resources string) string {
		return `
mlPolicy: {mpi: {numProcPerNode: ` + procs + `}}
template:
  spec:
    replicatedJobs:
    - name: node
      template:
        spec:
          template: {spec: {containers: [{name: node, image: i, resources: ` + resources + `}]}}`
	}
	cases := []struct {
		name    string
		runtime string
		trainer string
		want    string
	}{
		{"torch: the TrainJob's count wins", torch("{limits: {nvidia.com/gpu: 4}}"), "trainer: {numProcPerNode: 3}", "3"},
		{"torch: GPUs leave it to torchrun", torch("{limits: {nvidia.com/gpu: 4}}"), "", "auto"},
		{"torch: GPU requests also count", torch("{requests: {cpu: 16, example.com/GPU: 1}}"), "", "auto"},
		{"torch: CPU request without GPUs", torch("{requests: {cpu: 3}, limits: {cpu: 8}}"), "", "3"},
		{"torch: CPU limit when nothing is requested", torch("{limits: {cpu: 4}}"), "", "4"},
		{"torch: fractional CPUs round up", torch("{limits: {cpu: 2500m}}"), "", "3"},
		{"torch: less than a CPU is one process", torch("{limits: {cpu: 700m}}"), "", "1"},
		{"torch: no resources is one process", torch("{}"), "", "1"},
		{"torch: the TrainJob's resources replace the runtime's", torch("{limits: {nvidia.com/gpu: 4}}"), "trainer: {resourcesPerNode: {requests: {cpu: 6}}}", "6"},
		{"mpi: the TrainJob's count wins", mpi("1", "{limits: {nvidia.com/gpu: 4}}"), "trainer: {numProcPerNode: 2}", "2"},
		{"mpi: the runtime's count", mpi("3", "{limits: {nvidia.com/gpu: 4}}"), "", "3"},
		{"mpi: one process per node becomes one per GPU", mpi("1", "{limits: {nvidia.com/gpu: 4}}"), "", "4"},
		{"mpi: a single GPU keeps one process", mpi("1", "{limits: {nvidia.com/gpu: 1}}"), "", "1"},
		{"no framework: the TrainJob's count", "template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: i}]}}}}}]}}", "trainer: {numProcPerNode: 5}", "5"},
		{"no framework: one", "template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: i}]}}}}}]}}", "", "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlan(t, trainJobYAML(t, "runtimeRef: {name: rt}\n"+tc.trainer), runtimeYAML(t, tc.runtime))
			assert.Equal(t, tc.want, p.NumProcPerNode)
		})
	}
}

func TestUnsupportedPoliciesAreUnsupportedErrorsNamingTheField(t *testing.T) {
	node := "\ntemplate: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: i}]}}}}}]}}"
	cases := []struct {
		runtime string
		field   string
	}{
		{"mlPolicy: {mpi: {mpiImplementation: Intel}}", "spec.mlPolicy.mpi.mpiImplementation"},
		{"mlPolicy: {mpi: {mpiImplementation: MPICH}}", "spec.mlPolicy.mpi.mpiImplementation"},
	}
	for _, tc := range cases {
		t.Run(tc.runtime, func(t *testing.T) {
			rt := runtimeYAML(t, tc.runtime+node)
			tj := trainJobYAML(t, "runtimeRef: {name: rt}")
			for _, build := range []func() error{
				func() error { _, err := NewPlan(tj, rt); return err },
				func() error { _, err := ApplyFramework(tj, rt, &Plan{NumProcPerNode: "1"}, testNetwork); return err },
			} {
				err := build()
				var unsupported *UnsupportedError
				require.True(t, errors.As(err, &unsupported), "got %v", err)
				assert.Equal(t, tc.field, unsupported.Field)
				assert.Contains(t, err.Error(), tc.field)
				assert.Contains(t, err.Error(), `ClusterTrainingRuntime "rt"`)
			}
		})
	}
}

func TestSupportedPoliciesAreNotUnsupported(t *testing.T) {
	for _, spec := range []string{torchRuntime, mpiRuntime, jaxRuntime, xgboostRuntime, fluxRuntime, plainRuntime, "podGroupPolicy: {coscheduling: {}}\n" + torchRuntime} {
		assert.NoError(t, CheckSupported(runtimeYAML(t, spec)))
	}
}
