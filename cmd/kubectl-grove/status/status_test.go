package status

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/render"
	"github.com/kubegrove/grove/test/golden"
)

var at = metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))

// startingCluster is the inference sample as the binaries create it (rendered by the same code),
// caught while it starts: the router runs; the base gang's leader is unschedulable, so its workers
// stay gated behind it; the scaled gang's backend has not answered yet.
func startingCluster(t *testing.T) []client.Object {
	t.Helper()
	cfg, err := configv1alpha1.Load("")
	require.NoError(t, err)
	in := &render.Input{}
	f, err := os.Open("../../../config/samples/grove_v1alpha1_podcliqueset.yaml")
	require.NoError(t, err)
	defer f.Close() //nolint:errcheck // read only
	require.NoError(t, render.Decode(in, f, "sample", "default"))
	r, err := render.New(cfg)
	require.NoError(t, err)
	wl := r.Render(in)[0]
	require.NoError(t, wl.Failed())

	pcs := wl.PodCliqueSet
	pcs.UID = "pcs-uid"
	pcs.Status.Conditions = []metav1.Condition{{Type: grovev1alpha1.ConditionPodGangsSchedulable, Status: metav1.ConditionFalse, Reason: "PodGangsPending",
		Message: "inference-0-prefill-0: not acknowledged", LastTransitionTime: at}}
	objs := []client.Object{pcs}
	fixOwners := func(o client.Object, uid types.UID) {
		refs := o.GetOwnerReferences()
		for i := range refs {
			refs[i].UID = uid
		}
		o.SetOwnerReferences(refs)
	}
	for _, g := range wl.ScalingGroups {
		g.UID = types.UID("pcsg-" + g.Name)
		fixOwners(g, pcs.UID)
		g.Status.AvailableReplicas = 0
		objs = append(objs, g)
	}
	for _, pclq := range wl.PodCliques {
		pclq.UID = types.UID("pclq-" + pclq.Name)
		if owner := metav1.GetControllerOf(pclq); owner != nil && owner.Kind == "PodCliqueScalingGroup" {
			fixOwners(pclq, types.UID("pcsg-"+owner.Name))
		} else {
			fixOwners(pclq, pcs.UID)
		}
		objs = append(objs, pclq)
		for _, pod := range wl.Pods[pclq.Name] {
			if pclq.Labels[grovev1alpha1.LabelPodGang] == "inference-0-prefill-0" {
				// Its backend never answered: past the grace, its pods are created gated.
				pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: grovev1alpha1.SchedulingGatePodGangPendingCreation}}
			}
			switch pclq.Spec.RoleName {
			case "router":
				pod.Spec.SchedulingGates = nil
				pod.Spec.NodeName = "kwok-node-0"
				pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
				pclq.Status.ReadyReplicas = 1
			case "leader":
				if pclq.Name == "inference-0-prefill-0-leader" {
					pod.Spec.SchedulingGates = nil
					pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
						Reason: "Unschedulable", Message: "0/4 nodes are available: 4 Insufficient cpu."}}}
				}
				pclq.Status.ScheduleGatedReplicas = int32(len(pod.Spec.SchedulingGates))
			default:
				pclq.Status.ScheduleGatedReplicas = pclq.Spec.Replicas
			}
			objs = append(objs, pod)
		}
	}
	for _, pg := range wl.PodGangs {
		pg.Generation = 1
		if pg.Name == "inference-0" {
			pg.Status.Phase = schedulerv1alpha1.PodGangPhasePending
			pg.Status.Conditions = []metav1.Condition{{Type: schedulerv1alpha1.ConditionSchedulerBackendReady, Status: metav1.ConditionTrue,
				Reason: "PodsScheduledIndividually", ObservedGeneration: 1, LastTransitionTime: at},
				{Type: schedulerv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, ObservedGeneration: 1, LastTransitionTime: at,
					Message: "inference-0-prefill-0-worker has fewer than 2 pods placed; pod inference-0-prefill-0-worker-0: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}
		}
		objs = append(objs, pg)
	}
	return objs
}

func fakeCluster(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(render.Scheme()).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

func TestStatusOfAStartingWorkloadSaysWhatEachWaitingPodWaitsFor(t *testing.T) {
	c := fakeCluster(t, interceptor.Funcs{}, startingCluster(t)...)
	v, err := ReadPodCliqueSet(context.Background(), c, client.ObjectKey{Namespace: "default", Name: "inference"})
	require.NoError(t, err)
	var out bytes.Buffer
	PrintPodCliqueSet(&out, v)
	golden.Check(t, "status-starting.txt", out.Bytes())
	for _, want := range []string{
		"unschedulable by default-scheduler: 0/4 nodes are available: 4 Insufficient cpu.",
		"gated: starts after inference-0-prefill-0-leader (0/1 ready)",
		`gated: PodGang inference-0-prefill-0 not acknowledged: no backend-controller for "kube-scheduler" has answered`,
	} {
		assert.Contains(t, out.String(), want)
	}
}

func TestWhyFollowsAGatedPodToTheParentThatHoldsItAndOnToTheScheduler(t *testing.T) {
	c := fakeCluster(t, interceptor.Funcs{}, startingCluster(t)...)
	var out bytes.Buffer
	require.NoError(t, Why(context.Background(), c, &out, client.ObjectKey{Namespace: "default", Name: "inference-0-prefill-0-worker-1"}))
	golden.Check(t, "why-worker.txt", out.Bytes())
	assert.Contains(t, out.String(), "held: gated: starts after inference-0-prefill-0-leader (0/1 ready)")
	assert.Contains(t, out.String(), "pod inference-0-prefill-0-leader-0: Pending, not ready, 0 restarts — unschedulable by default-scheduler")
}

func TestErrorsNameWhatToDo(t *testing.T) {
	key := client.ObjectKey{Namespace: "team-a", Name: "inference"}
	noCRD := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "grove.io", Kind: "PodCliqueSet"}, SearchedVersions: []string{"v1alpha1"}}
	}}
	forbidden := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "grove.io", Resource: "podcliquesets"}, k.Name, errors.New("RBAC: access denied"))
	}}
	cases := []struct {
		name  string
		funcs interceptor.Funcs
		want  string
	}{
		{"no such PodCliqueSet", interceptor.Funcs{}, "PodCliqueSet team-a/inference does not exist"},
		{"the CRD is not installed", noCRD, "this cluster does not serve PodCliqueSets"},
		{"the read is forbidden", forbidden, "you may not list or get PodCliqueSets in namespace team-a: ask for read access to it (RBAC)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadPodCliqueSet(context.Background(), fakeCluster(t, tc.funcs), key)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTrainJobStatusShowsItsJobSetAndWhyItsPodsWait(t *testing.T) {
	tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "tj-uid"}}
	tj.Status.Conditions = []metav1.Condition{{Type: trainerv1alpha1.TrainJobRunning, Status: metav1.ConditionTrue, Reason: "JobSetCreated", Message: "JobSet job runs the job", LastTransitionTime: at}}
	controlled := []metav1.OwnerReference{{APIVersion: trainerv1alpha1.GroupVersion.String(), Kind: "TrainJob", Name: "job", UID: "tj-uid", Controller: ptr.To(true)}}
	js := &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", OwnerReferences: controlled}}
	js.Status.ReplicatedJobsStatus = []jobsetv1alpha2.ReplicatedJobStatus{{Name: "node", Active: 1}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-node-0-0-abcde", Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: "job"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}}}
	pod.Spec.SchedulerName = "scheduler-plugins-scheduler"
	c := fakeCluster(t, interceptor.Funcs{}, tj, js, pod)
	v, err := ReadTrainJob(context.Background(), c, client.ObjectKey{Namespace: "ns", Name: "job"})
	require.NoError(t, err)
	var out bytes.Buffer
	PrintTrainJob(&out, v)
	assert.Equal(t, `TrainJob ns/job: Running
├── Running=True (JobSetCreated): JobSet job runs the job
└── JobSet job: suspended false
    ├── replicatedJob node: 0 ready, 1 active, 0 succeeded, 0 failed
    └── pod job-node-0-0-abcde: Pending, not ready, 0 restarts — unschedulable by scheduler-plugins-scheduler: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.
`, out.String())
}
