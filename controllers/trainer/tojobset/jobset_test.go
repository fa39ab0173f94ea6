package tojobset

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// readDocs splits a multi-document YAML file.
func readDocs(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var docs [][]byte
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

// runtimeAndJob decodes testdata/<name>: a TrainingRuntime, then a TrainJob.
func runtimeAndJob(t *testing.T, name string) (*plan.Runtime, *trainerv1alpha1.TrainJob) {
	t.Helper()
	docs := readDocs(t, filepath.Join("testdata", name))
	require.Len(t, docs, 2)
	var rt trainerv1alpha1.TrainingRuntime
	require.NoError(t, yaml.UnmarshalStrict(docs[0], &rt))
	var tj trainerv1alpha1.TrainJob
	require.NoError(t, yaml.UnmarshalStrict(docs[1], &tj))
	return &plan.Runtime{Kind: trainerv1alpha1.TrainingRuntimeKind, Name: rt.Name, Spec: rt.Spec}, &tj
}

func simpleRuntime(t *testing.T, spec string) *plan.Runtime {
	t.Helper()
	rt := &plan.Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: "rt"}
	require.NoError(t, yaml.UnmarshalStrict([]byte(spec), &rt.Spec))
	return rt
}

func simpleTrainJob(t *testing.T, spec string) *trainerv1alpha1.TrainJob {
	t.Helper()
	tj := &trainerv1alpha1.TrainJob{}
	tj.Name, tj.Namespace = "tj", "ns"
	require.NoError(t, yaml.UnmarshalStrict([]byte(spec), &tj.Spec))
	return tj
}

func TestTorchJobSetMatchesTheGoldenFile(t *testing.T) {
	rt, tj := runtimeAndJob(t, "torch-runtime.yaml")
	js, objs, err := Build(tj, rt, false, plan.Options{})
	require.NoError(t, err)

	var got bytes.Buffer
	for i, obj := range append([]client.Object{js}, objs...) {
		out, err := yaml.Marshal(obj)
		require.NoError(t, err)
		if i > 0 {
			got.WriteString("---\n")
		}
		got.Write(out)
	}
	golden := filepath.Join("testdata", "torch-jobset.golden.yaml")
	if *update {
		require.NoError(t, os.WriteFile(golden, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test -update to write the golden file")
	assert.Equal(t, string(want), got.String())
}

func TestBuildSetsTypeMetaAndLeavesOwnersToTheCaller(t *testing.T) {
	rt, tj := runtimeAndJob(t, "torch-runtime.yaml")
	js, objs, err := Build(tj, rt, true, plan.Options{})
	require.NoError(t, err)
	for _, obj := range append([]client.Object{js}, objs...) {
		gvk := obj.GetObjectKind().GroupVersionKind()
		assert.NotEmpty(t, gvk.Version, "%T", obj)
		assert.NotEmpty(t, gvk.Kind, "%T", obj)
		assert.Equal(t, "resnet", obj.GetName())
		assert.Equal(t, "ml", obj.GetNamespace())
		assert.Empty(t, obj.GetOwnerReferences())
	}
	assert.Equal(t, ptr.To(true), js.Spec.Suspend)
}

func TestSubdomainIsTheTrainJobNameUnlessTheTemplateSetsOne(t *testing.T) {
	node := `
mlPolicy: {torch: {}}
template:
  spec:
    %s
    replicatedJobs:
    - name: node
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
        spec: {template: {spec: {containers: [{name: node, image: i}]}}}`
	cases := []struct {
		name        string
		network     string
		wantNetwork jobsetv1alpha2.Network
		wantMaster  string
	}{
		{
			name:        "no network",
			wantNetwork: jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(true), Subdomain: "tj"},
			wantMaster:  "tj-node-0-0.tj",
		},
		{
			name:        "network without a subdomain keeps its settings",
			network:     "network: {publishNotReadyAddresses: false}",
			wantNetwork: jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(true), Subdomain: "tj", PublishNotReadyAddresses: ptr.To(false)},
			wantMaster:  "tj-node-0-0.tj",
		},
		{
			name:        "the template's subdomain",
			network:     "network: {subdomain: shared, enableDNSHostnames: true}",
			wantNetwork: jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(true), Subdomain: "shared"},
			wantMaster:  "tj-node-0-0.shared",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := simpleRuntime(t, strings.Replace(node, "%s", tc.network, 1))
			before := rt.Spec.DeepCopy()
			js, _, err := Build(simpleTrainJob(t, "runtimeRef: {name: rt}\ntrainer: {}"), rt, false, plan.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.wantNetwork, *js.Spec.Network)
			var master string
			for _, e := range js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Env {
				if e.Name == plan.EnvTorchMasterAddr {
					master = e.Value
				}
			}
			assert.Equal(t, tc.wantMaster, master)
			assert.Equal(t, *before, rt.Spec, "the runtime is not changed")
		})
	}
}

