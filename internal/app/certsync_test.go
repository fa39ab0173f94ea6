package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestTheServingCertificateFollowsItsSecretAsItChanges(t *testing.T) {
	key := types.NamespacedName{Namespace: "grove-system", Name: "grove-webhook-cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Data: map[string][]byte{"tls.crt": []byte("crt-1"), "tls.key": []byte("key-1"), "ca.crt": []byte("ca-1")}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "unrelated"},
		Data: map[string][]byte{"tls.crt": []byte("not ours")}}
	cs := fake.NewClientset(secret, other)
	dir := filepath.Join(t.TempDir(), "certs")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- secretToFiles(cs, key, dir)(ctx) }()
	file := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		return string(data)
	}

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "crt-1", file("tls.crt"))
		assert.Equal(c, "key-1", file("tls.key"))
		assert.Equal(c, "ca-1", file("ca.crt"))
	}, 10*time.Second, 20*time.Millisecond, "the files are the Secret's")

	secret.Data["tls.crt"], secret.Data["tls.key"] = []byte("crt-2"), []byte("key-2")
	_, err := cs.CoreV1().Secrets(key.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "crt-2", file("tls.crt"))
		assert.Equal(c, "key-2", file("tls.key"))
	}, 10*time.Second, 20*time.Millisecond, "a rotated certificate reaches the files")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "it stops with its context")
	case <-time.After(10 * time.Second):
		t.Fatal("it did not stop with its context")
	}
}
