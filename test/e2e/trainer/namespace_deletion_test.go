package trainere2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	newRuntime(t, ns, "rt-js", runtimeSpec(trainerv1alpha1.WorkloadKindJobSet, neverExit, nil, 0))
	create(t, trainJob(ns, "tj-js", "rt-js", 2, nil, false))
	newRuntime(t, ns, "rt-pcs", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, neverExit, nil, 0))
	create(t, trainJob(ns, "tj-pcs", "rt-pcs", 2, nil, false))
	require.Eventually(t, func() bool {
		return len(pods(t, ns, map[string]string{"jobset.sigs.k8s.io/jobset-name": "tj-js"})) == 2 &&
			len(pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "tj-pcs"})) == 2
	}, 2*time.Minute, 250*time.Millisecond, "both TrainJobs' pods")

	namespace := &corev1.Namespace{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Name: ns}, namespace))
	require.NoError(t, k8s().Delete(ctx, namespace))
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Name: ns}, namespace))
	deleting := namespace.DeletionTimestamp.Time
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s().Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}, 3*time.Minute, 250*time.Millisecond, "the namespace goes")

	ours := map[string]bool{}
	for _, b := range []string{"trainer-controller", "grove-operator", "backend-controller"} {
		ours[cluster.ServiceAccountUser(b)] = true
	}
	refused, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ours[ev.User.Username] && ev.Verb == "create" && ev.ResponseStatus.Code == 403 &&
			!ev.StageTimestamp.Before(deleting.Add(-time.Second).Truncate(time.Second))
	})
	require.NoError(t, err)
	for _, w := range refused {
		t.Logf("refused: %s %s by %s", w.ObjectRef.Resource, w.ObjectRef.Name, w.User.Username)
	}
	assert.Empty(t, refused, "creates refused because the namespace was being deleted")
}
