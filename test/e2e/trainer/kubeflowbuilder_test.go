package trainere2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
)

// kubeflowRuntimeCase is one runtime Kubeflow Trainer v2.3 ships, the workload paths it runs on
// here, what it expects of the namespace and the trainer its TrainJob asks for.
type kubeflowRuntimeCase struct {
	file    string
	kinds   []trainerv1alpha1.WorkloadKind
	prepare func(t *testing.T, ns string)
	trainer *trainerv1alpha1.Trainer
}

var bothPaths = []trainerv1alpha1.WorkloadKind{trainerv1alpha1.WorkloadKindJobSet, trainerv1alpha1.WorkloadKindPodCliqueSet}

// jobSetOnly: volume claim templates and containers reading JobSet labels are refused on the
// PodCliqueSet path (docs/trainjob.md).
var jobSetOnly = []trainerv1alpha1.WorkloadKind{trainerv1alpha1.WorkloadKindJobSet}

// torchTune is the TrainJob trainer of Kubeflow's torchtune runtimes: the recipe the runtime
// names, on one node.
var torchTune = &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](1), Command: []string{"tune", "run"}}

// kubeflowRuntimes are every runtime of Kubeflow Trainer v2.3's manifests/base/runtimes —
// torch, DeepSpeed and MLX (MPI), JAX, XGBoost, the three torchtune recipes and torch with the
// data cache — and the Flux example runtime (examples/flux).
var kubeflowRuntimes = []kubeflowRuntimeCase{
	{file: "manifests/base/runtimes/torch_distributed.yaml", kinds: bothPaths},
	{file: "manifests/base/runtimes/deepspeed_distributed.yaml", kinds: bothPaths},
	{file: "manifests/base/runtimes/mlx_distributed.yaml", kinds: bothPaths},
	{file: "manifests/base/runtimes/jax_distributed.yaml", kinds: bothPaths},
	{file: "manifests/base/runtimes/xgboost_distributed.yaml", kinds: bothPaths},
	{file: "examples/flux/flux-runtime.yaml", kinds: bothPaths},
	{file: "manifests/base/runtimes/torchtune/llama3_2/llama3_2_1B.yaml", kinds: jobSetOnly, prepare: volumeFor("20Gi"), trainer: torchTune},
	{file: "manifests/base/runtimes/torchtune/llama3_2/llama3_2_3B.yaml", kinds: jobSetOnly, prepare: volumeFor("20Gi"), trainer: torchTune},
	{file: "manifests/base/runtimes/torchtune/qwen2_5/qwen2_5_1.5B.yaml", kinds: jobSetOnly, prepare: volumeFor("20Gi"), trainer: torchTune},
	{file: "manifests/base/runtimes/data-cache/torch_distributed_with_cache.yaml", kinds: jobSetOnly, prepare: serviceAccount("kubeflow-trainer-cache-initializer")},
}

// volumeFor makes a PersistentVolume of that size the runtime's volume claim template binds to
// (the local cluster has no provisioner: kube-controller-manager binds claims to existing volumes).
func volumeFor(size string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns}},
			},
		}
		create(t, pv)
		t.Cleanup(func() { _ = k8s().Delete(context.Background(), pv) })
	}
}

// serviceAccount makes the service account the runtime's pods run as.
func serviceAccount(name string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	}
}

// kubeflowObjects runs Kubeflow Trainer v2.3.0's own runtime framework (the kubeflow-render
// tool, built from its pinned module) on a TrainJob and its runtime as the API server stores
// them, and returns the objects it builds, by kind. Its TrainJobStatus gate is on, with the status
// server behind the trainer-controller's Service name and port and with its CA, as deployed here.
func kubeflowObjects(t *testing.T, tj *trainerv1alpha1.TrainJob, rt *trainerv1alpha1.TrainingRuntime) map[string]json.RawMessage {
	t.Helper()
	bin, err := toolpath.Bin("kubeflow-render")
	require.NoError(t, err)
	tj, rt = tj.DeepCopy(), rt.DeepCopy()
	tj.TypeMeta = metav1.TypeMeta{APIVersion: trainerv1alpha1.GroupVersion.String(), Kind: trainerv1alpha1.TrainJobKind}
	rt.TypeMeta = metav1.TypeMeta{APIVersion: trainerv1alpha1.GroupVersion.String(), Kind: trainerv1alpha1.TrainingRuntimeKind}
	var in bytes.Buffer
	for _, obj := range []any{rt, tj} {
		data, err := json.Marshal(obj)
		require.NoError(t, err)
		in.Write(data)
		in.WriteByte('\n')
	}
	_, port, err := net.SplitHostPort(trainer.TrainerStatusHostPort)
	require.NoError(t, err)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, cluster.Current.CAPEM(), 0o600))
	cmd := exec.Command(bin, "--status-service", "trainer-controller-status", "--status-port", port, "--status-ca", caFile)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubeflow-render: %s", stderr.String())
	var objs []json.RawMessage
	require.NoError(t, json.Unmarshal(out, &objs))
	byKind := map[string]json.RawMessage{}
	for _, raw := range objs {
		var obj metav1.PartialObjectMetadata
		require.NoError(t, json.Unmarshal(raw, &obj))
		byKind[obj.Kind] = raw
		byKind[obj.Kind+"/"+obj.Name] = raw
	}
	return byKind
}

