// Package writelog records the writes a controller makes through a fake client, for tests that
// assert a pass wrote nothing (quiet at rest) or exactly what it should.
package writelog

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Log is the writes recorded so far, each as "<verb>[ <subresource>] <Go type>[ <name>]"
// ("update status *v1alpha1.PodCliqueSet inf").
type Log struct {
	mu     sync.Mutex
	writes []string
}

// Writes returns the writes recorded so far.
func (l *Log) Writes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.writes...)
}

// Reset forgets the writes recorded so far.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = nil
}

func (l *Log) note(verb string, obj any) {
	name := ""
	if o, ok := obj.(client.Object); ok {
		name = " " + o.GetName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, fmt.Sprintf("%s %T%s", verb, obj, name))
}

// Funcs are interceptor functions that record every write in l and pass it on.
func (l *Log) Funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			l.note("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			l.note("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			l.note("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			l.note("apply", obj)
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			l.note("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			l.note("update "+sub, obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			l.note("patch "+sub, obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			l.note("apply "+sub, obj)
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	}
}

// Wrap returns c recording every write in a new Log.
func Wrap(c client.WithWatch) (client.WithWatch, *Log) {
	l := &Log{}
	return interceptor.NewClient(c, l.Funcs()), l
}
