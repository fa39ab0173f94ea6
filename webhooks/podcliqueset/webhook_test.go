package podcliqueset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// recordingHandler notes whether defaulting was reached.
type recordingHandler struct{ called bool }

func (h *recordingHandler) Handle(context.Context, admission.Request) admission.Response {
	h.called = true
	return admission.Allowed("defaulted")
}

func TestUndecodableObjectsPassDefaultingUnchangedForTheSchemaToReject(t *testing.T) {
	scheme := runtime.NewScheme()
	assert.NoError(t, grovev1alpha1.AddToScheme(scheme))
	cases := []struct {
		name      string
		object    string
		defaulted bool
	}{
		{"decodable object is defaulted", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"replicas":1}}`, true},
		{"replicas beyond int32", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"replicas":2147483648}}`, false},
		{"replicas as a string", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"replicas":"3"}}`, false},
		{"maxRuntime that is not a duration", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"trainingSpec":{"maxRuntime":"abc"}}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := &recordingHandler{}
			h := &SchemaDecidesUndecodable{Decoder: admission.NewDecoder(scheme), Next: next}
			resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(tc.object)},
			}})
			assert.True(t, resp.Allowed)
			assert.Empty(t, resp.Patches, "an undecodable object is never patched")
			assert.Equal(t, tc.defaulted, next.called)
		})
	}
}
