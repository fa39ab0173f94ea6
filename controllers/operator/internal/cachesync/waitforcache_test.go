package cachesync

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestWaitForCacheReturnsOnceTheCacheShowsWhatWasCreated(t *testing.T) {
	cache := fake.NewClientBuilder().WithObjects(podOf("a")).Build()
	start := time.Now()
	WaitForCache(context.Background(), cache, []client.Object{podOf("a")})
	assert.Less(t, time.Since(start), time.Second, "already visible: no wait")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	WaitForCache(ctx, cache, []client.Object{podOf("a"), podOf("b")})
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "waits while one is missing")
	assert.Less(t, time.Since(start), CacheTimeout, "and gives up with its context")
}

func podOf(owner string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: owner + "-0", Namespace: "ns"}}
}
