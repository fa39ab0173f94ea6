package webhookintegration

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegrove/grove/test/apiserver"
)

// failoverProxy forwards each TCP connection to the first backend that accepts it, standing in
// for the Service in front of the webhook Deployment: a dead replica gets no traffic.
func failoverProxy(t *testing.T, backends ...int) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				for _, port := range backends {
					out, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
					if err != nil {
						continue
					}
					// When either side ends, close both, so a dead replica's connections
					// fail fast and the API server reconnects (to a live replica).
					var once sync.Once
					closeBoth := func() { once.Do(func() { in.Close(); out.Close() }) }
					go func() { defer closeBoth(); _, _ = io.Copy(out, in) }()
					_, _ = io.Copy(in, out)
					closeBoth()
					return
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestTwoWebhookReplicasKeepAdmittingWhileOneIsKilled registers a second pair of webhook
// configurations pointing at a failover proxy in front of two more replicas.
func TestTwoWebhookReplicasKeepAdmittingWhileOneIsKilled(t *testing.T) {
	dir := t.TempDir()
	a, err := startWebhook(dir, "replica-a", manualCerts())
	require.NoError(t, err)
	defer a.stop()
	b, err := startWebhook(dir, "replica-b", manualCerts())
	require.NoError(t, err)
	defer b.stop()
	proxy := failoverProxy(t, a.webhookPort, b.webhookPort)
	require.NoError(t, apiserver.RegisterWebhooks(context.Background(), env.Client, "config/webhook", "ha-", fmt.Sprintf("127.0.0.1:%d", proxy), caPEM))
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "ha-mutating-webhook-configuration"}})
		_ = env.Client.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "ha-validating-webhook-configuration"}})
	})

	ns := newNamespace(t)
	out, err := kubectlApply(t, ns, trainingPCS)
	require.NoError(t, err, out)

	a.stop()
	out, err = kubectlApply(t, ns, `apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: bad}
spec:
  template:
    cliques:
      - {name: a, spec: {roleName: a, podSpec: {nodeName: n1, containers: [{name: a, image: busybox}]}}}
`)
	require.Error(t, err, out)
	assert.Contains(t, out, "spec.template.cliques[0].spec.podSpec.nodeName", "the surviving replica still validates")
	out, err = kubectlApply(t, ns, `apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: good}
spec:
  template:
    cliques:
      - {name: a, spec: {roleName: a, podSpec: {containers: [{name: a, image: busybox}]}}}
`)
	require.NoError(t, err, out)
}
