package statusserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubegrove/grove/internal/app"
)

// apiServer stands in for the API server: tokens it knows review as the given user and
// audiences; status patches are recorded, or answered with patchErr.
type apiServer struct {
	tokens    map[string]authenticationv1.TokenReviewStatus
	reviewErr error
	patchErr  error
	patches   []patch
}

type patch struct {
	key    types.NamespacedName
	body   map[string]any
	owner  string
	forced bool
}

func (a *apiServer) client(t *testing.T) client.Client {
	scheme, err := app.Scheme()
	require.NoError(t, err)
	return fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			review, ok := obj.(*authenticationv1.TokenReview)
			if !ok {
				return errors.New("unexpected create")
			}
			if a.reviewErr != nil {
				return a.reviewErr
			}
			review.Status = a.tokens[review.Spec.Token]
			return nil
		},
		SubResourceApply: func(_ context.Context, _ client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			require.Equal(t, "status", sub)
			if a.patchErr != nil {
				return a.patchErr
			}
			data, err := json.Marshal(obj)
			require.NoError(t, err)
			u := &unstructured.Unstructured{}
			require.NoError(t, json.Unmarshal(data, u))
			rec := patch{key: client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}}
			require.NoError(t, json.Unmarshal(data, &rec.body))
			ao := &client.SubResourceApplyOptions{}
			ao.ApplyOpts(opts)
			rec.owner, rec.forced = ao.FieldManager, ao.Force != nil && *ao.Force
			a.patches = append(a.patches, rec)
			return nil
		},
	}).Build()
}

const statusURL = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/llm/status"

var (
	goodToken = authenticationv1.TokenReviewStatus{
		Authenticated: true,
		Audiences:     []string{"trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/llm/status"},
		User:          authenticationv1.UserInfo{Username: "system:serviceaccount:team-a:default"},
	}
	otherNamespace = authenticationv1.TokenReviewStatus{
		Authenticated: true,
		Audiences:     goodToken.Audiences,
		User:          authenticationv1.UserInfo{Username: "system:serviceaccount:team-b:default"},
	}
	otherAudience = authenticationv1.TokenReviewStatus{
		Authenticated: true,
		Audiences:     []string{"https://kubernetes.default.svc"},
		User:          goodToken.User,
	}
)

const progress = `{"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 600,
	"metrics": [{"name": "loss", "value": "0.25"}], "lastUpdatedTime": "2026-11-24T10:00:00Z"}}`

func post(t *testing.T, api *apiServer, path, auth, body string) (int, metav1.Status, string) {
	t.Helper()
	srv := httptest.NewServer((&Server{Client: api.client(t), Log: logr.Discard()}).Handler())
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var st metav1.Status
	_ = json.Unmarshal(raw, &st)
	return resp.StatusCode, st, string(raw)
}

func tokens() map[string]authenticationv1.TokenReviewStatus {
	return map[string]authenticationv1.TokenReviewStatus{"good": goodToken, "other-ns": otherNamespace, "other-aud": otherAudience}
}

func TestAReportWithThisTrainJobsTokenIsAppliedAsTheOneOwnerOfTrainerStatus(t *testing.T) {
	api := &apiServer{tokens: tokens()}
	code, _, body := post(t, api, statusURL, "Bearer good", progress)

	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, api.patches, 1)
	p := api.patches[0]
	assert.Equal(t, types.NamespacedName{Namespace: "team-a", Name: "llm"}, p.key)
	assert.Equal(t, "trainer-status", p.owner)
	assert.True(t, p.forced, "the one writer of trainerStatus takes it over")
	assert.Equal(t, map[string]any{
		"progressPercentage": float64(40), "estimatedRemainingSeconds": float64(600),
		"metrics": []any{map[string]any{"name": "loss", "value": "0.25"}}, "lastUpdatedTime": "2026-11-24T10:00:00Z",
	}, p.body["status"].(map[string]any)["trainerStatus"])
	assert.Equal(t, "TrainJob", p.body["kind"])
	assert.JSONEq(t, progress, body, "the parsed report is echoed, as Kubeflow's server does")
}

