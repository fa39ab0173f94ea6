package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// trainingPCS is a Training workload of one 2-pod clique per replica whose pods exit 0 after
// exitAfter (never, when empty).
func trainingPCS(ns, name string, replicas int32, exitAfter string, spec *grovev1alpha1.TrainingSpec) *grovev1alpha1.PodCliqueSet {
	c := clique("trainer", 2)
	c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
	if exitAfter != "" {
		c.Labels = map[string]string{cluster.LabelExitCode: "0"}
		c.Annotations = map[string]string{cluster.AnnotationExitAfter: exitAfter}
	}
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{
			Replicas: replicas, WorkloadType: grovev1alpha1.WorkloadTypeTraining, TrainingSpec: spec,
			Template: grovev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{c}},
		},
	}
}

func waitPhase(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, phase grovev1alpha1.PodCliqueSetPhase, timeout time.Duration) *grovev1alpha1.PodCliqueSet {
	t.Helper()
	got := &grovev1alpha1.PodCliqueSet{}
	require.Eventually(t, func() bool {
		return k8s().Get(context.Background(), client.ObjectKeyFromObject(pcs), got) == nil && got.Status.Phase == phase
	}, timeout, 100*time.Millisecond, "%s reaches %s", pcs.Name, phase)
	return got
}

func TestTrainingWhosePodsAllExitZeroSucceedsAndKeepsItsPods(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := trainingPCS(ns, "ok", 1, "2s", nil)
	require.NoError(t, k8s().Create(context.Background(), pcs))
	got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseSucceeded, 2*time.Minute)
	require.NotNil(t, got.Status.StartTime)
	assertEvent(t, ns, "ok", "WorkloadSucceeded")
	// The clique's status says it has seen both pods succeed: the pass that wrote it would have
	// replaced them before writing. The audit log up to a mark then holds every pod write made.
	require.Eventually(t, func() bool {
		c := &grovev1alpha1.PodClique{}
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ok-0-trainer"}, c) == nil && c.Status.SucceededReplicas == 2
	}, 30*time.Second, 100*time.Millisecond, "the clique counts its succeeded pods")
	mark := cluster.Current.AuditMark(t)
	podWrites, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return byOurBinaries(ns)(ev) && ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Subresource == "" &&
			(ev.Verb == "create" || ev.Verb == "delete") && ev.ResponseStatus.Code < 300 && !ev.StageTimestamp.After(mark)
	})
	require.NoError(t, err)
	verbs := make([]string, 0, len(podWrites))
	for _, w := range podWrites {
		verbs = append(verbs, w.Verb+" "+w.ObjectRef.Name)
	}
	assert.ElementsMatch(t, []string{"create ok-0-trainer-0", "create ok-0-trainer-1"}, verbs, "succeeded pods are neither deleted nor recreated")
	pods := listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "ok"})
	require.Len(t, pods, 2, "succeeded pods are never recreated")
	for _, p := range pods {
		assert.Equal(t, corev1.PodSucceeded, p.Status.Phase)
	}
	assert.Equal(t, grovev1alpha1.PodCliqueSetPhaseSucceeded, waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseSucceeded, time.Second).Status.Phase, "terminal phases are sticky")
}

func TestTrainingFailureWithoutRestartBudgetFailsAtOnce(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := trainingPCS(ns, "nobudget", 1, "", nil)
	require.NoError(t, k8s().Create(context.Background(), pcs))
	waitRunning(t, ns, "nobudget", 2, 2*time.Minute)
	cluster.Current.FailPod(t, ns, "nobudget-0-trainer-1")
	got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseFailed, time.Minute)
	// GREP-0285: every pod is terminated before the phase is set.
	assert.Empty(t, listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "nobudget"}), "no pod is left once the phase says Failed")
	c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionFailed)
	require.NotNil(t, c)
	assert.Equal(t, grovev1alpha1.ReasonMaxRestartsExceeded, c.Reason)
	assert.Zero(t, got.Status.RestartCount)
	assertEvent(t, ns, "nobudget", "MaxRestartsExceeded")
}

func TestTrainingRestartsWithinItsBudgetThenSucceeds(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := trainingPCS(ns, "retry", 1, "4s", &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](1)})
	require.NoError(t, k8s().Create(context.Background(), pcs))
	cluster.Current.FailPod(t, ns, "retry-0-trainer-1")
	got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseSucceeded, 2*time.Minute)
	assert.Equal(t, int32(1), got.Status.RestartCount)
	assertEvent(t, ns, "retry", "ReplicaRestarting")
	assertLogged(t, ns, "retry", "training restart: replica restarted", "PodClique retry-0-trainer below minAvailable")
}

func TestTrainingPastMaxRuntimeFails(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := trainingPCS(ns, "slow", 1, "", &grovev1alpha1.TrainingSpec{MaxRuntime: &metav1.Duration{Duration: 3 * time.Second}})
	require.NoError(t, k8s().Create(context.Background(), pcs))
	got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseFailed, time.Minute)
	assert.Equal(t, grovev1alpha1.ReasonMaxRuntimeExceeded, meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionFailed).Reason)
	assertEvent(t, ns, "slow", "MaxRuntimeExceeded")
	require.Eventually(t, func() bool { return len(listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "slow"})) == 0 },
		time.Minute, 200*time.Millisecond)
}

func TestFailuresInTwoReplicasShareOneRestartBudget(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := trainingPCS(ns, "shared", 2, "", &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](1)})
	require.NoError(t, k8s().Create(context.Background(), pcs))
	waitRunning(t, ns, "shared", 4, 2*time.Minute)
	cluster.Current.FailPod(t, ns, "shared-0-trainer-0")
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(context.Background(), client.ObjectKeyFromObject(pcs), got) == nil && got.Status.RestartCount == 1
	}, time.Minute, 100*time.Millisecond)
	waitRunning(t, ns, "shared", 4, 2*time.Minute)
	cluster.Current.FailPod(t, ns, "shared-1-trainer-0")
	got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseFailed, time.Minute)
	assert.Equal(t, int32(1), got.Status.RestartCount, "the second failure finds the shared budget spent")
}
