// Package ownedobject keeps one object a scheduler backend owns — a PodGroup, a Workload — as its
// backend builds it: created when missing, repaired when the fields the backend sets drifted, in
// place or, where the API server refuses the change as invalid (immutable fields), by recreating
// it. Every scheduler backend keeps its objects this one way; what differs is which fields it
// owns (Fields).
package ownedobject

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Fields says which fields of an object of type T its backend owns.
type Fields[T client.Object] struct {
	// Same reports whether have holds want's owned fields.
	Same func(have, want T) bool
	// Set writes want's owned fields into have and keeps every other field (what the scheduler
	// itself writes on the object).
	Set func(have, want T)
	// Recreate deletes and creates the object when the API server refuses the repair as invalid
	// (immutable fields); without it that refusal is the error.
	Recreate bool
	// Verify, when set, checks the object as the API server stored it after a write against what
	// was wanted: an API server drops fields of disabled feature gates without an error.
	Verify func(stored, wanted T) error
}

// Result is what Keep did.
type Result string

const (
	// Unchanged: the object was as wanted; nothing was written.
	Unchanged Result = ""
	// Created: the object did not exist.
	Created Result = "created"
	// Repaired: owned fields had drifted and were written back in place.
	Repaired Result = "repaired"
	// Recreated: owned fields had drifted, the API server refused them back in place, and the
	// object was deleted (guarded by its UID) and created again.
	Recreated Result = "recreated"
)

// Keep makes the object named like want, controlled by owner, hold want's owned fields, reading
// into have (an empty object of want's type). An object being deleted is waited for: the error
// says so, and the caller's retry creates it once it is gone (a PodGroup still referenced by
// pods is held by its protection finalizer).
func Keep[T client.Object](ctx context.Context, c client.Client, owner client.Object, have, want T, f Fields[T]) (Result, error) {
	if err := controllerutil.SetControllerReference(owner, want, c.Scheme()); err != nil {
		return Unchanged, err
	}
	wanted := want.DeepCopyObject().(T)
	err := c.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		return wrote(ctx, Created, owner, f, c.Create(ctx, want), want, wanted)
	case err != nil:
		return Unchanged, err
	case !have.GetDeletionTimestamp().IsZero():
		return Unchanged, fmt.Errorf("%s %s is being deleted: waiting for it to go before creating it again", kind(want), want.GetName())
	case f.Same(have, wanted) && metav1.IsControlledBy(have, owner):
		return Unchanged, nil
	}
	f.Set(have, wanted)
	if err := controllerutil.SetControllerReference(owner, have, c.Scheme()); err != nil {
		return Unchanged, err
	}
	err = c.Update(ctx, have)
	if !apierrors.IsInvalid(err) || !f.Recreate {
		return wrote(ctx, Repaired, owner, f, err, have, wanted)
	}
	if err := c.Delete(ctx, have, client.Preconditions{UID: ptr.To(have.GetUID())}); client.IgnoreNotFound(err) != nil {
		return Unchanged, err
	}
	return wrote(ctx, Recreated, owner, f, c.Create(ctx, want), want, wanted)
}

// wrote is what a write did: nothing when it failed; else done, logged, with an error when the
// API server did not store what was wanted (Verify).
func wrote[T client.Object](ctx context.Context, done Result, owner client.Object, f Fields[T], writeErr error, stored, wanted T) (Result, error) {
	if writeErr != nil {
		return Unchanged, writeErr
	}
	log.FromContext(ctx).Info(kind(wanted)+" "+string(done)+": it holds what its owner wants of it", "object", klog.KObj(wanted), "owner", klog.KObj(owner))
	if f.Verify == nil {
		return done, nil
	}
	return done, f.Verify(stored, wanted)
}

// kind names an object's Go type for messages (the type meta of a typed object may be empty).
func kind(o client.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", o)
}

// HasLabels reports whether have carries every label of want with its value.
func HasLabels(have, want client.Object) bool {
	labels := have.GetLabels()
	for k, v := range want.GetLabels() {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// SetLabels writes want's labels into have and keeps have's others.
func SetLabels(have, want client.Object) {
	labels := have.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range want.GetLabels() {
		labels[k] = v
	}
	have.SetLabels(labels)
}
