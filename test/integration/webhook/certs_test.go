package webhookintegration

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
)

// TestAutoModeRotatesOneSecretSharedByEveryReplica runs two replicas in auto mode: they generate
// one self-signed certificate in one Secret, both serve it, and the CA lands in the webhook
// configurations. The configurations select no object, so this test intercepts nothing.
func TestAutoModeRotatesOneSecretSharedByEveryReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "grove-system"}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), err)
	require.NoError(t, apiserver.RegisterWebhooks(ctx, env.Client, "config/webhook", "grove-", "127.0.0.1:1", nil, func(hook map[string]any) {
		hook["objectSelector"] = map[string]any{"matchLabels": map[string]any{"grove.test/never": "matches"}}
	}))

	// As deployed: an empty Secret the rotator fills (cert-controller updates, never creates, it).
	err = env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "grove-system", Name: "grove-webhook-server-cert"}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), err)
	auto := "certManagement: {mode: auto, namespace: grove-system, secretName: grove-webhook-server-cert, serviceName: grove-webhook}"
	dir := t.TempDir()
	var replicas []*webhookProcess
	for _, name := range []string{"auto-a", "auto-b"} {
		w, err := startWebhook(dir, name, auto)
		require.NoError(t, err, "a replica reports ready only once it serves the certificate")
		defer w.stop()
		replicas = append(replicas, w)
	}

	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "grove-system", Name: "grove-webhook-server-cert"}, secret))
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt"} {
		assert.NotEmpty(t, secret.Data[key], key)
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	require.NotNil(t, block)
	for _, w := range replicas {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", w.webhookPort), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // comparing the served certificate
		require.NoError(t, err)
		served := conn.ConnectionState().PeerCertificates[0].Raw
		conn.Close()
		assert.Equal(t, block.Bytes, served, "every replica serves the Secret's certificate")
	}
	assert.Eventually(t, func() bool {
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if env.Client.Get(ctx, client.ObjectKey{Name: "grove-mutating-webhook-configuration"}, m) != nil ||
			env.Client.Get(ctx, client.ObjectKey{Name: "grove-validating-webhook-configuration"}, v) != nil {
			return false
		}
		for _, h := range m.Webhooks {
			if string(h.ClientConfig.CABundle) != string(secret.Data["ca.crt"]) {
				return false
			}
		}
		for _, h := range v.Webhooks {
			if string(h.ClientConfig.CABundle) != string(secret.Data["ca.crt"]) {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "the CA bundle is injected into both configurations")
}
