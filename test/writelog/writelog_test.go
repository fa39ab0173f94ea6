package writelog

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestEveryWriteIsRecordedAndReadsAreNot(t *testing.T) {
	ctx := context.Background()
	c, log := Wrap(fake.NewClientBuilder().WithStatusSubresource(&corev1.Pod{}).Build())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}

	require.NoError(t, c.Create(ctx, pod))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pod), pod))
	pod.Status.Phase = corev1.PodRunning
	require.NoError(t, c.Status().Update(ctx, pod))
	require.NoError(t, c.Delete(ctx, pod))

	assert.Equal(t, []string{"create *v1.Pod p", "update status *v1.Pod p", "delete *v1.Pod p"}, log.Writes())
	log.Reset()
	assert.Empty(t, log.Writes())
}
