package terminating

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubegrove/grove/test/builders"
)

func TestANamespaceBeingDeletedIsTerminatingAndOthersAreNot(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	deleting := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kubernetes"}}}
	live := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(deleting, live).Build()

	assert.True(t, Namespace(context.Background(), c, "going"))
	assert.False(t, Namespace(context.Background(), c, "live"))
	assert.False(t, Namespace(context.Background(), c, "unknown"), "not in the cache: try, and let Refused judge the answer")
}

func TestOnlyTheNamespaceTerminatingRefusalIsFinal(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("namespace is being terminated"))
	refused.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace ns is being terminated"}}
	assert.True(t, Refused(refused))
	assert.False(t, Refused(apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("RBAC"))), "a plain 403 is not")
	assert.False(t, Refused(nil))
}

func TestEventsAboutObjectsInANamespaceBeingDeletedAreDropped(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	deleting := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kubernetes"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(deleting, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "live"}}).Build()
	fakeRec := events.NewFakeRecorder(10)
	rec := Recorder(fakeRec, c)

	rec.Eventf(builders.Pod("going", "p").Obj(), nil, corev1.EventTypeWarning, "Failed", "Run", "dropped")
	rec.Eventf(builders.Pod("live", "p").Obj(), nil, corev1.EventTypeNormal, "Created", "Create", "kept")
	rec.Eventf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, nil, corev1.EventTypeNormal, "Seen", "Look", "cluster-scoped")

	require.Len(t, fakeRec.Events, 2)
	assert.Contains(t, <-fakeRec.Events, "kept")
	assert.Contains(t, <-fakeRec.Events, "cluster-scoped")
}
