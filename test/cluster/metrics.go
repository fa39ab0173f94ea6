package cluster

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metricsClient bounds a scrape: a wedged binary fails the wait instead of hanging it.
var metricsClient = &http.Client{Timeout: 5 * time.Second}

// Metrics reads a project binary's metrics, by family name.
func (p *Process) Metrics() (map[string]*dto.MetricFamily, error) {
	if p.MetricsURL == "" {
		return nil, fmt.Errorf("%s serves no metrics here", p.p.name)
	}
	resp, err := metricsClient.Get(p.MetricsURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// sum adds up a counter's or a gauge's samples over all their labels.
func sum(f *dto.MetricFamily) float64 {
	var total float64
	for _, m := range f.GetMetric() {
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}

// WaitIdle returns once the binary's controllers have reconciled at least once and are idle: no
// request ready in a work queue, no reconcile running, and no reconcile finished for quiet (longer
// than the batching period, so a request held back for it is not missed; a retry or RequeueAfter
// due later is not seen). It reads what controller-runtime exports, so it says so only of this
// process, and only while no test changes what it watches. A process that exited is named in the
// failure.
func (p *Process) WaitIdle(t testing.TB, quiet, timeout time.Duration) {
	t.Helper()
	var (
		reconciles float64
		since      time.Time
	)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		exited, err := p.Exited()
		require.False(ct, exited, "%s exited (%v):\n%s", p.p.name, err, p.LogTail(20))
		families, err := p.Metrics()
		require.NoError(ct, err)
		total := sum(families["controller_runtime_reconcile_total"])
		if total != reconciles {
			reconciles, since = total, time.Now()
		}
		require.Positive(ct, total, "no reconcile yet")
		require.Zero(ct, sum(families["workqueue_depth"]), "requests waiting")
		require.Zero(ct, sum(families["controller_runtime_active_workers"]), "reconciles running")
		require.GreaterOrEqual(ct, time.Since(since), quiet, "a reconcile finished %s ago", time.Since(since).Round(time.Millisecond))
	}, timeout, quiet/4, "%s is idle", p.p.name)
}
