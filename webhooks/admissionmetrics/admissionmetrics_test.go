package admissionmetrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

var configMapKind = schema.GroupKind{Kind: "ConfigMap"}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(s))
	return s
}

// refusing answers every ConfigMap with err.
type refusing struct{ err error }

func (v refusing) ValidateCreate(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, v.err
}

func (v refusing) ValidateUpdate(context.Context, *corev1.ConfigMap, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, v.err
}

func (v refusing) ValidateDelete(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, v.err
}

func createRequest(t *testing.T, name string) admission.Request {
	t.Helper()
	raw, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}})
	require.NoError(t, err)
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "uid", Operation: admissionv1.Create, Namespace: "ns", Name: name,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Object: runtime.RawExtension{Raw: raw},
	}}
}

func invalid(name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(configMapKind, name, errs)
}

// The responses are made by controller-runtime's validating handler from what a validator
// returns, as every validator of grove-webhook answers.
func TestOutcomeClassesWhatAValidatorReturns(t *testing.T) {
	p := field.NewPath("spec", "x")
	cases := []struct {
		name        string
		object      string
		err         error
		result, why string
	}{
		{name: "no error", err: nil, result: ResultAllowed, why: ReasonNone},
		{name: "a field breaks a rule", err: invalid("cm", field.Invalid(p, 0, "must be at least 1")), result: ResultDenied, why: ReasonInvalid},
		{name: "a duplicate or missing field is Invalid", err: invalid("cm", field.Duplicate(p, "a"), field.Required(p, "")), result: ResultDenied, why: ReasonInvalid},
		{name: "an immutable field", err: invalid("cm", field.Invalid(p, "b", "field is immutable")), result: ResultDenied, why: ReasonImmutable},
		{name: "immutable wins over the other classes", err: invalid("cm", field.Forbidden(p, "must not be set"), field.Invalid(p, "b", "field is immutable (was \"a\")")),
			result: ResultDenied, why: ReasonImmutable},
		{name: "a forbidden field", err: invalid("cm", field.Forbidden(p, "must not be set")), result: ResultDenied, why: ReasonForbidden},
		{name: "forbidden wins over unsupported and invalid", err: invalid("cm", field.Invalid(p, 0, "bad"), field.NotSupported(p, "z", []string{"a"}), field.Forbidden(p, "no")),
			result: ResultDenied, why: ReasonForbidden},
		{name: "an unsupported value", err: invalid("cm", field.NotSupported(p, "z", []string{"a", "b"})), result: ResultDenied, why: ReasonUnsupported},
		{name: "an object named like the class is not taken for it", object: "immutable", err: invalid("immutable", field.Invalid(p, 0, "bad")),
			result: ResultDenied, why: ReasonInvalid},
		{name: "a plain error is a denial (controller-runtime answers 403)", err: errors.New("no"), result: ResultDenied, why: ReasonForbidden},
		{name: "an API Forbidden", err: apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("no")), result: ResultDenied, why: ReasonForbidden},
		{name: "a failed read answered as an internal error", err: apierrors.NewInternalError(errors.New("connection refused")), result: ResultError, why: ReasonNone},
		{name: "a timeout", err: apierrors.NewTimeoutError("slow", 1), result: ResultError, why: ReasonNone},
		{name: "throttled", err: apierrors.NewTooManyRequests("busy", 1), result: ResultError, why: ReasonNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.object
			if name == "" {
				name = "cm"
			}
			wh := admission.WithValidator[*corev1.ConfigMap](testScheme(t), refusing{err: tc.err})

			result, reason := Outcome(wh.Handler.Handle(context.Background(), createRequest(t, name)))

			assert.Equal(t, tc.result, result)
			assert.Equal(t, tc.why, reason)
		})
	}
}