// kubeflowBuild is the JobSet Kubeflow Trainer v2.3.0 builds for a TrainJob (kubeflowObjects).
func kubeflowBuild(t *testing.T, tj *trainerv1alpha1.TrainJob, rt *trainerv1alpha1.TrainingRuntime) *jobsetv1alpha2.JobSet {
	t.Helper()
	raw, ok := kubeflowObjects(t, tj, rt)["JobSet"]
	require.True(t, ok, "Kubeflow built no JobSet")
	js := &jobsetv1alpha2.JobSet{}
	require.NoError(t, json.Unmarshal(raw, js))
	return js
}

// podContract is what a container sees of its TrainJob: env (valueFrom as its field path),
// command, args and where each volume is mounted.
func podContract(c corev1.Container, translate func(string) string) map[string]string {
	out := map[string]string{
		"command": translate(strings.Join(c.Command, " ")),
		"args":    translate(strings.Join(c.Args, " ")),
	}
	for k, v := range builders.EnvOf(c) {
		out["env "+k] = translate(v)
	}
	for _, m := range c.VolumeMounts {
		out["mount "+m.Name+" "+m.MountPath] = fmt.Sprintf("readOnly=%t subPath=%s", m.ReadOnly, m.SubPath)
	}
	return out
}

// inOurNamespace is Kubeflow's status server URL with the trainer-controller's namespace for
// Kubeflow's own (kubeflow-system, where kubeflow-render does not run in a cluster): the one part
// of the contract that is where the server runs, not what it is.
var inOurNamespace = strings.NewReplacer(".kubeflow-system.svc:", "."+cluster.Namespace+".svc:").Replace

