// Package requeue turns the errors that only mean "read again" into a requeue, so a reconciler
// does not log them as errors: a conflict (the object changed since the cache showed it; the
// change's own event brings the next pass) and NotFound (the object is gone, as every child is
// while its namespace or owner is deleted).
package requeue

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A pass that met only transient errors looks again, if no event comes first, after a back-off
// per object from firstDelay doubling up to maxDelay, as controller-runtime backs off errors: a
// conflict is over at the next look, and something that stays missing is not read every second.
const (
	firstDelay = 100 * time.Millisecond
	maxDelay   = 5 * time.Minute
)

// Transient reports whether err, and every error joined or wrapped in it, is a conflict or
// NotFound. Only the innermost errors are judged: a NotFound joined beside a real error deep in
// the tree leaves the whole a real error.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if s, ok := err.(apierrors.APIStatus); ok {
		reason := s.Status().Reason
		return reason == metav1.StatusReasonConflict || reason == metav1.StatusReasonNotFound
	}
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			if !Transient(inner) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		return Transient(e.Unwrap())
	}
	return false
}

// OnTransient wraps a reconciler: a pass that failed only with transient errors is requeued
// with back-off (or sooner, if it asked to be) and logged at V(1) instead of as an error. The
// back-off is the only state it keeps, and losing it loses nothing but pacing.
func OnTransient(r reconcile.Reconciler) reconcile.Reconciler {
	backoff := workqueue.NewTypedItemExponentialFailureRateLimiter[ctrl.Request](firstDelay, maxDelay)
	return reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if !Transient(err) {
			backoff.Forget(req)
			return res, err
		}
		after := backoff.When(req)
		log.FromContext(ctx).V(1).Info("requeued: an object changed or went away since it was read", "reason", err.Error(), "after", after)
		if res.RequeueAfter == 0 || res.RequeueAfter > after {
			res.RequeueAfter = after
		}
		return res, nil
	})
}