func TestReportsWithoutARightTokenAreForbiddenAndWriteNothing(t *testing.T) {
	for name, auth := range map[string]string{
		"no Authorization header":             "",
		"not a bearer token":                  "Basic Zm9vOmJhcg==",
		"a token the API server rejects":      "Bearer forged",
		"a token of another namespace":        "Bearer other-ns",
		"a token for another audience":        "Bearer other-aud",
		"two credentials in one bearer value": "Bearer good extra",
	} {
		t.Run(name, func(t *testing.T) {
			api := &apiServer{tokens: tokens()}
			code, st, _ := post(t, api, statusURL, auth, progress)
			assert.Equal(t, http.StatusForbidden, code)
			assert.Equal(t, metav1.StatusReasonForbidden, st.Reason)
			assert.Empty(t, api.patches)
		})
	}
}

func TestATokenForOneTrainJobIsRefusedForAnother(t *testing.T) {
	api := &apiServer{tokens: tokens()}
	code, _, _ := post(t, api, strings.Replace(statusURL, "/llm/", "/other/", 1), "Bearer good", progress)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Empty(t, api.patches)
}

func TestBadReportsAreRefusedNamingWhatIsWrong(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "trainer.kubeflow.org", Kind: "TrainJob"}, "llm", field.ErrorList{
		field.Invalid(field.NewPath("status", "trainerStatus", "progressPercentage"), 140, "should be less than or equal to 100"),
	})
	cases := []struct {
		name     string
		body     string
		patchErr error
		code     int
		message  string
	}{
		{"not JSON", "progress: 40", nil, http.StatusUnprocessableEntity, "Invalid payload"},
		{"a field Kubeflow's request does not have", `{"trainerStatus": {"progress": 40}}`, nil, http.StatusUnprocessableEntity, `unknown field "progress"`},
		{"too large", `{"trainerStatus": {"metrics": [{"name": "` + strings.Repeat("x", maxBody) + `"}]}}`, nil, http.StatusRequestEntityTooLarge, "larger than 65536 bytes"},
		{"refused by the CRD's schema", progress, invalid, http.StatusUnprocessableEntity, "status.trainerStatus.progressPercentage"},
		{"a TrainJob that does not exist", progress, apierrors.NewNotFound(schema.GroupResource{Group: "trainer.kubeflow.org", Resource: "trainjobs"}, "llm"), http.StatusNotFound, "Train job not found"},
		{"an API server failure", progress, errors.New("connection refused"), http.StatusInternalServerError, "Internal error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &apiServer{tokens: tokens(), patchErr: tc.patchErr}
			code, st, raw := post(t, api, statusURL, "Bearer good", tc.body)
			assert.Equal(t, tc.code, code, raw)
			assert.Contains(t, st.Message, tc.message)
			assert.Equal(t, "Status", st.Kind)
		})
	}
}

func TestAnEmptyReportChangesNothing(t *testing.T) {
	api := &apiServer{tokens: tokens()}
	code, _, _ := post(t, api, statusURL, "Bearer good", `{}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, api.patches)
}

func TestAFailedTokenReviewIsAnInternalErrorNotAVerdict(t *testing.T) {
	api := &apiServer{tokens: tokens(), reviewErr: errors.New("API server unavailable")}
	code, st, _ := post(t, api, statusURL, "Bearer good", progress)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, metav1.StatusReasonInternalError, st.Reason)
	assert.Empty(t, api.patches)
}

func TestOtherPathsAreNotFound(t *testing.T) {
	for _, path := range []string{"/", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/llm", "/healthz"} {
		code, st, _ := post(t, &apiServer{tokens: tokens()}, path, "Bearer good", progress)
		assert.Equal(t, http.StatusNotFound, code, path)
		assert.Equal(t, metav1.StatusReasonNotFound, st.Reason, path)
	}
}