func TestOutcomeClassesAHandlersOwnAnswers(t *testing.T) {
	cases := []struct {
		name        string
		resp        admission.Response
		result, why string
	}{
		{"allowed", admission.Allowed(""), ResultAllowed, ReasonNone},
		{"defaulted", admission.Patched("defaulted"), ResultAllowed, ReasonNone},
		{"the authorizer's refusal", admission.Denied(`Pod ns/immutable-0 is managed by the grove-operator for PodCliqueSet "p"; only a may update it`), ResultDenied, ReasonForbidden},
		{"a refusal saying the field is immutable", admission.Denied("spec.x is immutable"), ResultDenied, ReasonImmutable},
		{"an object that cannot be decoded", admission.Errored(http.StatusBadRequest, errors.New("json: cannot unmarshal")), ResultDenied, ReasonInvalid},
		{"a failed read", admission.Errored(http.StatusInternalServerError, errors.New("connection refused")), ResultError, ReasonNone},
		{"a denial without a status (the API server answers 403)", admission.Response{}, ResultDenied, ReasonForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			result, reason := Outcome(tc.resp)
			assert.Equal(t, tc.result, result)
			assert.Equal(t, tc.why, reason)
		})
	}
}

// handlerFunc is an admission.Handler.
type handlerFunc func(context.Context, admission.Request) admission.Response

func (f handlerFunc) Handle(ctx context.Context, req admission.Request) admission.Response {
	return f(ctx, req)
}

// read is a metric's current state.
func read(m prometheus.Metric) *dto.Metric {
	out := &dto.Metric{}
	if err := m.Write(out); err != nil {
		panic(err)
	}
	return out
}

func count(kind, op, result, reason string) float64 {
	return read(requests.WithLabelValues(kind, op, result, reason)).GetCounter().GetValue()
}

// configMapCreatesTimed is how many ConfigMap creates were timed.
func configMapCreatesTimed() uint64 {
	return read(duration.WithLabelValues("ConfigMap", "CREATE").(prometheus.Metric)).GetHistogram().GetSampleCount()
}

func TestHandlerCountsAndTimesEachRequest(t *testing.T) {
	s := testScheme(t)
	deny := Handler(handlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Denied("spec.replicas: Forbidden: no")
	}), s, false)
	req := createRequest(t, "cm")
	before, timed := count("ConfigMap", "CREATE", ResultDenied, ReasonForbidden), configMapCreatesTimed()

	resp := deny.Handle(context.Background(), req)

	assert.False(t, resp.Allowed, "the handler's answer is passed on")
	assert.Equal(t, before+1, count("ConfigMap", "CREATE", ResultDenied, ReasonForbidden))
	assert.Equal(t, timed+1, configMapCreatesTimed())
}

func TestHandlerBoundsItsLabels(t *testing.T) {
	allow := Handler(handlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") }), testScheme(t), false)
	req := createRequest(t, "cm")
	req.Kind = metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Anything"}
	req.Operation = "PATCH"
	before := count(Other, Other, ResultAllowed, ReasonNone)

	allow.Handle(context.Background(), req)

	assert.Equal(t, before+1, count(Other, Other, ResultAllowed, ReasonNone), "a kind the scheme does not know and an unknown operation are Other")
}

func TestAPanickingHandlerIsCountedAsAnError(t *testing.T) {
	boom := Handler(handlerFunc(func(context.Context, admission.Request) admission.Response { panic("boom") }), testScheme(t), false)
	before := count("ConfigMap", "CREATE", ResultError, ReasonNone)

	assert.PanicsWithValue(t, "boom", func() { boom.Handle(context.Background(), createRequest(t, "cm")) },
		"the panic goes on to controller-runtime's webhook, which answers 500")
	assert.Equal(t, before+1, count("ConfigMap", "CREATE", ResultError, ReasonNone))
}

// A defaulting webhook that lets an object pass is timed, not counted: the validating webhook
// of the kind decides the request. One that refuses or fails it is counted.
func TestAMutatingWebhookIsCountedOnlyWhenItDoesNotAllow(t *testing.T) {
	cases := []struct {
		name           string
		resp           admission.Response
		result, reason string
		counted        float64
	}{
		{"defaulted", admission.Patched("defaulted"), ResultAllowed, ReasonNone, 0},
		{"refused", admission.Denied("spec.x: Forbidden: no"), ResultDenied, ReasonForbidden, 1},
		{"failed", admission.Errored(http.StatusInternalServerError, errors.New("boom")), ResultError, ReasonNone, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler(handlerFunc(func(context.Context, admission.Request) admission.Response { return tc.resp }), testScheme(t), true)
			req := createRequest(t, "cm")
			before, timed := count("ConfigMap", "CREATE", tc.result, tc.reason), configMapCreatesTimed()

			h.Handle(context.Background(), req)

			assert.Equal(t, before+tc.counted, count("ConfigMap", "CREATE", tc.result, tc.reason))
			assert.Equal(t, timed+1, configMapCreatesTimed(), "every call is timed")
		})
	}
}

