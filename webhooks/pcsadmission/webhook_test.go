package pcsadmission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

func TestUndecodableObjectsPassDefaultingUnchangedForTheSchemaToReject(t *testing.T) {
	scheme := runtime.NewScheme()
	assert.NoError(t, grovev1alpha1.AddToScheme(scheme))
	cases := []struct {
		name      string
		object    string
		defaulted bool
	}{
		{"decodable object is defaulted", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"replicas":1,"template":{"cliques":[{"name":"w","spec":{"replicas":2}}]}}}`, true},
		{"replicas beyond int32", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"replicas":2147483648}}`, false},
		{"replicas as a string", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"replicas":"3"}}`, false},
		{"maxRuntime that is not a duration", `{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"trainingSpec":{"maxRuntime":"abc"}}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := defaultingHandler(scheme, kubeOnly, nil).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(tc.object)},
				Kind: metav1.GroupVersionKind{Group: "grove.io", Version: "v1alpha1", Kind: "PodCliqueSet"},
			}})
			assert.True(t, resp.Allowed, "%+v", resp.Result)
			if tc.defaulted {
				assert.NotEmpty(t, resp.Patches, "a decodable object is defaulted")
				return
			}
			assert.Empty(t, resp.Patches, "an undecodable object is never patched")
			assert.Contains(t, resp.Result.Message, "the CRD schema decides")
		})
	}
}

// FuzzAdmissionReview sends arbitrary bytes as the object of an AdmissionReview through the
// served defaulting and validating handlers, with panic recovery off: whatever the API server
// forwards, the handlers answer without crashing, and an object they cannot decode is never
// patched.
func FuzzAdmissionReview(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"grove.io/v1alpha1","kind":"PodCliqueSet","metadata":{"name":"a"},"spec":{"template":{"cliques":[{"name":"a","spec":{"roleName":"a","replicas":1}}]}}}`), "CREATE")
	f.Add([]byte(`{"spec":{"replicas":2147483648,"trainingSpec":{"maxRuntime":"abc"}}}`), "UPDATE")
	f.Add([]byte(`{"spec":{"template":{"cliques":[null]}}}`), "CREATE")
	f.Add([]byte(`[]`), "DELETE")
	scheme := runtime.NewScheme()
	if err := grovev1alpha1.AddToScheme(scheme); err != nil {
		f.Fatal(err)
	}
	mutating := defaultingHandler(scheme, kubeOnly, nil)
	validating := admission.WithValidator(scheme, admission.Validator[*grovev1alpha1.PodCliqueSet](&Validator{Backends: kubeOnly}))
	for _, w := range []*admission.Webhook{mutating, validating} {
		w.WithRecoverPanic(false)
	}
	f.Fuzz(func(t *testing.T, object []byte, operation string) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "1", Operation: admissionv1.Operation(operation),
			Kind:   metav1.GroupVersionKind{Group: "grove.io", Version: "v1alpha1", Kind: "PodCliqueSet"},
			Object: runtime.RawExtension{Raw: object}, OldObject: runtime.RawExtension{Raw: object},
		}}
		decodable := admission.NewDecoder(scheme).DecodeRaw(req.Object, &grovev1alpha1.PodCliqueSet{}) == nil
		resp := mutating.Handle(context.Background(), req)
		if !decodable {
			assert.Empty(t, resp.Patches, "an undecodable object is never patched")
		}
		_ = validating.Handle(context.Background(), req)
	})
}
