// Package terminating keeps controllers from creating children the API server would refuse:
// while a namespace is deleted, every create in it is answered 403 (NamespaceTerminating), and a
// controller that recreates the children the namespace controller removes sends one refused
// create per child and pass. The ReplicaSet controller stops at the first such answer; this
// package also tells beforehand, from a metadata-only informer of namespaces.
package terminating

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace reports whether namespace ns is being deleted, as the reader (the manager's cache: a
// metadata-only informer of namespaces) last saw it. A failed read, or a namespace the cache does
// not hold, says no: the create is tried, and Refused catches the API server's answer.
func Namespace(ctx context.Context, r client.Reader, ns string) bool {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
	if err := r.Get(ctx, client.ObjectKey{Name: ns}, m); err != nil {
		return false
	}
	return !m.DeletionTimestamp.IsZero()
}

// Refused reports whether err is the API server refusing a create because the namespace is being
// deleted: final for this namespace, never worth a retry or a warning event (which would be
// refused too).
func Refused(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// Recorder wraps an event recorder so that events about objects in a namespace being deleted are
// dropped: the API server would refuse each (a create), and the recorder would log every refusal
// as an error. Reads go to r, the manager's cache.
func Recorder(rec events.EventRecorder, r client.Reader) events.EventRecorder {
	return recorder{rec: rec, r: r}
}

type recorder struct {
	rec events.EventRecorder
	r   client.Reader
}

func (e recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	if m, ok := regarding.(metav1.Object); ok && m.GetNamespace() != "" && Namespace(context.Background(), e.r, m.GetNamespace()) {
		return
	}
	e.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
