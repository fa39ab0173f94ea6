package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/internal/app"
	"github.com/kubegrove/grove/webhooks/admissionmetrics"
)

// configuredPaths are the paths the webhook configurations send the API server's requests to,
// each with whether its configuration is mutating.
func configuredPaths(t *testing.T) map[string]bool {
	t.Helper()
	paths := map[string]bool{}
	for _, file := range []string{"../../config/webhook/manifests.yaml", "../../config/webhook/authorizer/manifests.yaml"} {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, doc := range strings.Split(string(data), "\n---") {
			var cfg struct {
				Kind     string `json:"kind"`
				Webhooks []struct {
					ClientConfig struct {
						Service *struct {
							Path string `json:"path"`
						} `json:"service"`
					} `json:"clientConfig"`
				} `json:"webhooks"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &cfg), file)
			for _, w := range cfg.Webhooks {
				if w.ClientConfig.Service != nil {
					paths[w.ClientConfig.Service.Path] = cfg.Kind == "MutatingWebhookConfiguration"
				}
			}
		}
	}
	return paths
}

// timedRequests sums grove_admission_duration_seconds' observations over every series: every
// metered call is timed.
func timedRequests(t *testing.T) uint64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	var total uint64
	for _, f := range families {
		if f.GetName() == "grove_admission_duration_seconds" {
			for _, m := range f.GetMetric() {
				total += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return total
}

// Every path a webhook configuration names answers through the metered handler: a request the
// API server sends to any of them is counted.
func TestEveryConfiguredWebhookIsMetered(t *testing.T) {
	scheme, err := app.Scheme(volcanov1beta1.AddToScheme)
	require.NoError(t, err)
	// Nothing is read from the API server while webhooks are registered.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, WebhookServer: webhook.NewServer(webhook.Options{}),
	})
	require.NoError(t, err)
	cfg := &configv1alpha1.OperatorConfiguration{Authorizer: configv1alpha1.AuthorizerConfiguration{Enabled: true}}
	configv1alpha1.SetDefaults(cfg)
	require.NoError(t, setup(mgr, cfg))

	paths := configuredPaths(t)
	require.Len(t, paths, 8)
	for path, mutating := range paths {
		t.Run(path, func(t *testing.T) {
			assert.Equal(t, mutating, strings.HasPrefix(path, admissionmetrics.MutatingPathPrefix),
				"admissionmetrics tells a mutating webhook by its path")
			// A pod's deletion: each handler answers it without reading the cluster (allowed, or
			// refused as undecodable), and every answer is metered.
			body, err := json.Marshal(&admissionv1.AdmissionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
				Request: &admissionv1.AdmissionRequest{UID: "uid", Operation: admissionv1.Delete, Namespace: "ns", Name: "p",
					Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}},
			})
			require.NoError(t, err)
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			before := timedRequests(t)

			mgr.GetWebhookServer().WebhookMux().ServeHTTP(rec, req)

			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			assert.Equal(t, before+1, timedRequests(t), "served through the meter")
		})
	}
}
