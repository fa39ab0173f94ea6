package plan

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// runtimeYAML decodes a runtime spec written as YAML, the way runtimes are written.
func runtimeYAML(t *testing.T, spec string) *Runtime {
	t.Helper()
	rt := &Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: "rt"}
	require.NoError(t, yaml.UnmarshalStrict([]byte(spec), &rt.Spec))
	return rt
}

// trainJobYAML decodes a TrainJob spec written as YAML into TrainJob ns/tj.
func trainJobYAML(t *testing.T, spec string) *trainerv1alpha1.TrainJob {
	t.Helper()
	tj := &trainerv1alpha1.TrainJob{}
	tj.Name, tj.Namespace = "tj", "ns"
	require.NoError(t, yaml.UnmarshalStrict([]byte(spec), &tj.Spec))
	return tj
}

// testNetwork addresses pod i of job j as j-i.net and ranks nodes by the field "rank".
var testNetwork = Network{
	Hostname:      func(job string, index int) string { return fmt.Sprintf("%s-%d", job, index) },
	Subdomain:     "net",
	RankFieldPath: "rank",
}

func newPlan(t *testing.T, tj *trainerv1alpha1.TrainJob, rt *Runtime) *Plan {
	t.Helper()
	p, err := NewPlan(tj, rt)
	require.NoError(t, err)
	return p
}

func jobOf(t *testing.T, p *Plan, name string) *jobsetv1alpha2.ReplicatedJob {
	t.Helper()
	rj := replicatedJob(&p.Template.Spec, name)
	require.NotNil(t, rj, "replicated job %s", name)
	return rj
}

func containerOf(t *testing.T, p *Plan, job, name string) *corev1.Container {
	t.Helper()
	c := containerOrInit(&jobOf(t, p, job).Template.Spec.Template.Spec, name)
	require.NotNil(t, c, "container %s of job %s", name, job)
	return c
}

func envNames(c *corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}

// A torch runtime with both initializers and a trainer node that asks for 2 CPUs.
const torchRuntime = `
mlPolicy:
  numNodes: 2
  torch: {}
template:
  metadata:
    labels: {team: a}
    annotations: {note: runtime}
  spec:
    replicatedJobs:
    - name: dataset-initializer
      template:
        metadata:
          labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}
        spec:
          template:
            spec:
              containers:
              - name: dataset-initializer
                image: dataset:1
                env:
                - {name: STORAGE_URI, value: hf://runtime/dataset}
                - {name: KEEP, value: "yes"}
    - name: model-initializer
      template:
        metadata:
          labels: {trainer.kubeflow.org/trainjob-ancestor-step: model-initializer}
        spec:
          template:
            spec:
              containers:
              - name: model-initializer
                image: model:1
    - name: node
      dependsOn: [{name: dataset-initializer, status: Complete}]
      template:
        metadata:
          labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
        spec:
          template:
            spec:
              containers:
              - name: node
                image: trainer:1
                command: [torchrun]
                args: [train.py]
                env:
                - {name: RUNTIME_ENV, value: runtime}
                - {name: SHARED, value: runtime}
                resources:
                  requests: {cpu: "2", memory: 4Gi}
                  limits: {memory: 8Gi}
              - name: sidecar
                image: sidecar:1
`

// A DeepSpeed-style MPI runtime: an sshd node job and a launcher that is also a node.
const mpiRuntime = `
mlPolicy:
  numNodes: 1
  mpi:
    numProcPerNode: 1
    mpiImplementation: OpenMPI
    sshAuthMountPath: /home/mpiuser/.ssh
    runLauncherAsNode: true
template:
  spec:
    replicatedJobs:
    - name: node
      template:
        spec:
          template:
            spec:
              containers:
              - name: node
                image: mpi:1
                command: [/usr/sbin/sshd]
    - name: launcher
      dependsOn: [{name: node, status: Ready}]
      template:
        metadata:
          labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
        spec:
          template:
            spec:
              containers:
              - name: node
                image: mpi:1
`

// oneJob is a runtime template with one trainer job "node" whose "node" container asks for
// resources.
const oneJob = `
template:
  spec:
    replicatedJobs:
    - name: node
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
        spec:
          template:
            spec:
              containers:
              - name: node
                image: img
                args: [--from-runtime]
                resources: {limits: {nvidia.com/gpu: 2}}
`

const jaxRuntime = "mlPolicy: {numNodes: 1, jax: {}}" + oneJob
const xgboostRuntime = "mlPolicy: {numNodes: 1, xgboost: {}}" + oneJob
const fluxRuntime = "mlPolicy: {numNodes: 1, flux: {numProcPerNode: 2}}" + oneJob
const plainRuntime = "mlPolicy: {numNodes: 1}" + oneJob
