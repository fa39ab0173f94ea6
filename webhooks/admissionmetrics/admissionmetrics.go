// Package admissionmetrics counts and times the admission requests grove-webhook decides
// (grove_admission_requests_total, grove_admission_duration_seconds; docs/metrics.md). It meters
// at registration: Manager wraps the manager's webhook server so that every admission webhook
// registered through it, by a package's own Register or by controller-runtime's webhook
// builder, is metered, and a new webhook cannot be left out.
//
// Every call is timed. A call is counted once it decided the request: every validating
// webhook's, and a defaulting (mutating) webhook's only when it refused or failed the request.
// A defaulting webhook that lets the object pass decides nothing — the validating webhook of the
// same kind decides the same request — and counting it too would make every refusal of a kind
// with a defaulting webhook at most half of that kind's requests.
//
// It only observes the answer a webhook gave and changes nothing, so it logs nothing: the
// admission packages log their own refusals (at debug, as docs/operating.md says).
package admissionmetrics

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Results of an admission request.
const (
	ResultAllowed = "allowed"
	ResultDenied  = "denied"
	// ResultError is a request the webhook could not decide: a failed read, a panic (a status
	// code of 500 or more, or 429).
	ResultError = "error"
)

// Reasons class a denial; a request that was not denied has ReasonNone.
const (
	// ReasonInvalid is a field that breaks a rule (and an object that cannot be decoded).
	ReasonInvalid = "Invalid"
	// ReasonForbidden is a change the requester may not make: a managed object changed by
	// someone other than its owner, or a field that must not be set (field.Forbidden).
	ReasonForbidden = "Forbidden"
	// ReasonImmutable is a change of a field that cannot change.
	ReasonImmutable = "Immutable"
	// ReasonUnsupported is a value this project does not support (field.NotSupported).
	ReasonUnsupported = "Unsupported"
	// ReasonNone is an allowed request, or one that errored: no denial to class.
	ReasonNone = "None"
)

// Other is the kind of a request for a kind the binary's scheme does not know, and the
// operation of one that is none of admission's four.
const Other = "Other"

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_admission_requests_total",
		Help: "Admission requests grove-webhook decided, by kind, operation, result (allowed, denied, error) and the class of a denial.",
	}, []string{"kind", "operation", "result", "reason"})
	// Requests take milliseconds; a read through to the API server can take seconds, and the
	// webhooks time out at 5 or 10 s.
	duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grove_admission_duration_seconds",
		Help:    "Time grove-webhook takes to answer one admission webhook call, defaulting or validating.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15),
	}, []string{"kind", "operation"})
)

func init() {
	metrics.Registry.MustRegister(requests, duration)
}

// MutatingPathPrefix begins the path of every mutating webhook: controller-runtime's builder
// names them so, and so does this project (kubebuilder markers, config/webhook).
const MutatingPathPrefix = "/mutate-"

// Manager returns mgr with a webhook server that meters every admission webhook registered on
// it (an *admission.Webhook: what controller-runtime's builder registers and what this
// project's own webhooks register); one whose path begins with MutatingPathPrefix is metered
// as mutating. Any other handler (a conversion webhook) is served as is.
func Manager(mgr ctrl.Manager) ctrl.Manager {
	return &meteredManager{Manager: mgr, server: &meteredServer{Server: mgr.GetWebhookServer(), scheme: mgr.GetScheme()}}
}

type meteredManager struct {
	ctrl.Manager
	server *meteredServer
}

func (m *meteredManager) GetWebhookServer() webhook.Server { return m.server }

// meteredServer wraps each admission webhook's handler as it is registered.
type meteredServer struct {
	webhook.Server
	scheme *runtime.Scheme
}

func (s *meteredServer) Register(path string, hook http.Handler) {
	if wh, ok := hook.(*admission.Webhook); ok && wh.Handler != nil {
		wh.Handler = Handler(wh.Handler, s.scheme, strings.HasPrefix(path, MutatingPathPrefix))
	}
	s.Server.Register(path, hook)
}

