package securityintegration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/certs"
	"github.com/kubegrove/grove/test/cluster"
)

// injectedCABundle waits until the rotator injected one CA into every entry of both webhook
// configurations and returns it with the Secret it came from.
func injectedCABundle(t *testing.T) ([]byte, *corev1.Secret) {
	t.Helper()
	c := cluster.Current.Client()
	secret := &corev1.Secret{}
	var bundle []byte
	require.Eventually(t, func() bool {
		if c.Get(context.Background(), client.ObjectKey{Namespace: cluster.Namespace, Name: "grove-webhook-server-cert"}, secret) != nil || len(secret.Data["ca.crt"]) == 0 {
			return false
		}
		m := &admissionregistrationv1.MutatingWebhookConfiguration{}
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if c.Get(context.Background(), client.ObjectKey{Name: "grove-mutating-webhook-configuration"}, m) != nil ||
			c.Get(context.Background(), client.ObjectKey{Name: "grove-validating-webhook-configuration"}, v) != nil {
			return false
		}
		var bundles [][]byte
		for _, h := range m.Webhooks {
			bundles = append(bundles, h.ClientConfig.CABundle)
		}
		for _, h := range v.Webhooks {
			bundles = append(bundles, h.ClientConfig.CABundle)
		}
		if len(bundles) == 0 {
			return false
		}
		for _, b := range bundles {
			if !bytes.Equal(b, secret.Data["ca.crt"]) {
				return false
			}
		}
		bundle = bundles[0]
		return true
	}, time.Minute, 200*time.Millisecond, "the rotator injects the Secret's CA into every webhook entry")
	return bundle, secret
}

func TestWebhookServesOnlyTLS12OrLaterWithTheRotatedCertificateSignedByTheInjectedCA(t *testing.T) {
	webhook := binaryNamed("grove-webhook")
	addr := fmt.Sprintf("127.0.0.1:%d", webhook.webhookPort)
	bundle, secret := injectedCABundle(t)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(bundle), "the caBundle is PEM")

	t.Run("plain HTTP never reaches admission", func(t *testing.T) {
		review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1"}}`)
		resp, err := http.Post("http://"+addr+"/validate-grove-io-v1alpha1-podcliqueset", "application/json", bytes.NewReader(review)) //nolint:gosec // the point is plain HTTP
		if err != nil {
			return // the connection was refused outright: also no admission
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.True(t, isPlainHTTPRefusal(resp.StatusCode, string(body)), "plain HTTP got %d %q", resp.StatusCode, body)
		assert.NotContains(t, string(body), "AdmissionReview")
	})

	t.Run("the served certificate is the Secret's, issued for the Service and verified by the caBundle", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: webhookServiceName, MinVersion: tls.VersionTLS12})
		require.NoError(t, err, "the API server's view: the caBundle verifies the chain for the Service's DNS name")
		leaf := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		block, _ := pem.Decode(secret.Data["tls.crt"])
		require.NotNil(t, block, "tls.crt in the Secret is PEM")
		assert.Equal(t, block.Bytes, leaf.Raw, "the webhook serves exactly the certificate the rotator keeps in the Secret")
		assert.Contains(t, leaf.DNSNames, webhookServiceName)

		// Another CA's bundle does not verify it: the caBundle is what makes the API server
		// trust this server.
		otherCA, err := certs.NewCA("some-other-ca")
		require.NoError(t, err)
		other := x509.NewCertPool()
		require.True(t, other.AppendCertsFromPEM(otherCA.CertPEM))
		_, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: other, ServerName: webhookServiceName, MinVersion: tls.VersionTLS12})
		require.Error(t, err)
	})

	versions := []struct {
		name     string
		version  uint16
		accepted bool
	}{
		{"TLS 1.0 is refused", tls.VersionTLS10, false},
		{"TLS 1.1 is refused", tls.VersionTLS11, false},
		{"TLS 1.2 is served", tls.VersionTLS12, true},
		{"TLS 1.3 is served", tls.VersionTLS13, true},
	}
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", addr, &tls.Config{
				RootCAs: roots, ServerName: webhookServiceName,
				MinVersion: v.version, MaxVersion: v.version, //nolint:gosec // offering old versions is the test
			})
			if !v.accepted {
				require.Error(t, err, "the handshake must fail")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, v.version, conn.ConnectionState().Version)
			conn.Close()
		})
	}
}
