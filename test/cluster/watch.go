package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListAndWatch lists list's kind in namespace ns into list and returns a watch of every change
// after that list. The API server may end a watch at any time (under load its watch cache drops
// slow or stale watchers); the returned watch resumes from the last event it delivered, so a
// test that records a history from it sees no gaps. Only a history compacted away (410) ends it,
// with a watch.Error event the caller must treat as a failure.
func ListAndWatch(ctx context.Context, c client.WithWatch, list client.ObjectList, ns string) (watch.Interface, error) {
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list before watching: %w", err)
	}
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns), &client.ListOptions{Raw: &opts})
	}}
	return watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), lw)
}