// refusingDefaults refuses to default any ConfigMap.
type refusingDefaults struct{}

func (refusingDefaults) Default(context.Context, *corev1.ConfigMap) error {
	return invalid("cm", field.Invalid(field.NewPath("data"), "x", "field is immutable"))
}

// fakeManager is what registering webhooks reads of a manager.
type fakeManager struct {
	ctrl.Manager
	server webhook.Server
	scheme *runtime.Scheme
}

func (m fakeManager) GetWebhookServer() webhook.Server { return m.server }
func (m fakeManager) GetScheme() *runtime.Scheme       { return m.scheme }
func (m fakeManager) GetConfig() *rest.Config          { return &rest.Config{} }

func review(t *testing.T, path string, req admission.Request) *http.Request {
	t.Helper()
	body, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req.AdmissionRequest})
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

func TestEveryAdmissionWebhookRegisteredThroughTheManagerIsMetered(t *testing.T) {
	server := webhook.NewServer(webhook.Options{})
	mgr := Manager(fakeManager{server: server, scheme: testScheme(t)})

	// As the packages register: through controller-runtime's builder, and on their own.
	require.NoError(t, ctrl.NewWebhookManagedBy(mgr, &corev1.ConfigMap{}).
		WithValidator(refusing{err: invalid("cm", field.NotSupported(field.NewPath("data"), "x", []string{"y"}))}).
		WithDefaulter(refusingDefaults{}).Complete())
	mgr.GetWebhookServer().Register("/validate-own", &webhook.Admission{Handler: handlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})})
	mgr.GetWebhookServer().Register("/mutate-own", &webhook.Admission{Handler: handlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})})
	mgr.GetWebhookServer().Register("/other", http.NotFoundHandler())

	for _, tc := range []struct {
		path                     string
		code                     int
		kind, op, result, reason string
		counted                  float64
	}{
		{"/validate--v1-configmap", http.StatusOK, "ConfigMap", "CREATE", ResultDenied, ReasonUnsupported, 1},
		{"/mutate--v1-configmap", http.StatusOK, "ConfigMap", "CREATE", ResultDenied, ReasonImmutable, 1},
		{"/validate-own", http.StatusOK, "ConfigMap", "CREATE", ResultAllowed, ReasonNone, 1},
		{"/mutate-own", http.StatusOK, "ConfigMap", "CREATE", ResultAllowed, ReasonNone, 0},
		{"/other", http.StatusNotFound, "ConfigMap", "CREATE", ResultAllowed, ReasonNone, 0},
	} {
		t.Run(tc.path, func(t *testing.T) {
			before := count(tc.kind, tc.op, tc.result, tc.reason)
			rec := httptest.NewRecorder()

			server.WebhookMux().ServeHTTP(rec, review(t, tc.path, createRequest(t, "cm")))

			require.Equal(t, tc.code, rec.Code, rec.Body.String())
			assert.Equal(t, before+tc.counted, count(tc.kind, tc.op, tc.result, tc.reason), "served through the server's mux, as the API server calls it")
		})
	}
}
