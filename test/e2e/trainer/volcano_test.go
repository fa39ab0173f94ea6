package trainere2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// volcanoExample is Kubeflow Trainer v2.3's Volcano example: a ClusterTrainingRuntime with
// podGroupPolicy.volcano and a 4-node TrainJob of it, decoded unchanged.
func volcanoExample(t *testing.T) (*trainerv1alpha1.ClusterTrainingRuntime, *trainerv1alpha1.TrainJob) {
	t.Helper()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", "v2.3.0")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "examples", "yaml", "04-volcano-integration.yaml"))
	require.NoError(t, err)
	docs := strings.Split(string(data), "\n---\n")
	require.Len(t, docs, 2)
	ctr, tj := &trainerv1alpha1.ClusterTrainingRuntime{}, &trainerv1alpha1.TrainJob{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[0]), ctr))
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), tj))
	return ctr, tj
}

// volcanoQueue makes sure a cluster-scoped Volcano queue exists (Volcano's controller, which
// would create "default" and report states, does not run here).
func volcanoQueue(t *testing.T, name string) {
	t.Helper()
	q := &volcanov1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: volcanov1beta1.QueueSpec{Weight: 1}}
	if err := k8s().Create(context.Background(), q); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// inNamespace turns Kubeflow's ClusterTrainingRuntime into a TrainingRuntime of the test's
// namespace (cluster-scoped names would collide across tests) and points the TrainJob at it.
func inNamespace(ns string, ctr *trainerv1alpha1.ClusterTrainingRuntime, tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainingRuntime {
	rt := builders.RuntimeSpecOf(ctr.Spec).TrainingRuntime(ns, ctr.Name)
	tj.Namespace = ns
	tj.Spec.RuntimeRef.Kind = ptr.To(trainerv1alpha1.TrainingRuntimeKind)
	return rt
}

// TestKubeflowVolcanoExampleRunsOnTheJobSetPathWithKubeflowsPodGroup runs Kubeflow's Volcano
// example to Complete and checks the Volcano PodGroup and the pods' group annotation against
// what Kubeflow Trainer v2.3.0's own builder makes of the same stored objects.
func TestKubeflowVolcanoExampleRunsOnTheJobSetPathWithKubeflowsPodGroup(t *testing.T) {
	t.Parallel()
	volcanoQueue(t, "default")
	ns := cluster.Current.NewNamespace(t)
	ctr, tj := volcanoExample(t)
	rt := inNamespace(ns, ctr, tj)
	create(t, rt)
	create(t, tj)
	done := waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)

	stored := &trainerv1alpha1.TrainingRuntime{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(rt), stored))
	kubeflow := kubeflowObjects(t, done, stored)
	raw, ok := kubeflow["PodGroup"]
	require.True(t, ok, "Kubeflow builds a PodGroup")
	want := &volcanov1beta1.PodGroup{}
	require.NoError(t, json.Unmarshal(raw, want))
	require.Equal(t, "scheduling.volcano.sh/v1beta1", want.APIVersion)
	if want.Spec.Queue == "" {
		want.Spec.Queue = "default" // the CRD's default, which the API server gives Kubeflow's PodGroup too
	}

	got := &volcanov1beta1.PodGroup{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: tj.Name}, got))
	assert.True(t, equality.Semantic.DeepEqual(want.Spec, got.Spec), "Volcano PodGroup\nKubeflow: %+v\nours:     %+v", want.Spec, got.Spec)
	assert.EqualValues(t, 4, got.Spec.MinMember)
	assert.True(t, metav1.IsControlledBy(got, done), "owned by the TrainJob")

	js := &jobsetv1alpha2.JobSet{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(tj), js))
	wantJS := &jobsetv1alpha2.JobSet{}
	require.NoError(t, json.Unmarshal(kubeflow["JobSet"], wantJS))
	for i, rj := range js.Spec.ReplicatedJobs {
		assert.Equal(t, wantJS.Spec.ReplicatedJobs[i].Template.Spec.Template.Annotations, rj.Template.Spec.Template.Annotations, "pod annotations of job %s", rj.Name)
	}
	for _, pod := range pods(t, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: tj.Name}) {
		assert.Equal(t, tj.Name, pod.Annotations[volcanov1beta1.KubeGroupNameAnnotationKey], "pod %s joins the PodGroup", pod.Name)
	}
}

// TestVolcanoRuntimeOnThePodCliqueSetPathGetsOneVolcanoPodGroupPerGang runs the same example
// with workloadKind PodCliqueSet and a queue: the volcano scheduler backend keeps one Volcano
// PodGroup per PodGang in that queue, and the pods name Volcano's scheduler and that group.
// Volcano's scheduler does not run on the local cluster, so the pods stay Pending.
func TestVolcanoRuntimeOnThePodCliqueSetPathGetsOneVolcanoPodGroupPerGang(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	queue := "research-" + ns
	volcanoQueue(t, queue)
	ctr, tj := volcanoExample(t)
	rt := inNamespace(ns, ctr, tj)
	rt.Spec.WorkloadKind = trainerv1alpha1.WorkloadKindPodCliqueSet
	rt.Spec.Template.Annotations = map[string]string{volcanov1beta1.QueueNameAnnotationKey: queue}
	create(t, rt)
	create(t, tj)

	gang := fmt.Sprintf("%s-0", tj.Name)
	pg := &volcanov1beta1.PodGroup{}
	require.Eventually(t, func() bool {
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gang}, pg) == nil
	}, time.Minute, 200*time.Millisecond, "the volcano backend-controller creates the PodGang's PodGroup")
	assert.Equal(t, queue, pg.Spec.Queue)
	assert.EqualValues(t, 4, pg.Spec.MinMember, "all four nodes")
	require.Len(t, pg.Spec.SubGroupPolicy, 1)
	assert.Equal(t, fmt.Sprintf("%s-0-node", tj.Name), pg.Spec.SubGroupPolicy[0].Name)
	owner := &schedulerv1alpha1.PodGang{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gang}, owner))
	assert.True(t, metav1.IsControlledBy(pg, owner), "owned by the PodGang")
	assert.Equal(t, queue, owner.Spec.SchedulerQueueName)

	var nodes []corev1.Pod
	require.Eventually(t, func() bool {
		nodes = pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: tj.Name})
		return len(nodes) == 4
	}, time.Minute, 200*time.Millisecond)
	for _, p := range nodes {
		assert.Equal(t, "volcano", p.Spec.SchedulerName, p.Name)
		assert.Equal(t, gang, p.Annotations[volcanov1beta1.KubeGroupNameAnnotationKey], p.Name)
		assert.Equal(t, gang, p.Annotations[volcanov1beta1.VolcanoGroupNameAnnotationKey], p.Name)
		assert.Empty(t, p.Spec.NodeName, "no Volcano scheduler here: %s stays Pending", p.Name)
	}
}

func TestVolcanoTrainJobNamingAQueueThatDoesNotExistIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	ctr, tj := volcanoExample(t)
	rt := inNamespace(ns, ctr, tj)
	create(t, rt)
	tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{{Manager: "example.com/team", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
		Template: &trainerv1alpha1.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{Annotations: map[string]string{volcanov1beta1.QueueNameAnnotationKey: "ghost-" + ns}}},
	}}}

	err := k8s().Create(context.Background(), tj)

	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.runtimePatches[0].trainingRuntimeSpec.template.metadata.annotations[scheduling.volcano.sh/queue-name]")
	assert.Contains(t, err.Error(), fmt.Sprintf(`Volcano queue "ghost-%s" does not exist`, ns))
}
