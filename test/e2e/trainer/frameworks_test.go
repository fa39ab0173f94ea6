package trainere2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

func TestJobSetPathWithCoschedulingGangsEveryPodInOnePodGroup(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	spec := runtimeSpec(trainerv1alpha1.WorkloadKindJobSet, succeedAfter2s, nil, 0,
		replicatedJob("dataset-initializer", exit{"0", "1s"}),
		replicatedJob("node", succeedAfter2s, "dataset-initializer"))
	spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{
		Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To[int32](120)},
	}}
	newRuntime(t, ns, "gang", spec)
	tj := trainJob(ns, "ganged", "gang", 3, nil, false)
	create(t, tj)
	done := waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)

	pg := &schedv1alpha1.PodGroup{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ganged"}, pg))
	assert.EqualValues(t, 4, pg.Spec.MinMember, "the initializer and three nodes")
	assert.EqualValues(t, 120, *pg.Spec.ScheduleTimeoutSeconds)
	assert.Equal(t, done.UID, metav1.GetControllerOf(pg).UID)
	cpu := pg.Spec.MinResources[corev1.ResourceCPU]
	assert.Equal(t, "400m", cpu.String(), "4 pods × 100m")
	for _, p := range pods(t, ns, map[string]string{jobsetv1alpha2.JobSetNameKey: "ganged"}) {
		assert.Equal(t, "ganged", p.Labels["scheduling.x-k8s.io/pod-group"], p.Name)
	}
}

func TestPodCliqueSetPathWithMPIGetsTheHostfileAndSSHKeyOfItsOwnPods(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	launcher := replicatedJob("launcher", exit{"0", "3s"}, "node")
	launcher.DependsOn[0].Status = jobsetv1alpha2.DependencyReady
	launcher.Template.Spec.Template.Spec.Containers[0].Name = "node"
	spec := runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, exit{"0", "3s"}, nil, 0,
		launcher, replicatedJob("node", exit{"0", "3s"}))
	spec.MLPolicy.Torch = nil
	spec.MLPolicy.MPI = &trainerv1alpha1.MPIMLPolicySource{NumProcPerNode: ptr.To[int32](2),
		MPIImplementation: ptr.To(trainerv1alpha1.MPIImplementationOpenMPI), SSHAuthMountPath: ptr.To("/root/.ssh"), RunLauncherAsNode: ptr.To(false)}
	newRuntime(t, ns, "mpi", spec)
	tj := trainJob(ns, "ds", "mpi", 2, nil, false)
	create(t, tj)
	waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)

	hostfile := &corev1.ConfigMap{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ds-mpi-hostfile"}, hostfile))
	var want []string
	for i := range 2 {
		want = append(want, fmt.Sprintf("ds-0-node-%d.ds-0 slots=2", i))
	}
	assert.Equal(t, want, strings.Split(strings.TrimSpace(hostfile.Data["hostfile"]), "\n"), "one line per node, by the PodCliqueSet's hostnames")
	secret := &corev1.Secret{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ds-mpi-ssh-auth"}, secret))
	assert.True(t, ptr.Deref(secret.Immutable, false))
	for _, p := range pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "ds"}) {
		mounts := map[string]string{}
		for _, m := range p.Spec.Containers[0].VolumeMounts {
			mounts[m.MountPath] = m.Name
		}
		assert.Contains(t, mounts, "/root/.ssh", p.Name)
	}
}
