package trainere2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// statusClient is a trainer pod's view of the status server: it trusts the CA its TrainJob's
// <name>-tls-config ConfigMap carries and dials the Service's DNS name (here the local port).
func statusClient(t *testing.T, ca []byte) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca), "the ConfigMap's ca.crt is a PEM CA")
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: cluster.TrainerStatusDNSName, MinVersion: tls.VersionTLS12},
	}}
}

// podToken is what the kubelet projects into a trainer pod: a token of the pod's service account,
// bound to the pod, for the given audience.
func podToken(t *testing.T, pod corev1.Pod, audience string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.Current.RESTConfig())
	require.NoError(t, err)
	var tr *authenticationv1.TokenRequest
	require.Eventually(t, func() bool {
		tr, err = cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(context.Background(), pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600),
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
			},
		}, metav1.CreateOptions{})
		return err == nil // the namespace's default ServiceAccount may not be there yet
	}, 30*time.Second, 200*time.Millisecond, "token for pod %s: %v", pod.Name, err)
	return tr.Status.Token
}

// report POSTs a progress report as Kubeflow's SDK does and returns the HTTP code and body.
func report(t *testing.T, c *http.Client, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// TestTrainerProgressPostedByAPodLandsInTheTrainJobsStatus runs a TrainJob on each path and, as
// its trainer would with Kubeflow's SDK, reads the URL and CA path from the pod's env, takes a
// token bound to the pod for the audience its projected volume names, and posts progress to the
// trainer-controller: it appears in status.trainerStatus, owned by the trainer-status field
// manager, and survives the reconciler's own status writes to Complete. A token for another
// TrainJob is refused, and so is a value the CRD refuses, naming the field.
func TestTrainerProgressPostedByAPodLandsInTheTrainJobsStatus(t *testing.T) {
	t.Parallel()
	for _, kind := range []trainerv1alpha1.WorkloadKind{trainerv1alpha1.WorkloadKindJobSet, trainerv1alpha1.WorkloadKindPodCliqueSet} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ns := cluster.Current.NewNamespace(t)
			newRuntime(t, ns, "rt", runtimeSpec(kind, exit{"0", "20s"}, nil, 0, replicatedJob("node", exit{"0", "20s"})))
			tj := trainJob(ns, "progress", "rt", 1, nil, false)
			create(t, tj)

			sel := map[string]string{"jobset.sigs.k8s.io/jobset-name": tj.Name}
			if kind == trainerv1alpha1.WorkloadKindPodCliqueSet {
				sel = map[string]string{grovev1alpha1.LabelPartOf: tj.Name}
			}
			var pod corev1.Pod
			require.Eventually(t, func() bool {
				ps := pods(t, ns, sel)
				if len(ps) == 0 {
					return false
				}
				pod = ps[0]
				return true
			}, time.Minute, 200*time.Millisecond, "the trainer pod")

			_, port, err := net.SplitHostPort(trainer.TrainerStatusHostPort)
			require.NoError(t, err)
			env := builders.EnvOf(pod.Spec.Containers[0])
			url := env[plan.EnvStatusServerURL]
			assert.Equal(t, fmt.Sprintf("https://%s:%s%s", cluster.TrainerStatusDNSName, port, plan.StatusPath(ns, tj.Name)), url)
			assert.Equal(t, "/var/run/secrets/kubeflow/trainer/ca.crt", env[plan.EnvStatusServerCACert])
			assert.Equal(t, "/var/run/secrets/kubeflow/trainer/token", env[plan.EnvStatusServerToken])
			var audience string
			for _, v := range pod.Spec.Volumes {
				if v.Name == plan.StatusTokenVolume && v.Projected != nil && v.Projected.Sources[0].ServiceAccountToken != nil {
					audience = v.Projected.Sources[0].ServiceAccountToken.Audience
				}
			}
			require.Equal(t, plan.StatusAudience(ns, tj.Name), audience, "the pod's projected token names its TrainJob")

			cm := &corev1.ConfigMap{}
			require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: tj.Name + "-tls-config"}, cm))
			assert.Equal(t, string(cluster.Current.CAPEM()), cm.Data["ca.crt"], "the CA the status server's certificate chains to")
			require.True(t, metav1.IsControlledBy(cm, get(t, tj)), "the ConfigMap goes with its TrainJob")

			c := statusClient(t, []byte(cm.Data["ca.crt"]))
			local := "https://" + trainer.TrainerStatusHostPort + plan.StatusPath(ns, tj.Name)
			token := podToken(t, pod, audience)

			code, body := report(t, c, local, podToken(t, pod, plan.StatusAudience(ns, "another-trainjob")), `{"trainerStatus": {"progressPercentage": 10, "lastUpdatedTime": "2026-11-24T10:00:00Z"}}`)
			assert.Equal(t, http.StatusForbidden, code, "a token for another TrainJob: %s", body)

			code, body = report(t, c, local, token, `{"trainerStatus": {"progressPercentage": 140, "lastUpdatedTime": "2026-11-24T10:00:00Z"}}`)
			assert.Equal(t, http.StatusUnprocessableEntity, code, body)
			assert.Contains(t, body, "status.trainerStatus.progressPercentage", "the refusal names the field")

			code, body = report(t, c, local, token, `{"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 600,
				"metrics": [{"name": "loss", "value": "0.25"}, {"name": "eval_accuracy", "value": "0.9"}], "lastUpdatedTime": "2026-11-24T10:00:00Z"}}`)
			require.Equal(t, http.StatusOK, code, body)

			want := &trainerv1alpha1.TrainerStatus{
				ProgressPercentage: ptr.To[int32](40), EstimatedRemainingSeconds: ptr.To[int32](600),
				Metrics:         []trainerv1alpha1.Metric{{Name: "loss", Value: "0.25"}, {Name: "eval_accuracy", Value: "0.9"}},
				LastUpdatedTime: metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)),
			}
			got := get(t, tj)
			require.NotNil(t, got.Status.TrainerStatus)
			assert.True(t, want.LastUpdatedTime.Equal(&got.Status.TrainerStatus.LastUpdatedTime))
			got.Status.TrainerStatus.LastUpdatedTime = want.LastUpdatedTime
			assert.Equal(t, want, got.Status.TrainerStatus)
			managers := map[string]bool{}
			for _, mf := range got.ManagedFields {
				if mf.Subresource == "status" && bytes.Contains(mf.FieldsV1.GetRawBytes(), []byte(`"f:trainerStatus"`)) {
					managers[mf.Manager] = true
				}
			}
			assert.Equal(t, map[string]bool{"trainer-status": true}, managers, "one owner of status.trainerStatus")

			done := waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
			require.NotNil(t, done.Status.TrainerStatus, "the reconciler's status writes keep the reported progress")
			assert.Equal(t, int32(40), *done.Status.TrainerStatus.ProgressPercentage)
		})
	}
}
