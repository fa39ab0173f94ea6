package trainere2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

func TestTrainJobOnJobSetCompletes(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	newRuntime(t, ns, "torch", runtimeSpec(trainerv1alpha1.WorkloadKindJobSet, succeedAfter2s, nil, 0))
	tj := trainJob(ns, "mnist", "torch", 2, nil, false)
	create(t, tj)

	js := &jobsetv1alpha2.JobSet{}
	require.Eventually(t, func() bool {
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "mnist"}, js) == nil
	}, 30*time.Second, 100*time.Millisecond)
	owner := metav1.GetControllerOf(js)
	require.NotNil(t, owner)
	assert.Equal(t, "TrainJob", owner.Kind)

	done := waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
	complete := jobSetCondition(js, t, string(jobsetv1alpha2.JobSetCompleted))
	assert.Equal(t, complete.Reason, findCondition(done, trainerv1alpha1.TrainJobComplete).Reason, "the JobSet's reason is carried over")
	require.NotEmpty(t, done.Status.JobsStatus)
	assert.Equal(t, "node", done.Status.JobsStatus[0].Name)
	assert.EqualValues(t, 1, *done.Status.JobsStatus[0].Succeeded)
	assertEvent(t, ns, "mnist", "Completed")
	assert.GreaterOrEqual(t, metricValue(t, fmt.Sprintf(`grove_trainjobs_finished_total{condition="Complete",reason=%q}`, complete.Reason)), 1.0)

	node := pods(t, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: "mnist"})
	require.Len(t, node, 2)
	for _, p := range node {
		env := builders.EnvOf(p.Spec.Containers[0])
		assert.Equal(t, "mnist-node-0-0.mnist", env["PET_MASTER_ADDR"])
		assert.Equal(t, "2", env["PET_NNODES"])
		assert.Equal(t, "fieldRef:metadata.annotations['batch.kubernetes.io/job-completion-index']", env["PET_NODE_RANK"])
	}
}

func jobSetCondition(js *jobsetv1alpha2.JobSet, t *testing.T, typ string) metav1.Condition {
	t.Helper()
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(js), js))
	for _, c := range js.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("JobSet %s has no %s condition", js.Name, typ)
	return metav1.Condition{}
}

func findCondition(tj *trainerv1alpha1.TrainJob, typ string) metav1.Condition {
	for _, c := range tj.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