func TestNetworkAddressesPodsByJobSetHostname(t *testing.T) {
	tj := simpleTrainJob(t, "runtimeRef: {name: rt}")
	spec := &jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{Name: "node"}, {Name: "wide"}}}
	spec.ReplicatedJobs[1].Template.Spec.Parallelism = ptr.To[int32](2)
	net := Network(tj, spec)
	assert.Equal(t, "tj-node-0-0.tj", net.Host("node", 0))
	assert.Equal(t, "tj-node-3-0.tj", net.Host("node", 3), "with one pod per Job the index counts Jobs")
	assert.Equal(t, "tj-wide-0-1.tj", net.Host("wide", 1))
	assert.Equal(t, "tj-wide-1-0.tj", net.Host("wide", 2), "the index runs on into the next replica")
	assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", net.RankFieldPath)

	spec.Network = &jobsetv1alpha2.Network{Subdomain: "svc"}
	assert.Equal(t, "tj-node-0-0.svc", Network(tj, spec).Host("node", 0))
}

func TestCoschedulingPodGroupCoversEveryPod(t *testing.T) {
	rt, tj := runtimeAndJob(t, "torch-runtime.yaml")
	js, objs, err := Build(tj, rt, false, plan.Options{})
	require.NoError(t, err)
	require.Len(t, objs, 1)
	pg, ok := objs[0].(*schedv1alpha1.PodGroup)
	require.True(t, ok)
	assert.Equal(t, "resnet", pg.Name)
	assert.EqualValues(t, 4, pg.Spec.MinMember, "two initializers and two nodes")
	assertResources(t, corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10"),   // 1 + 1 + 2×4
		corev1.ResourceMemory: resource.MustParse("34Gi"), // 1 + 1 + 2×16
		"nvidia.com/gpu":      resource.MustParse("4"),    // 2×2
	}, pg.Spec.MinResources)
	assert.Equal(t, ptr.To[int32](120), pg.Spec.ScheduleTimeoutSeconds)
	for _, rj := range js.Spec.ReplicatedJobs {
		assert.Equal(t, "resnet", rj.Template.Spec.Template.Labels["scheduling.x-k8s.io/pod-group"], "job %s", rj.Name)
	}
}

func TestCoschedulingMinResources(t *testing.T) {
	runtime := func(pod string) string {
		return `
podGroupPolicy: {coscheduling: {}}
mlPolicy: {numNodes: 3, torch: {}}
template:
  spec:
    replicatedJobs:
    - name: node
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
        spec: {template: {spec: ` + pod + `}}`
	}
	cases := []struct {
		name string
		pod  string
		want corev1.ResourceList
	}{
		{
			name: "no requests leaves minResources out",
			pod:  "{containers: [{name: node, image: i}]}",
		},
		{
			name: "containers add up",
			pod:  "{containers: [{name: node, image: i, resources: {requests: {cpu: 500m}}}, {name: side, image: i, resources: {requests: {cpu: 250m, memory: 1Gi}}}]}",
			want: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2250m"), corev1.ResourceMemory: resource.MustParse("3Gi")},
		},
		{
			name: "a bigger init container sets the pod's request",
			pod:  "{initContainers: [{name: init, image: i, resources: {requests: {cpu: '2'}}}], containers: [{name: node, image: i, resources: {requests: {cpu: '1'}}}]}",
			want: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")},
		},
		{
			name: "limits stand in for missing requests",
			pod:  "{containers: [{name: node, image: i, resources: {limits: {nvidia.com/gpu: '1'}}}]}",
			want: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := simpleRuntime(t, runtime(tc.pod))
			if strings.Contains(tc.pod, "limits") {
				// A pod's requests default to its limits when the API server admits it.
				c := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
				c.Resources.Requests = c.Resources.Limits.DeepCopy()
			}
			_, objs, err := Build(simpleTrainJob(t, "runtimeRef: {name: rt}"), rt, false, plan.Options{})
			require.NoError(t, err)
			require.Len(t, objs, 1)
			pg := objs[0].(*schedv1alpha1.PodGroup)
			assert.EqualValues(t, 3, pg.Spec.MinMember)
			assert.Equal(t, ptr.To[int32](DefaultScheduleTimeoutSeconds), pg.Spec.ScheduleTimeoutSeconds)
			assertResources(t, tc.want, pg.Spec.MinResources)
		})
	}
}

func TestWithoutCoschedulingThereIsNoPodGroupOrLabel(t *testing.T) {
	rt := simpleRuntime(t, `
mlPolicy: {torch: {}}
template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: i}]}}}}}]}}`)
	js, objs, err := Build(simpleTrainJob(t, "runtimeRef: {name: rt}"), rt, false, plan.Options{})
	require.NoError(t, err)
	assert.Empty(t, objs)
	assert.NotContains(t, js.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels, "scheduling.x-k8s.io/pod-group")
}