// Handler meters next: each request is timed, and counted with its outcome when next decided it
// (for a mutating webhook: when it did not allow it; see the package's doc). scheme bounds the
// kind label to the kinds the binary knows (the API server sends only those its webhook
// configurations name; anything else, sent by another caller, is Other).
func Handler(next admission.Handler, scheme *runtime.Scheme, mutating bool) admission.Handler {
	return &meteredHandler{next: next, scheme: scheme, mutating: mutating}
}

type meteredHandler struct {
	next     admission.Handler
	scheme   *runtime.Scheme
	mutating bool
}

// Handle decides through next. A panic in next (which controller-runtime's webhook recovers
// into a 500 above this handler) is counted as an error before it goes on.
func (h *meteredHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	kind, op := h.kind(req), operation(req.Operation)
	decided := false
	var resp admission.Response
	defer func() {
		duration.WithLabelValues(kind, op).Observe(time.Since(start).Seconds())
		result, reason := ResultError, ReasonNone
		if decided {
			result, reason = Outcome(resp)
		}
		if !h.mutating || result != ResultAllowed {
			requests.WithLabelValues(kind, op, result, reason).Inc()
		}
	}()
	resp = h.next.Handle(ctx, req)
	decided = true
	return resp
}

func (h *meteredHandler) kind(req admission.Request) string {
	gvk := schema.GroupVersionKind(req.Kind)
	if gvk.Kind == "" || h.scheme == nil || !h.scheme.Recognizes(gvk) {
		return Other
	}
	return gvk.Kind
}

// operation bounds the operation label to admission's four.
func operation(op admissionv1.Operation) string {
	switch op {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return string(op)
	}
	return Other
}

// Outcome classes an admission response: allowed, denied with the class of the denial, or an
// error (a status code of 500 or more, or 429: the webhook could not decide, and the request
// may pass on a retry). A denial with field errors (apierrors.NewInvalid's causes, what every
// validator here returns) is classed by them: a change of an immutable field, then the field
// error's type (field.Forbidden, field.NotSupported; every other type is Invalid); one carrying
// several classes counts as the most specific: Immutable, Forbidden, Unsupported, Invalid. A
// denial without field errors is classed by its message (immutable) and its status reason and
// code: Forbidden for 403 (admission.Denied's code, and the API server's for a denial without
// one), Invalid for the rest (400: an object the webhook cannot decode; 422).
func Outcome(resp admission.Response) (result, reason string) {
	if resp.Allowed {
		return ResultAllowed, ReasonNone
	}
	st := resp.Result
	if st == nil {
		st = &metav1.Status{}
	}
	code := st.Code
	if code == 0 {
		code = http.StatusForbidden
	}
	if code >= http.StatusInternalServerError || code == http.StatusTooManyRequests {
		return ResultError, ReasonNone
	}
	if st.Details != nil && len(st.Details.Causes) > 0 {
		return ResultDenied, causesReason(st.Details.Causes)
	}
	switch {
	case immutable(st.Message):
		return ResultDenied, ReasonImmutable
	case st.Reason == metav1.StatusReasonForbidden || (st.Reason == "" && code == http.StatusForbidden):
		return ResultDenied, ReasonForbidden
	}
	return ResultDenied, ReasonInvalid
}

// causesReason is the most specific class among a denial's field errors. Only the causes are
// read, never the status message, which names the object.
func causesReason(causes []metav1.StatusCause) string {
	classes := map[string]bool{}
	for _, c := range causes {
		switch {
		case immutable(c.Message):
			classes[ReasonImmutable] = true
		case c.Type == metav1.CauseTypeForbidden:
			classes[ReasonForbidden] = true
		case c.Type == metav1.CauseTypeFieldValueNotSupported:
			classes[ReasonUnsupported] = true
		default:
			classes[ReasonInvalid] = true
		}
	}
	for _, r := range []string{ReasonImmutable, ReasonForbidden, ReasonUnsupported} {
		if classes[r] {
			return r
		}
	}
	return ReasonInvalid
}

// immutable reports whether a denial's message says a field cannot change ("field is
// immutable", apimachinery's wording and this project's). The phrase has a space, which no
// object name has, so a name with "immutable" in it is not taken for one.
func immutable(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "is immutable")
}
