package cachesync

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheTimeout bounds WaitForCache: past it, a reconcile goes on (an AlreadyExists on a second
// create is harmless; it only costs a request).
const CacheTimeout = 5 * time.Second

// WaitForCache returns once the cache shows every object just created, or after CacheTimeout. A
// controller that reconciles again before its cache shows what it created would create it again
// (the Cluster API MachineSet controller waits for its new Machines the same way).
func WaitForCache(ctx context.Context, cache client.Reader, created []client.Object) {
	seen := 0 // created[:seen] are in the cache: not looked up again
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, CacheTimeout, true, func(ctx context.Context) (bool, error) {
		for ; seen < len(created); seen++ {
			probe := created[seen].DeepCopyObject().(client.Object)
			if err := cache.Get(ctx, client.ObjectKeyFromObject(created[seen]), probe); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
}
