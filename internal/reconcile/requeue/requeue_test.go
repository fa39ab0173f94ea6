package requeue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var (
	pods     = schema.GroupResource{Resource: "pods"}
	conflict = apierrors.NewConflict(pods, "p", errors.New("the object has been modified"))
	gone     = apierrors.NewNotFound(pods, "p")
	quota    = apierrors.NewForbidden(pods, "p", errors.New("exceeded quota"))
)

func TestOnlyConflictsAndObjectsGoneAreTransient(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"a conflict", conflict, true},
		{"an object gone", gone, true},
		{"a wrapped conflict", fmt.Errorf("replica 0: %w", conflict), true},
		{"conflicts and objects gone joined", errors.Join(conflict, fmt.Errorf("status: %w", gone)), true},
		{"a real error beside a conflict", errors.Join(conflict, quota), false},
		{"a real error beside an object gone, deep in a wrapped join", fmt.Errorf("PodClique p: %w", errors.Join(fmt.Errorf("replica 0: %w", errors.Join(gone, quota)))), false},
		{"conflicts deep in wrapped joins", fmt.Errorf("PodClique p: %w", errors.Join(fmt.Errorf("replica 0: %w", errors.Join(conflict, gone)))), true},
		{"a real error", quota, false},
		{"a plain error", errors.New("boom"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Transient(tc.err))
		})
	}
}

func TestATransientFailureIsARequeueWithBackOffAndARealOneStaysAnError(t *testing.T) {
	cases := []struct {
		name       string
		res        ctrl.Result
		errs       []error
		wantAfters []time.Duration
		wantErr    bool
	}{
		{"a conflict is a requeue, backing off while it repeats", ctrl.Result{}, []error{conflict, conflict, gone},
			[]time.Duration{firstDelay, 2 * firstDelay, 4 * firstDelay}, false},
		{"a sooner look asked for is kept", ctrl.Result{RequeueAfter: 10 * time.Millisecond}, []error{conflict}, []time.Duration{10 * time.Millisecond}, false},
		{"a later look asked for is brought forward", ctrl.Result{RequeueAfter: time.Hour}, []error{gone}, []time.Duration{firstDelay}, false},
		{"a success in between starts the back-off over", ctrl.Result{}, []error{conflict, nil, conflict}, []time.Duration{firstDelay, 0, firstDelay}, false},
		{"a real error stays an error", ctrl.Result{}, []error{quota}, []time.Duration{0}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pass := 0
			r := OnTransient(reconcile.Func(func(context.Context, ctrl.Request) (ctrl.Result, error) {
				err := tc.errs[pass]
				pass++
				if err == nil {
					return ctrl.Result{}, nil
				}
				return tc.res, err
			}))
			for i, want := range tc.wantAfters {
				res, err := r.Reconcile(context.Background(), ctrl.Request{})
				assert.Equal(t, tc.wantErr, err != nil, "pass %d", i)
				assert.Equal(t, want, res.RequeueAfter, "pass %d", i)
			}
		})
	}
}