func TestBuildPassesUnsupportedErrorsThrough(t *testing.T) {
	rt := simpleRuntime(t, `
mlPolicy: {mpi: {mpiImplementation: Intel}}
template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: i}]}}}}}]}}`)
	_, _, err := Build(simpleTrainJob(t, "runtimeRef: {name: rt}"), rt, false, plan.Options{})
	var unsupported *plan.UnsupportedError
	require.ErrorAs(t, err, &unsupported)
	assert.Equal(t, "spec.mlPolicy.mpi.mpiImplementation", unsupported.Field)
}

func TestVolcanoPodGroupCoversEveryPodInTheTemplatesQueue(t *testing.T) {
	runtime := `
podGroupPolicy: {volcano: {networkTopology: {mode: hard, highestTierAllowed: 2}}}
mlPolicy: {numNodes: 2, torch: {}}
template:
  metadata: {annotations: {scheduling.volcano.sh/queue-name: research}}
  spec:
    replicatedJobs:
    - name: dataset-initializer
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
        spec: {template: {spec: {priorityClassName: low, containers: [{name: dataset-initializer, image: i, resources: {requests: {cpu: '1'}}}]}}}
    - name: node
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
        spec: {template: {spec: {priorityClassName: high, containers: [{name: node, image: i, resources: {requests: {cpu: '4', nvidia.com/gpu: '1'}}}]}}}`
	cases := []struct {
		name      string
		trainJob  string
		wantQueue string
	}{
		{name: "the runtime's queue", trainJob: "runtimeRef: {name: rt}", wantQueue: "research"},
		{name: "a runtime patch's queue wins", wantQueue: "prod", trainJob: `
runtimeRef: {name: rt}
runtimePatches:
- manager: example.com/me
  trainingRuntimeSpec: {template: {metadata: {annotations: {scheduling.volcano.sh/queue-name: prod}}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js, objs, err := Build(simpleTrainJob(t, tc.trainJob), simpleRuntime(t, runtime), false, plan.Options{})
			require.NoError(t, err)
			require.Len(t, objs, 1)
			pg, ok := objs[0].(*volcanov1beta1.PodGroup)
			require.True(t, ok, "%T", objs[0])
			assert.Equal(t, "scheduling.volcano.sh/v1beta1", pg.APIVersion)
			assert.Equal(t, "tj", pg.Name)
			assert.EqualValues(t, 3, pg.Spec.MinMember, "one initializer and two nodes")
			require.NotNil(t, pg.Spec.MinResources)
			assertResources(t, corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("9"), // 1 + 2×4
				"nvidia.com/gpu":   resource.MustParse("2"),
			}, *pg.Spec.MinResources)
			assert.Equal(t, tc.wantQueue, pg.Spec.Queue)
			assert.Equal(t, "high", pg.Spec.PriorityClassName, "the last job's class, as Kubeflow Trainer")
			assert.Equal(t, &volcanov1beta1.NetworkTopologySpec{Mode: volcanov1beta1.HardNetworkTopologyMode, HighestTierAllowed: ptr.To(2)}, pg.Spec.NetworkTopology)
			for _, rj := range js.Spec.ReplicatedJobs {
				assert.Equal(t, "tj", rj.Template.Spec.Template.Annotations["scheduling.k8s.io/group-name"], "job %s", rj.Name)
				assert.NotContains(t, rj.Template.Spec.Template.Labels, "scheduling.x-k8s.io/pod-group")
			}
		})
	}
}

func TestVolcanoPodGroupWithoutQueueLeavesItToVolcano(t *testing.T) {
	rt := simpleRuntime(t, `
podGroupPolicy: {volcano: {}}
template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: [{name: node, image: i}]}}}}}]}}`)
	_, objs, err := Build(simpleTrainJob(t, "runtimeRef: {name: rt}"), rt, false, plan.Options{})
	require.NoError(t, err)
	require.Len(t, objs, 1)
	pg := objs[0].(*volcanov1beta1.PodGroup)
	assert.Empty(t, pg.Spec.Queue, "Volcano's admission puts it in its default queue")
	assert.Nil(t, pg.Spec.MinResources)
	assert.Nil(t, pg.Spec.NetworkTopology)
	assert.EqualValues(t, 1, pg.Spec.MinMember)
}

// assertResources compares resource lists by quantity, not by how each quantity is written.
func assertResources(t *testing.T, want, got corev1.ResourceList) {
	t.Helper()
	assert.Len(t, got, len(want), "got %v", got)
	for name, q := range want {
		g, ok := got[name]
		if assert.True(t, ok, "resource %s missing", name) {
			assert.Zero(t, q.Cmp(g), "resource %s: want %s, got %s", name, q.String(), g.String())
		}
	}
}