// TestKubeflowRuntimesGiveEveryPodWhatKubeflowsOwnBuilderGives runs a TrainJob of each runtime
// Kubeflow ships on each workload path it runs on to Complete, and checks every pod's env, command and
// args against the JobSet Kubeflow Trainer v2.3.0's framework builds for the same TrainJob. On
// the PodCliqueSet path the contract is the same with the pods' own addresses: Kubeflow's
// `<trainjob>-<job>-0-<i>.<trainjob>` is `<trainjob>-0-<job>-<i>.<trainjob>-0` (the PodClique's
// pod behind the PodCliqueSet's headless Service) and the rank comes from the pod index label.
func TestKubeflowRuntimesGiveEveryPodWhatKubeflowsOwnBuilderGives(t *testing.T) {
	t.Parallel()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", "v2.3.0")
	require.NoError(t, err)
	for _, tc := range kubeflowRuntimes {
		for _, kind := range tc.kinds {
			t.Run(filepath.Base(tc.file)+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				data, err := os.ReadFile(filepath.Join(dir, tc.file))
				require.NoError(t, err)
				ctr := &trainerv1alpha1.ClusterTrainingRuntime{}
				require.NoError(t, yaml.UnmarshalStrict(data, ctr), "Kubeflow's runtime decodes unchanged")

				ns := cluster.Current.NewNamespace(t)
				if tc.prepare != nil {
					tc.prepare(t, ns)
				}
				b := builders.RuntimeSpecOf(ctr.Spec).WorkloadKind(kind)
				if kind == trainerv1alpha1.WorkloadKindPodCliqueSet {
					// Only Job pods complete by themselves on kwok.
					b.PodLabel(cluster.LabelExitCode, "0")
				}
				rt := b.TrainingRuntime(ns, ctr.Name)
				create(t, rt)
				tj := &trainerv1alpha1.TrainJob{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kf"},
					Spec: trainerv1alpha1.TrainJobSpec{
						RuntimeRef: trainerv1alpha1.RuntimeRef{Name: rt.Name, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
						Trainer: &trainerv1alpha1.Trainer{
							NumNodes: ptr.To[int32](2),
							Command:  []string{"python", "train.py"},
							Env:      []corev1.EnvVar{{Name: "EPOCHS", Value: "3"}},
						},
					},
				}
				if tc.trainer != nil {
					tj.Spec.Trainer = tc.trainer.DeepCopy()
				}
				create(t, tj)
				done := waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
				stored := &trainerv1alpha1.TrainingRuntime{}
				require.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(rt), stored))
				want := kubeflowBuild(t, done, stored)

				selector, jobOf := map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}, func(p corev1.Pod) string {
					return p.Labels[jobsetv1alpha2.ReplicatedJobNameKey]
				}
				translate, ignored := inOurNamespace, map[string]bool{"env JOB_COMPLETION_INDEX": true}
				if kind == trainerv1alpha1.WorkloadKindPodCliqueSet {
					selector, jobOf = map[string]string{grovev1alpha1.LabelPartOf: tj.Name}, func(p corev1.Pod) string {
						return strings.TrimPrefix(p.Labels[grovev1alpha1.LabelPodClique], tj.Name+"-0-")
					}
					pcs := pcsAddresses(tj.Name, want)
					translate = func(s string) string { return inOurNamespace(pcs(s)) }
					ignored = map[string]bool{}
					for _, name := range []string{grovev1alpha1.EnvPCSName, grovev1alpha1.EnvPCSIndex, grovev1alpha1.EnvPCLQName,
						grovev1alpha1.EnvHeadlessService, grovev1alpha1.EnvPCLQPodIndex} {
						ignored["env "+name] = true
					}
				}

				podsPerJob := map[string]int{}
				for _, pod := range pods(t, ns, selector) {
					job := jobOf(pod)
					podsPerJob[job]++
					var template *corev1.PodSpec
					for _, rj := range want.Spec.ReplicatedJobs {
						if rj.Name == job {
							template = &rj.Template.Spec.Template.Spec
						}
					}
					require.NotNil(t, template, "pod %s belongs to job %q, which Kubeflow does not build", pod.Name, job)
					assert.Equal(t, projectedVolume(*template, plan.StatusTokenVolume), projectedVolume(pod.Spec, plan.StatusTokenVolume),
						"pod %s: the status server's token and CA volume", pod.Name)
					kubeflow := map[string]corev1.Container{}
					for _, c := range append(template.InitContainers, template.Containers...) {
						kubeflow[c.Name] = c
					}
					ours := append(pod.Spec.InitContainers, pod.Spec.Containers...)
					assert.Len(t, ours, len(kubeflow), "pod %s: containers", pod.Name)
					for _, c := range ours {
						kc, ok := kubeflow[c.Name]
						if !assert.True(t, ok, "pod %s: container %s is not Kubeflow's", pod.Name, c.Name) {
							continue
						}
						got := podContract(c, func(s string) string { return s })
						for k := range ignored {
							delete(got, k)
						}
						assert.Equal(t, podContract(kc, translate), got, "pod %s container %s", pod.Name, c.Name)
					}
				}
				for _, rj := range want.Spec.ReplicatedJobs {
					assert.Equal(t, int(max(rj.Replicas, 1)*ptr.Deref(rj.Template.Spec.Parallelism, 1)), podsPerJob[rj.Name], "pods of job %s", rj.Name)
				}
				raw, ok := kubeflowObjects(t, done, stored)["ConfigMap/"+plan.StatusConfigMapName(tj.Name)]
				require.True(t, ok, "Kubeflow builds the status server's CA ConfigMap")
				kubeflowCM, ours := &corev1.ConfigMap{}, &corev1.ConfigMap{}
				require.NoError(t, json.Unmarshal(raw, kubeflowCM))
				require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: kubeflowCM.Name}, ours))
				assert.Equal(t, kubeflowCM.Data, ours.Data, "the CA ConfigMap")
			})
		}
	}
}

// projectedVolume is the projected sources of the pod's volume called name, nil without one.
func projectedVolume(pod corev1.PodSpec, name string) []corev1.VolumeProjection {
	for _, v := range pod.Volumes {
		if v.Name == name && v.Projected != nil {
			return v.Projected.Sources
		}
	}
	return nil
}

// pcsAddresses maps the JobSet path's pod addresses and rank field in Kubeflow's JobSet to the
// PodCliqueSet path's.
func pcsAddresses(trainJob string, js *jobsetv1alpha2.JobSet) func(string) string {
	var pairs []string
	for _, rj := range js.Spec.ReplicatedJobs {
		for i := range int(ptr.Deref(rj.Template.Spec.Parallelism, 1)) {
			pairs = append(pairs,
				fmt.Sprintf("%s-%s-0-%d.%s", trainJob, rj.Name, i, trainJob),
				fmt.Sprintf("%s-0-%s-%d.%s-0", trainJob, rj.Name, i, trainJob))
		}
	}
	pairs = append(pairs,
		"metadata.annotations['batch.kubernetes.io/job-completion-index']",
		fmt.Sprintf("metadata.labels['%s']", grovev1alpha1.LabelPodIndex))
	return strings.NewReplacer(pairs...).Replace
}
