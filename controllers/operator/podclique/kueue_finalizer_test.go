package podclique

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
)

// kueuePod is pod i of the clique "c" (owned by the incarnation with owner), held by Kueue's
// finalizer, being deleted when deleting, evicted by Kueue when evicted.
func kueuePod(i int, hash string, owner types.UID, deleting, evicted bool) *corev1.Pod {
	b := podBuilder("ns", "c", i, hash, true).Label(grovev1alpha1.LabelPodClique, "c").
		OwnerReference(metav1.OwnerReference{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: "PodClique", Name: "c", UID: owner, Controller: ptr.To(true)}).
		Finalizers(kueuegang.PodFinalizer).Phase(corev1.PodRunning)
	if deleting {
		b.DeletedAt(time.Now())
	}
	if evicted {
		b.Condition(corev1.PodCondition{Type: kueuegang.PodConditionTerminationTarget, Status: corev1.ConditionTrue})
	}
	return b.Obj()
}

// A pod being deleted keeps its name, and its namespace, until Kueue's finalizer goes: the
// operator releases it at the start of every pass, whatever else the pass meets. Only a pod Kueue
// evicted waits for the status that records the eviction (else the clique would count a breach).
func TestKueuesFinalizerOfADeletedPodIsReleasedEvenWhenThePassFails(t *testing.T) {
	cases := []struct {
		name string
		// statusFails makes the clique's status write fail; conflictOn makes the patch of that
		// pod conflict.
		statusFails bool
		conflictOn  string
		pods        func(hash string) []*corev1.Pod
		wantKept    []string
		wantErr     bool
	}{
		{
			name:        "the status write fails: the deleted pod is released, the evicted one waits",
			statusFails: true,
			pods: func(hash string) []*corev1.Pod {
				return []*corev1.Pod{kueuePod(0, hash, "u", true, false), kueuePod(1, hash, "u", true, true)}
			},
			wantKept: []string{"c-1"},
			wantErr:  true,
		},
		{
			name: "the status is written: both are released",
			pods: func(hash string) []*corev1.Pod {
				return []*corev1.Pod{kueuePod(0, hash, "u", true, false), kueuePod(1, hash, "u", true, true)}
			},
		},
		{
			name:       "one pod's patch conflicts: the other is released all the same",
			conflictOn: "c-0",
			pods: func(hash string) []*corev1.Pod {
				return []*corev1.Pod{kueuePod(0, hash, "u", true, false), kueuePod(1, hash, "u", true, false)}
			},
			wantKept: []string{"c-0"},
			wantErr:  true,
		},
		{
			name: "a pod of an earlier PodClique of the same name, being deleted",
			pods: func(hash string) []*corev1.Pod {
				return []*corev1.Pod{kueuePod(0, hash, "earlier", true, false)}
			},
		},
		{
			name: "a pod of an earlier PodClique of the same name that Kueue evicted, being deleted",
			pods: func(hash string) []*corev1.Pod {
				return []*corev1.Pod{kueuePod(0, hash, "earlier", true, true)}
			},
		},
		{
			name: "a running pod keeps the finalizer Kueue counts it by",
			pods: func(hash string) []*corev1.Pod {
				return []*corev1.Pod{kueuePod(0, hash, "u", false, false)}
			},
			wantKept: []string{"c-0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pclq := gatedClique().Obj()
			objs := []client.Object{pclq, podGangOf(time.Now(), 2, "c-0", "c-1")}
			for _, p := range tc.pods(PodTemplateHash(pclq)) {
				objs = append(objs, p)
			}
			c := fakeClient(t).WithObjects(objs...).WithStatusSubresource(pclq).WithInterceptorFuncs(interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if tc.statusFails {
						return errors.New("the API server is unavailable")
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if obj.GetName() == tc.conflictOn {
						return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("the object has been modified"))
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()

			_, err := reconcilerFor(t, c).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})

			if tc.wantErr {
				require.Error(t, err)
				assert.Equal(t, tc.conflictOn != "" && !tc.statusFails, requeue.Transient(err), "a conflict alone is looked at again without an error: %v", err)
			} else {
				require.NoError(t, err)
			}
			pods := &corev1.PodList{}
			require.NoError(t, c.List(context.Background(), pods, client.InNamespace("ns")))
			var kept []string
			for _, p := range pods.Items {
				if slices.Contains(p.Finalizers, kueuegang.PodFinalizer) {
					kept = append(kept, p.Name)
				}
			}
			assert.ElementsMatch(t, tc.wantKept, kept, "pods still held by Kueue's finalizer")
		})
	}
}

// While its namespace is deleted a clique creates nothing, and its pass ends as one at rest — it
// writes its status and releases what Kueue's finalizer holds — instead of waiting, pass after
// pass, for pods it never created (the pods of a deleted namespace then stayed on their nodes).
func TestInANamespaceBeingDeletedAPassCreatesNothingAndReleasesTheLeavingPods(t *testing.T) {
	pclq := gatedClique().Obj()
	hash := PodTemplateHash(pclq)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"test"}}}
	evicted := kueuePod(1, hash, "u", true, true) // released after the status, as at rest
	c := fakeClient(t).WithObjects(ns, pclq, podGangOf(time.Now(), 2, "c-0", "c-1"), evicted).WithStatusSubresource(pclq).Build()

	res, err := reconcilerFor(t, c).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})

	require.NoError(t, err)
	assert.Zero(t, res.RequeueAfter, "nothing is awaited: no pod was created")
	pods := &corev1.PodList{}
	require.NoError(t, c.List(context.Background(), pods, client.InNamespace("ns")))
	assert.Empty(t, pods.Items, "c-0 is not created, and c-1, released once the status is written, is gone")
	got := &grovev1alpha1.PodClique{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(pclq), got))
	assert.NotNil(t, got.Status.ObservedGeneration, "the status is written")
}

func TestAPodKueuesFinalizerHoldsPromptsItsClique(t *testing.T) {
	plain := func(deleting bool) *corev1.Pod {
		p := kueuePod(0, "h", "u", deleting, false)
		p.Finalizers = nil
		return p
	}
	ended := func(p *corev1.Pod) *corev1.Pod {
		p.Status.Phase = corev1.PodSucceeded
		return p
	}
	for _, tc := range []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"a held pod begins to be deleted", kueuePod(0, "h", "u", false, false), kueuePod(0, "h", "u", true, false), true},
		{"a held pod ends", kueuePod(0, "h", "u", false, false), ended(kueuePod(0, "h", "u", false, false)), true},
		{"a held pod that ended begins to be deleted: batched (already held)", ended(kueuePod(0, "h", "u", false, false)), ended(kueuePod(0, "h", "u", true, false)), false},
		{"a pod without the finalizer begins to be deleted: batched", plain(false), plain(true), false},
		{"a held pod already being deleted changes again: batched", kueuePod(0, "h", "u", true, false), kueuePod(0, "h", "u", true, true), false},
		{"a held pod is running on: batched", kueuePod(0, "h", "u", false, false), kueuePod(0, "h", "u", false, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podProgressed(tc.old, tc.new))
		})
	}
}
