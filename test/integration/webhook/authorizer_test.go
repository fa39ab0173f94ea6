package webhookintegration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/webhooks/managedguard"
)

func managedLabels(pcs string) map[string]string {
	return map[string]string{grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue, grovev1alpha1.LabelPartOf: pcs}
}

func TestOnlyTheOperatorMayChangeManagedObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	alice, err := env.ClientFor("alice", "system:masters")
	require.NoError(t, err)
	operator, err := env.ClientFor(operatorUser, "system:masters")
	require.NoError(t, err)

	pclq := &grovev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0-router", Namespace: ns, Labels: managedLabels("inf")},
		Spec:       grovev1alpha1.PodCliqueObjectSpec{PodCliqueSpec: grovev1alpha1.PodCliqueSpec{RoleName: "router", Replicas: 1, PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
	}
	require.NoError(t, operator.Create(ctx, pclq))

	edit := func(c client.Client) error {
		got := &grovev1alpha1.PodClique{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pclq), got))
		got.Spec.Replicas++
		return c.Update(ctx, got)
	}
	err = edit(alice)
	require.Error(t, err, "an ordinary user cannot edit a managed PodClique")
	assert.Contains(t, err.Error(), "is managed by the grove-operator")
	assert.Contains(t, err.Error(), operatorUser, "the denial says who may change it")
	require.NoError(t, edit(operator), "the operator can")
	require.Error(t, alice.Delete(ctx, pclq), "nor delete it")

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0-router-0", Namespace: ns, Labels: managedLabels("inf")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	require.NoError(t, operator.Create(ctx, pod))
	require.NoError(t, alice.Delete(ctx, pod), "deleting a pod is always allowed")

	// An opted-out PodCliqueSet's objects are open to edits.
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "inf", Namespace: ns, Annotations: map[string]string{managedguard.AnnotationDisableProtection: "true"}},
		Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{{
			Name: "router", Spec: grovev1alpha1.PodCliqueSpec{RoleName: "router", Replicas: 1, PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		}}}},
	}
	require.NoError(t, env.Client.Create(ctx, pcs))
	require.Eventually(t, func() bool { return edit(alice) == nil }, 10*time.Second, 100*time.Millisecond, "allowed once the PodCliqueSet opts out")
}
