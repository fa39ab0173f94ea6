// Package statusserver is the trainer-controller's TrainJob status endpoint, Kubeflow Trainer
// v2.3's contract: training code POSTs an UpdateTrainJobStatusRequest to
// /apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status over HTTPS
// with a projected service-account token whose audience names that TrainJob, and the server
// applies it to the TrainJob's status.trainerStatus (server-side apply, field manager
// trainer-status, the one writer of that field). Every replica serves; nothing is kept between
// requests.
package statusserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	trainerac "github.com/kubegrove/grove/apis/trainer/v1alpha1/applyconfiguration/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
)

// FieldManager owns status.trainerStatus; the TrainJob reconciler never writes that field.
const FieldManager = "trainer-status"

const (
	// maxBody bounds a request (Kubeflow's 64 KiB): 256 metrics of 64-byte names and values fit.
	maxBody = 64 << 10
	// Timeouts keep a slow or stuck client from holding a connection (Kubeflow's values).
	readTimeout, writeTimeout, idleTimeout = 10 * time.Second, 10 * time.Second, 120 * time.Second
	shutdownTimeout                        = 5 * time.Second
)

// requests counts the answers by HTTP code, so an operator sees refused tokens and bad payloads.
var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "grove_trainer_status_requests_total",
	Help: "TrainJob progress reports received by the trainer status server, by HTTP status code.",
}, []string{"code"})

func init() { ctrlmetrics.Registry.MustRegister(requests) }

// BaseURL is where pods reach the server: https://<serviceName>.<namespace>.svc:<port>.
func BaseURL(cfg *configv1alpha1.OperatorConfiguration) string {
	ts := cfg.Server.TrainerStatus
	return fmt.Sprintf("https://%s.%s.svc:%d", ts.ServiceName, cfg.CertManagement.Namespace, ts.Port)
}

// DNSName is the name the serving certificate must carry.
func DNSName(cfg *configv1alpha1.OperatorConfiguration) string {
	return fmt.Sprintf("%s.%s.svc", cfg.Server.TrainerStatus.ServiceName, cfg.CertManagement.Namespace)
}

// Source returns the server's address and its CA as read from the certificate directory now, for
// the TrainJob reconciler to wire pods with; it fails while the CA is not there yet.
func Source(cfg *configv1alpha1.OperatorConfiguration) func() (*plan.StatusServer, error) {
	base, caFile := BaseURL(cfg), filepath.Join(cfg.Server.TrainerStatus.ServerCertDir, plan.StatusCAKey)
	return func() (*plan.StatusServer, error) {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading the CA pods trust: %w", err)
		}
		if len(ca) == 0 {
			return nil, fmt.Errorf("the CA pods trust, %s, is empty", caFile)
		}
		return &plan.StatusServer{BaseURL: base, CA: ca}, nil
	}
}

// Server answers progress reports. Add it to the manager; it serves on every replica.
type Server struct {
	// Client writes TrainJob status and reviews tokens; give it its own rate limits.
	Client client.Client
	// Addr is host:port to listen on.
	Addr string
	// CertDir holds tls.crt and tls.key; they are reloaded when they change.
	CertDir string
	// Ready, when not nil, closes once the certificates are on disk; the server waits for it.
	Ready <-chan struct{}
	// Log is the server's logger.
	Log logr.Logger
}

var (
	_ manager.Runnable               = &Server{}
	_ manager.LeaderElectionRunnable = &Server{}
)

// NeedLeaderElection is false: every replica behind the Service answers.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	if s.Ready != nil {
		select {
		case <-s.Ready:
		case <-ctx.Done():
			return nil
		}
	}
	watcher, err := certwatcher.New(filepath.Join(s.CertDir, "tls.crt"), filepath.Join(s.CertDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("trainer status server certificate: %w", err)
	}
	go func() {
		if err := watcher.Start(ctx); err != nil {
			s.Log.Error(err, "watching the trainer status server certificate")
		}
	}()
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("trainer status server: %w", err)
	}
	srv := &http.Server{
		Handler:      s.Handler(),
		TLSConfig:    &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: watcher.GetCertificate},
		ReadTimeout:  readTimeout,
		WriteTimeout: writeTimeout,
		IdleTimeout:  idleTimeout,
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	s.Log.Info("serving TrainJob progress reports", "address", ln.Addr().String())
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("trainer status server: %w", err)
	}
	return nil
}

// Handler routes POST {StatusPath} to the status update and answers everything else 404, with
// Kubernetes Status bodies as Kubeflow's server does.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+plan.StatusPath("{namespace}", "{name}"), s.update)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusNotFound, metav1.StatusReasonNotFound, "Not found")
	})
	return http.MaxBytesHandler(mux, maxBody)
}

