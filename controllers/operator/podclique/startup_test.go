package podclique

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/test/builders"
)

// gangReconcilerFor is a Reconciler over c whose default backend, kube-scheduler, places gangs
// whole.
func gangReconcilerFor(t *testing.T, c client.Client) *Reconciler {
	t.Helper()
	registry, err := backends.PodPreparers(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{{
		Name: configv1alpha1.SchedulerNameKube, Default: true, Config: &runtime.RawExtension{Raw: []byte(`{"gangScheduling": true}`)},
	}}})
	require.NoError(t, err)
	return &Reconciler{Client: slimPods{c}, Recorder: events.NewFakeRecorder(10), Backends: registry, StartupWaitImage: "mirror.example/busybox:1"}
}

// reconcileOnce runs one pass over the clique "ns/d" and returns its pods by name.
func reconcileOnce(t *testing.T, r *Reconciler) map[string]corev1.Pod {
	t.Helper()
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "d"}})
	require.NoError(t, err)
	pods := &corev1.PodList{}
	stored := r.Client.(slimPods).Client // the pods as written, not as the cache keeps them
	require.NoError(t, stored.List(context.Background(), pods, client.InNamespace("ns")))
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		out[p.Name] = p
	}
	return out
}

func startupWait(p corev1.Pod) *corev1.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == grovev1alpha1.StartupWaitContainer {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

func TestOnAGangBackendAPodThatStartsAfterOthersIsPlacedWithItsGangAndHeldAtStartUntilTheParentsAreUp(t *testing.T) {
	cases := []struct {
		name        string
		parentReady int32
		wantGate    string
	}{
		{"parent not up: born waiting", 0, grovev1alpha1.StartupGateWaiting},
		{"parent up (a pod recreated later): born released", 2, grovev1alpha1.StartupGateReleased},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := builders.PodClique("ns", "p").InGang("g").Replicas(2, 2).Ready(tc.parentReady).Obj()
			dependent := builders.PodClique("ns", "d").UID("u").InGang("g").Replicas(2, 2).StartsAfter("p").Obj()
			dependent.Spec.PodSpec.InitContainers = []corev1.Container{{Name: "fetch-weights", Image: "busybox"}}
			c := fakeClient(t).WithObjects(parent, dependent, podGangOf(time.Now(), 2, "d-0", "d-1")).WithStatusSubresource(dependent).Build()
			pods := reconcileOnce(t, gangReconcilerFor(t, c))
			require.Len(t, pods, 2)
			for _, p := range pods {
				assert.False(t, hasGate(&p), "%s is scheduled with its gang, not held back from it", p.Name)
				assert.Equal(t, tc.wantGate, p.Annotations[grovev1alpha1.AnnotationStartupGate], p.Name)
				wait := startupWait(p)
				require.NotNil(t, wait, "%s has the init container that holds it at start", p.Name)
				assert.Equal(t, "mirror.example/busybox:1", wait.Image, "the configured image")
				require.Len(t, p.Spec.InitContainers, 2)
				assert.Equal(t, "fetch-weights", p.Spec.InitContainers[0].Name, "the user's init containers run first")
				assert.Equal(t, grovev1alpha1.StartupWaitContainer, p.Spec.InitContainers[1].Name, "then the wait")
				require.Len(t, wait.VolumeMounts, 1)
				var gateVolume *corev1.Volume
				for i := range p.Spec.Volumes {
					if p.Spec.Volumes[i].Name == wait.VolumeMounts[0].Name {
						gateVolume = &p.Spec.Volumes[i]
					}
				}
				require.NotNil(t, gateVolume)
				require.NotNil(t, gateVolume.DownwardAPI, "the gate reaches the container through the downward API")
				assert.Equal(t, "metadata.annotations['grove.io/startup-gate']", gateVolume.DownwardAPI.Items[0].FieldRef.FieldPath)
				assert.Contains(t, wait.Command[len(wait.Command)-1], wait.VolumeMounts[0].MountPath+"/"+gateVolume.DownwardAPI.Items[0].Path,
					"the script reads the file the volume writes")
			}
		})
	}
}

func TestHeldPodsAreReleasedOnceEveryParentIsUpAndNotBefore(t *testing.T) {
	p1 := builders.PodClique("ns", "p1").InGang("g").Replicas(2, 1).Obj()
	p2 := builders.PodClique("ns", "p2").InGang("g").Replicas(1, 1).Obj()
	dependent := builders.PodClique("ns", "d").UID("u").InGang("g").Replicas(2, 2).StartsAfter("p1", "p2").Obj()
	c := fakeClient(t).WithObjects(p1, p2, dependent, podGangOf(time.Now(), 2, "d-0", "d-1")).WithStatusSubresource(dependent).Build()
	r := gangReconcilerFor(t, c)
	ctx := context.Background()
	gates := func(pods map[string]corev1.Pod) []string {
		return []string{pods["d-0"].Annotations[grovev1alpha1.AnnotationStartupGate], pods["d-1"].Annotations[grovev1alpha1.AnnotationStartupGate]}
	}
	waiting := []string{grovev1alpha1.StartupGateWaiting, grovev1alpha1.StartupGateWaiting}
	require.Equal(t, waiting, gates(reconcileOnce(t, r)), "created waiting")

	ready := func(pclq *grovev1alpha1.PodClique, n int32) {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pclq), pclq))
		pclq.Status.ReadyReplicas = n
		require.NoError(t, c.Status().Update(ctx, pclq))
	}
	ready(p1, 1) // p1 reaches its minAvailable
	assert.Equal(t, waiting, gates(reconcileOnce(t, r)), "p2 is not up yet")

	ready(p2, 1)
	released := []string{grovev1alpha1.StartupGateReleased, grovev1alpha1.StartupGateReleased}
	assert.Equal(t, released, gates(reconcileOnce(t, r)), "both parents are up")
}

func TestOnABackendThatPlacesPodsOneByOneStartupOrderKeepsPodsGatedWithoutAnInitContainer(t *testing.T) {
	parent := builders.PodClique("ns", "p").InGang("g").Replicas(1, 1).Obj()
	dependent := builders.PodClique("ns", "d").UID("u").InGang("g").Replicas(1, 1).StartsAfter("p").Obj()
	c := fakeClient(t).WithObjects(parent, dependent, podGangOf(time.Now(), 2, "d-0")).WithStatusSubresource(dependent).Build()
	pods := reconcileOnce(t, reconcilerFor(t, c))
	require.Len(t, pods, 1)
	p := pods["d-0"]
	assert.True(t, hasGate(&p), "held back from scheduling until the parent is up")
	assert.Nil(t, startupWait(p))
	assert.NotContains(t, p.Annotations, grovev1alpha1.AnnotationStartupGate)
}

func TestAPodWithoutParentsIsNeitherHeldNorGivenTheInitContainer(t *testing.T) {
	solo := builders.PodClique("ns", "d").UID("u").InGang("g").Replicas(1, 1).Obj()
	c := fakeClient(t).WithObjects(solo, podGangOf(time.Now(), 2, "d-0")).WithStatusSubresource(solo).Build()
	p := reconcileOnce(t, gangReconcilerFor(t, c))["d-0"]
	assert.False(t, hasGate(&p))
	assert.Nil(t, startupWait(p))
	assert.NotContains(t, p.Annotations, grovev1alpha1.AnnotationStartupGate)
}
