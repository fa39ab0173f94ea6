package trainere2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

const trainerUser = "system:serviceaccount:grove-system:trainer-controller"

// printed returns the columns `kubectl get trainjob` shows for one TrainJob, by name, from the
// API server's Table rendering of the CRD's printer columns.
func printed(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	cfg := cluster.Current.RESTConfig()
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s", cfg.Host, ns, name), nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	table := &metav1.Table{}
	require.NoError(t, json.Unmarshal(body, table))
	require.Len(t, table.Rows, 1)
	out := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		out[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	return out
}

func waitPrinted(t *testing.T, ns, name, column, want string) {
	t.Helper()
	var got map[string]string
	require.Eventually(t, func() bool {
		got = printed(t, ns, name)
		return got[column] == want
	}, 30*time.Second, 200*time.Millisecond, "kubectl get shows %s=%q (last %v)", column, want, got)
}

func TestKubectlGetShowsStateNodesAndRuntimeAndTheControllerIsQuietAtRest(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	for _, p := range paths {
		rt := "rt-" + strings.ToLower(string(p.kind))
		newRuntime(t, ns, rt, runtimeSpec(p.kind, neverExit, nil, 0))
		tj := trainJob(ns, "steady-"+strings.ToLower(string(p.kind)), rt, 2, nil, false)
		create(t, tj)
		waitRunningPods(t, ns, p.pods(tj.Name))
		waitPrinted(t, ns, tj.Name, "State", trainerv1alpha1.TrainJobRunning)
		row := printed(t, ns, tj.Name)
		assert.Equal(t, "2", row["Nodes"])
		assert.Equal(t, rt, row["Runtime"])
		assert.Contains(t, row, "Age")
	}
	// The window starts once the trainer-controller has written nothing in the namespace for 2 s.
	settled := quietTrainer(t, ns)
	time.Sleep(15 * time.Second) // the observation window
	writes, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ev.StageTimestamp.After(settled) && ev.User.Username == trainerUser
	})
	require.NoError(t, err)
	for _, w := range writes {
		t.Logf("write at rest: %s %s %s/%s", w.Verb, w.ObjectRef.Resource, w.ObjectRef.Subresource, w.ObjectRef.Name)
	}
	assert.Empty(t, writes, "no trainer-controller writes in 15s with two running TrainJobs")

	// The state column follows a suspend and, unlike Kubeflow's last-condition column, a resume.
	tj := trainJob(ns, "steady-jobset", "", 0, nil, false)
	setSuspend(t, tj, true)
	waitPrinted(t, ns, tj.Name, "State", trainerv1alpha1.TrainJobSuspended)
	setSuspend(t, tj, false)
	waitPrinted(t, ns, tj.Name, "State", trainerv1alpha1.TrainJobRunning)
}

// metricValue reads one sample of the trainer-controller's metrics, 0 when absent.
func metricValue(t *testing.T, sample string) float64 {
	t.Helper()
	resp, err := http.Get(trainer.MetricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, sample+" ") {
			var v float64
			_, err := fmt.Sscan(strings.TrimPrefix(line, sample+" "), &v)
			require.NoError(t, err)
			return v
		}
	}
	return 0
}