func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	logger := s.Log.WithValues("trainJob", klog.KRef(ns, name))
	ctx := log.IntoContext(r.Context(), logger)
	who, err := s.authorize(ctx, r.Header.Get("Authorization"), ns, name)
	if err != nil {
		logger.Error(err, "reviewing a progress report's token")
		reply(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error")
		return
	}
	if who == "" {
		// Said once per refused request: a pod reporting with the wrong token keeps trying.
		logger.Info("progress report refused: the token is not a service-account token of this namespace for this TrainJob's audience",
			"audience", plan.StatusAudience(ns, name))
		reply(w, http.StatusForbidden, metav1.StatusReasonForbidden, "Forbidden")
		return
	}
	var req trainerv1alpha1.UpdateTrainJobStatusRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			reply(w, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", maxBody))
			return
		}
		// Unknown fields too: a field this server would drop is refused by name, not ignored.
		reply(w, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, "Invalid payload: "+err.Error())
		return
	}
	if req.TrainerStatus != nil {
		if code, reason, msg := s.apply(ctx, ns, name, req.TrainerStatus); code != http.StatusOK {
			reply(w, code, reason, msg)
			return
		}
		logger.V(1).Info("progress reported", "by", who, "progressPercentage", req.TrainerStatus.ProgressPercentage,
			"estimatedRemainingSeconds", req.TrainerStatus.EstimatedRemainingSeconds, "metrics", len(req.TrainerStatus.Metrics))
	}
	requests.WithLabelValues("200").Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(req)
}

// apply writes the reported status as the one owner of status.trainerStatus. The API server
// validates it against the CRD (ranges, lengths, lastUpdatedTime required), and its message,
// which names the field, goes back to the pod.
func (s *Server) apply(ctx context.Context, ns, name string, status *trainerv1alpha1.TrainerStatus) (int, metav1.StatusReason, string) {
	// Only status.trainerStatus: the controller's conditions and jobsStatus are its own.
	tj := trainerac.TrainJob(name, ns).WithStatus(trainerac.TrainJobStatus().WithTrainerStatus(trainerStatusApply(status)))
	err := s.Client.Status().Apply(ctx, tj, client.FieldOwner(FieldManager), client.ForceOwnership)
	var serr apierrors.APIStatus
	switch {
	case err == nil:
		return http.StatusOK, "", ""
	case apierrors.IsNotFound(err):
		return http.StatusNotFound, metav1.StatusReasonNotFound, "Train job not found"
	case (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) && errors.As(err, &serr) && serr.Status().Message != "":
		return http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, serr.Status().Message
	}
	log.FromContext(ctx).Error(err, "writing the reported progress")
	return http.StatusInternalServerError, metav1.StatusReasonInternalError, "Internal error"
}

// trainerStatusApply is the reported status as the request carried it: a field the request left
// out stays out, so the API server names what is missing (lastUpdatedTime, a metric's name).
func trainerStatusApply(st *trainerv1alpha1.TrainerStatus) *trainerac.TrainerStatusApplyConfiguration {
	out := trainerac.TrainerStatus()
	if st.ProgressPercentage != nil {
		out.WithProgressPercentage(*st.ProgressPercentage)
	}
	if st.EstimatedRemainingSeconds != nil {
		out.WithEstimatedRemainingSeconds(*st.EstimatedRemainingSeconds)
	}
	for _, m := range st.Metrics {
		metric := trainerac.Metric()
		if m.Name != "" {
			metric.WithName(m.Name)
		}
		if m.Value != "" {
			metric.WithValue(m.Value)
		}
		out.WithMetrics(metric)
	}
	if !st.LastUpdatedTime.IsZero() {
		out.WithLastUpdatedTime(st.LastUpdatedTime)
	}
	return out
}

// authorize returns the service account that sent a report, "" when it may not report for this
// TrainJob. The API server reviews the token: signed by the cluster, unexpired, its pod still
// alive, and issued for this TrainJob's audience; the account must live in the TrainJob's
// namespace (Kubeflow checks the same with the token's own claims).
func (s *Server) authorize(ctx context.Context, header, ns, name string) (string, error) {
	token := bearer(header)
	if token == "" {
		return "", nil
	}
	audience := plan.StatusAudience(ns, name)
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}}}
	if err := s.Client.Create(ctx, review); err != nil {
		return "", err
	}
	st := review.Status
	if !st.Authenticated || !slices.Contains(st.Audiences, audience) || !strings.HasPrefix(st.User.Username, "system:serviceaccount:"+ns+":") {
		return "", nil
	}
	return st.User.Username, nil
}

// bearer is the credential of an RFC 7235 Bearer Authorization header, "" when there is none.
func bearer(header string) string {
	parts := strings.Fields(header)
	if len(parts) != 2 || !strings.EqualFold(parts[0], "Bearer") {
		return ""
	}
	return parts[1]
}

// reply writes a Kubernetes Status, as the API server and Kubeflow's status server do.
func reply(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	requests.WithLabelValues(strconv.Itoa(code)).Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	})
}
