package trainere2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestDeletingATrainJobsNamespaceDrawsNoRefusedCreate deletes the namespace of running TrainJobs on
// both paths: no binary's create is refused as the namespace goes (the namespace controller
// removes TrainJobs, workloads and pods in its own order; a controller recreating what it
// removed would be refused once per object and pass).
func TestDeletingATrainJobsNamespaceDrawsNoRefusedCreate(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	newRuntime(t, ns, "rt-js", runtimeSpec(trainerv1alpha1.WorkloadKindJobSet, neverExit, nil, 0))
	create(t, trainJob(ns, "tj-js", "rt-js", 2, nil, false))
	newRuntime(t, ns, "rt-pcs", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, neverExit, nil, 0))
	create(t, trainJob(ns, "tj-pcs", "rt-pcs", 2, nil, false))
	require.Eventually(t, func() bool {
		return len(pods(t, ns, map[string]string{"jobset.sigs.k8s.io/jobset-name": "tj-js"})) == 2 &&
			len(pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "tj-pcs"})) == 2
	}, 2*time.Minute, 250*time.Millisecond, "both TrainJobs' pods")

	var users []string
	for _, b := range []string{"trainer-controller", "grove-operator", "backend-controller"} {
		users = append(users, cluster.ServiceAccountUser(b))
	}
	_, refused := cluster.Current.DeleteNamespace(t, ns, users...)
	assert.Empty(t, refused, "creates refused because the namespace was being deleted")
}
