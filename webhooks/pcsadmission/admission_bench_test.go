package pcsadmission

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// createRequest is the admission request of a PodCliqueSet create as the API server sends it:
// one clique of 10 pods, the shape make bench creates 100 of at once.
func createRequest(b *testing.B) admission.Request {
	b.Helper()
	pcs := builders.PodCliqueSet("ns", "group-1").Clique("worker", 10).Obj()
	pcs.APIVersion, pcs.Kind = grovev1alpha1.GroupVersion.String(), "PodCliqueSet"
	raw, err := json.Marshal(pcs)
	if err != nil {
		b.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Namespace: "ns", Name: "group-1",
		Kind:   metav1.GroupVersionKind{Group: "grove.io", Version: "v1alpha1", Kind: "PodCliqueSet"},
		Object: runtime.RawExtension{Raw: raw},
	}}
}

// BenchmarkDefaultingACreate is the served defaulting webhook's work for one create.
func BenchmarkDefaultingACreate(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := grovev1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	h := defaultingHandler(scheme, kubeOnly, nil)
	req := createRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(context.Background(), req); !resp.Allowed {
			b.Fatal(resp.Result)
		}
	}
}

// BenchmarkValidatingACreate is the served validating webhook's work for one create.
func BenchmarkValidatingACreate(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := grovev1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	h := admission.WithValidator(scheme, admission.Validator[*grovev1alpha1.PodCliqueSet](&Validator{Backends: kubeOnly}))
	req := createRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(context.Background(), req); !resp.Allowed {
			b.Fatal(resp.Result)
		}
	}
}
