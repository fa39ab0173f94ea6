package monitoring

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
)

// The alerts the shipped PrometheusRule defines, each with the scenario below that fires it.
var alerts = []string{
	"GroveGangUnschedulable", "GroveWorkloadFailed", "GroveUpdateStalled", "GroveAdmissionDenying",
	"GroveBackendSyncFailing", "GroveNoLeader", "GroveWebhookDown",
}

// TestEveryAlertFiresForItsScenarioAndNotBefore plays one scenario per alert, in order, on the
// running cluster. Before each, no evaluation since the start may have seen that alert firing;
// after it, the alert fires. Between the scenarios that keep every binary up, every
// panel of the shipped dashboard answers with data.
func TestEveryAlertFiresForItsScenarioAndNotBefore(t *testing.T) {
	c := cluster.Current
	ctx := context.Background()
	require.NoError(t, prom.WaitTargetsUp(ctx, time.Minute))
	start := time.Now()
	// A few evaluations with everything up: the rules had their chance to misfire.
	waitEvaluations(t, 3)
	// What the dashboard is asked about must still exist when it is asked: the failed TrainJob
	// and a worker held at start by its leader, which kwok keeps from being ready for an hour,
	// live in a namespace of the whole test (each scenario's own goes when it ends).
	kept := c.NewNamespace(t)
	held := builders.PodCliqueSet(kept, "held").StartupType(grovev1alpha1.CliqueStartupTypeExplicit).
		Clique("leader", 1, builders.Annotate(cluster.AnnotationReadyAfter, "1h")).
		Clique("worker", 1, builders.StartsAfter("leader")).Obj()
	require.NoError(t, c.Client().Create(ctx, held))

	t.Run("a gang that waits for capacity, then runs", func(t *testing.T) {
		requireNeverFired(t, "GroveGangUnschedulable", start)
		ns := c.NewNamespace(t)
		gpus := corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("1")}
		pcs := builders.PodCliqueSet(ns, "big").Clique("worker", nodes+1, builders.Requests(gpus, nil)).Obj()
		require.NoError(t, c.Client().Create(ctx, pcs))
		waitFiring(t, "GroveGangUnschedulable")
		require.NoError(t, c.AddNodes(ctx, cluster.DefaultNode(nodes)))
		waitPhase(t, ns, "big", grovev1alpha1.PodCliqueSetPhaseRunning)
		waitResolved(t, "GroveGangUnschedulable")
	})

	t.Run("a training that fails", func(t *testing.T) {
		requireNeverFired(t, "GroveWorkloadFailed", start)
		ns := kept
		rt := failingRuntime().TrainingRuntime(ns, "torch")
		require.NoError(t, c.Client().Create(ctx, rt))
		tj := builders.TrainJob(ns, "fails", rt.Name).UID("").Nodes(1).Obj()
		require.NoError(t, c.Client().Create(ctx, tj))
		waitFiring(t, "GroveWorkloadFailed")
		require.Eventually(t, func() bool {
			return c.Client().Get(ctx, client.ObjectKeyFromObject(tj), tj) == nil && meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobFailed)
		}, 2*time.Minute, 250*time.Millisecond, "TrainJob %s/fails is Failed", ns)
		// The status server counts a refused progress report too: the panel of reports has data.
		resp, err := caClient(t).Post("https://"+trainerStatus+plan.StatusPath(ns, tj.Name), "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Truef(t, resp.StatusCode >= 400 && resp.StatusCode < 500, "a report without a token is refused, got %d", resp.StatusCode)
	})

	t.Run("an update that ends and one past its progress deadline", func(t *testing.T) {
		requireNeverFired(t, "GroveUpdateStalled", start)
		ns := c.NewNamespace(t)
		// The update that ends has ample time, so a slow replacement on a loaded machine does not
		// stall it; the other's deadline is short, since its replacement can never be placed.
		for name, deadline := range map[string]time.Duration{"rolls": 5 * time.Minute, "stalls": 5 * time.Second} {
			pcs := builders.PodCliqueSet(ns, name).Clique("worker", 2, builders.MaxUnavailable(1), progressDeadline(deadline)).Obj()
			require.NoError(t, c.Client().Create(ctx, pcs))
			waitPhase(t, ns, name, grovev1alpha1.PodCliqueSetPhaseRunning)
		}
		// One update that ends: the update duration histogram gets its observation.
		updateWorker(t, ns, "rolls", func(ps *corev1.PodSpec) { ps.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}} })
		require.Eventually(t, func() bool {
			return queryHasData(t, `sum(grove_podcliqueset_update_duration_seconds_count) > 0`)
		}, 2*time.Minute, time.Second, "an ended update is observed")
		requireNeverFired(t, "GroveUpdateStalled", start)
		// One whose replacement can never be placed: past its 5 s deadline, it is stalled.
		updateWorker(t, ns, "stalls", func(ps *corev1.PodSpec) { ps.NodeSelector = map[string]string{"grove.test/nowhere": "true"} })
		waitFiring(t, "GroveUpdateStalled")
	})

	t.Run("admission refusing most requests", func(t *testing.T) {
		requireNeverFired(t, "GroveAdmissionDenying", start)
		ns := c.NewNamespace(t)
		// MNNVL is off in this configuration: grove-webhook refuses a clique naming an MNNVL
		// group, whoever sends it. Refuse until over half of the PodCliqueSet requests were.
		require.Eventually(t, func() bool {
			for i := range 10 {
				pcs := builders.PodCliqueSet(ns, fmt.Sprintf("refused-%d", i)).Clique("worker", 1, builders.Annotate(grovev1alpha1.AnnotationMNNVLGroup, "nvl")).Obj()
				err := c.Client().Create(ctx, pcs, client.DryRunAll)
				require.Error(t, err)
				require.Contains(t, err.Error(), "denied the request")
			}
			return queryHasData(t, `sum(rate(grove_admission_requests_total{kind="PodCliqueSet",result="denied"}[10m])) / sum(rate(grove_admission_requests_total{kind="PodCliqueSet"}[10m])) > 0.6`)
		}, 2*time.Minute, time.Second, "the webhook's denials are counted")
		waitFiring(t, "GroveAdmissionDenying")
	})

	t.Run("a backend that cannot write its scheduler's objects", func(t *testing.T) {
		requireNeverFired(t, "GroveBackendSyncFailing", start)
		ns := denySchedulingObjects(t)
		pcs := builders.PodCliqueSet(ns, "unsynced").Clique("worker", 2).Obj()
		require.NoError(t, c.Client().Create(ctx, pcs))
		waitFiring(t, "GroveBackendSyncFailing")
	})

	t.Run("every dashboard panel answers", func(t *testing.T) {
		require.Eventually(t, func() bool {
			return queryHasData(t, fmt.Sprintf(`grove_pods_gated{namespace=%q,reason="ParentClique"}`, kept))
		}, time.Minute, time.Second, "the worker held at start by its leader is counted")
		for _, p := range dashboardQueries(t) {
			assert.Truef(t, queryHasData(t, p.expr), "panel %q: %s returns no data", p.panel, p.expr)
		}
	})

	t.Run("a controller without a leader", func(t *testing.T) {
		requireNeverFired(t, "GroveNoLeader", start)
		trainer.Stop()
		waitFiring(t, "GroveNoLeader")
	})

	t.Run("the webhook unreachable", func(t *testing.T) {
		requireNeverFired(t, "GroveWebhookDown", start)
		webhook.Stop()
		waitFiring(t, "GroveWebhookDown")
	})
}

// TestTheShippedRulesPassPromtool runs Prometheus' own checks on the shipped rules: `promtool
// check rules` (syntax, expressions, templates) and `promtool test rules` with series that hold
// each alert's cause for just under and just over its `for`, so the shipped durations are the
// ones documented.
func TestTheShippedRulesPassPromtool(t *testing.T) {
	promtool, err := toolpath.Bin("promtool")
	require.NoError(t, err)
	dir := t.TempDir()
	rules, err := cluster.WritePrometheusRules(filepath.Join(dir, "rules.yaml"), 0)
	require.NoError(t, err)
	out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s", out)

	testFile := filepath.Join(dir, "rules_test.yaml")
	require.NoError(t, os.WriteFile(testFile, []byte(ruleTests), 0o600))
	out, err = exec.Command(promtool, "test", "rules", testFile).CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
}

// ruleTests hold each alert's cause from time 0 and check it is not firing just before its `for`
// and firing just after (promtool test rules' format; rules.yaml is beside it).
const ruleTests = `rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'grove_podgangs_unscheduled{namespace="team",backend="kube-scheduler",reason="Unschedulable"}'
        values: '1x30'
    alert_rule_test:
      - {eval_time: 14m, alertname: GroveGangUnschedulable, exp_alerts: []}
      - eval_time: 16m
        alertname: GroveGangUnschedulable
        exp_alerts:
          - exp_labels: {severity: warning, namespace: team, backend: kube-scheduler}
            exp_annotations:
              summary: A gang cannot be placed
              description: "Namespace team has had an Unschedulable PodGang under the kube-scheduler backend for 15 minutes (1 now): the scheduler finds no room for the whole gang. kubectl grove status on the PodCliqueSet shows the scheduler's message."
  - interval: 1m
    input_series:
      - series: 'grove_backend_sync_errors_total{job="backend-controller-kai-scheduler",backend="kai-scheduler",reason="Forbidden"}'
        values: '0+3x30'
    alert_rule_test:
      - {eval_time: 9m, alertname: GroveBackendSyncFailing, exp_alerts: []}
      - eval_time: 16m
        alertname: GroveBackendSyncFailing
        exp_alerts:
          - exp_labels: {severity: warning, backend: kai-scheduler, reason: Forbidden}
            exp_annotations:
              summary: A scheduler backend fails to sync gangs
              description: "The kai-scheduler backend-controller has failed to write its scheduler's objects (Forbidden) for 10 minutes; the gangs' pods stay gated until it succeeds. Its log names the PodGang."
  - interval: 1m
    input_series:
      - series: 'up{job="grove-webhook",instance="a"}'
        values: '1 1 0x20'
    alert_rule_test:
      - {eval_time: 1m, alertname: GroveWebhookDown, exp_alerts: []}
      - {eval_time: 6m, alertname: GroveWebhookDown, exp_alerts: []}
      - eval_time: 8m
        alertname: GroveWebhookDown
        exp_alerts:
          - exp_labels: {severity: critical}
            exp_annotations:
              summary: No grove-webhook replica answers
              description: "No grove-webhook replica has been scraped for 5 minutes. Its webhook configurations fail closed, so PodCliqueSets, TrainJobs and their children cannot be created or changed."
  - interval: 1m
    input_series:
      - series: 'up{job="trainer-controller",instance="a"}'
        values: '1x20'
      - series: 'leader_election_master_status{job="trainer-controller",instance="a",name="trainer-controller"}'
        values: '1 1 1 stale'
    alert_rule_test:
      - {eval_time: 2m, alertname: GroveNoLeader, exp_alerts: []}
      - {eval_time: 7m, alertname: GroveNoLeader, exp_alerts: []}
      - eval_time: 10m
        alertname: GroveNoLeader
        exp_alerts:
          - exp_labels: {severity: critical, job: trainer-controller}
            exp_annotations:
              summary: A controller binary has no leader
              description: "No trainer-controller replica has held its leader lease for 5 minutes: nothing reconciles what that binary owns."
  - interval: 1m
    input_series:
      - series: 'grove_admission_requests_total{job="grove-webhook",kind="PodCliqueSet",result="allowed",reason="None"}'
        values: '0+1x40'
      - series: 'grove_admission_requests_total{job="grove-webhook",kind="PodCliqueSet",result="denied",reason="Invalid"}'
        values: '0+4x40'
    alert_rule_test:
      - {eval_time: 9m, alertname: GroveAdmissionDenying, exp_alerts: []}
      - eval_time: 25m
        alertname: GroveAdmissionDenying
        exp_alerts:
          - exp_labels: {severity: info, kind: PodCliqueSet}
            exp_annotations:
              summary: Admission refuses most requests for a kind
              description: "Over half of the PodCliqueSet requests were denied over the last 10 minutes: a client or a pipeline keeps sending what the webhook refuses (the refusals name the field and the rule)."
`

// failingRuntime is a torch runtime on the PodCliqueSet path whose node pod exits 1 two seconds
// after it starts, with no restart allowed: the TrainJob and its PodCliqueSet fail.
func failingRuntime() *builders.RuntimeSpecBuilder {
	return builders.RuntimeSpec("busybox:1.36", 1).OnePodJobs().MaxRestarts(0).
		PodLabel(cluster.LabelExitCode, "1").PodAnnotation(cluster.AnnotationExitAfter, "2s").
		PodSpecEdit(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyNever })
}

// caClient trusts the cluster's CA, which signed the trainer status server's certificate.
func caClient(t *testing.T) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(cluster.Current.CAPEM()))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// progressDeadline gives a clique's rolling update a progress deadline.
func progressDeadline(d time.Duration) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		if c.RollingUpdate == nil {
			c.RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{}
		}
		c.RollingUpdate.ProgressDeadline = &metav1.Duration{Duration: d}
	}
}

// updateWorker changes the worker clique's pod template of a PodCliqueSet.
func updateWorker(t *testing.T, ns, name string, edit func(*corev1.PodSpec)) {
	t.Helper()
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, cluster.Current.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pcs))
	edit(&pcs.Spec.Template.Cliques[0].Spec.PodSpec)
	require.NoError(t, cluster.Current.Client().Update(context.Background(), pcs))
}

// waitPhase waits until a PodCliqueSet reports the phase.
func waitPhase(t *testing.T, ns, name string, phase grovev1alpha1.PodCliqueSetPhase) {
	t.Helper()
	require.Eventually(t, func() bool {
		pcs := &grovev1alpha1.PodCliqueSet{}
		return cluster.Current.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pcs) == nil && pcs.Status.Phase == phase
	}, 2*time.Minute, 250*time.Millisecond, "PodCliqueSet %s/%s reaches %s", ns, name, phase)
}

// denySchedulingObjects makes a namespace in which the API server refuses every create in
// scheduling.k8s.io (the Workload API objects kube-scheduler's backend writes for a gang), by a
// ValidatingAdmissionPolicy, and returns it.
func denySchedulingObjects(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	k := cluster.Current.Client()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sync-fails", Labels: map[string]string{"grove.test/deny-scheduling": "true"}}}
	require.NoError(t, k.Create(ctx, ns))
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-scheduling-objects"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: ns.Labels},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"scheduling.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "this namespace refuses scheduling objects (a test of backend sync errors)"}},
		},
	}
	require.NoError(t, k.Create(ctx, policy))
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-scheduling-objects"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	require.NoError(t, k.Create(ctx, binding))
	t.Cleanup(func() {
		_ = k.Delete(ctx, binding)
		_ = k.Delete(ctx, policy)
	})
	// A policy takes effect asynchronously: wait until it refuses, or the backend's first sync
	// could succeed and never be retried. A cluster-scoped object of the group is always matched.
	require.Eventually(t, func() bool {
		probe := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "deny-probe"}, Value: 1}
		err := k.Create(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), policy.Name)
	}, time.Minute, 250*time.Millisecond, "the ValidatingAdmissionPolicy refuses scheduling objects")
	return ns.Name
}

// dashboardPanel is what the test reads of a Grafana panel.
type dashboardPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// panelQuery is one query of the shipped dashboard.
type panelQuery struct{ panel, expr string }

// dashboardQueries reads every panel's queries from the shipped dashboard, with Grafana's
// variables as a user who picks every namespace would have them.
func dashboardQueries(t *testing.T) []panelQuery {
	t.Helper()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, cluster.MonitoringDir, "grove-dashboard.json"))
	require.NoError(t, err)
	var dashboard struct {
		Panels []dashboardPanel `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dashboard))
	vars := strings.NewReplacer("$namespace", ".*", "$__rate_interval", "10m")
	var queries []panelQuery
	// A collapsed row holds its panels itself.
	var panels []dashboardPanel
	for _, p := range dashboard.Panels {
		panels = append(panels, p)
		panels = append(panels, p.Panels...)
	}
	for _, p := range panels {
		if p.Type == "row" {
			continue
		}
		require.NotEmptyf(t, p.Targets, "panel %q has no query", p.Title)
		for _, target := range p.Targets {
			queries = append(queries, panelQuery{panel: p.Title, expr: vars.Replace(target.Expr)})
		}
	}
	require.NotEmpty(t, queries)
	return queries
}

// query runs an instant query; a query Prometheus cannot parse fails the test.
func query(t *testing.T, q string) model.Vector {
	t.Helper()
	v, warnings, err := prom.API.Query(context.Background(), q, time.Now())
	require.NoError(t, err, "query %s", q)
	require.Empty(t, warnings, "query %s", q)
	vec, ok := v.(model.Vector)
	require.Truef(t, ok, "query %s returns a %s, not a vector", q, v.Type())
	return vec
}

// queryHasData reports whether a query returns at least one sample that is a number.
func queryHasData(t *testing.T, q string) bool {
	t.Helper()
	for _, s := range query(t, q) {
		if !math.IsNaN(float64(s.Value)) {
			return true
		}
	}
	return false
}

// waitEvaluations waits until the rule group was evaluated n more times.
func waitEvaluations(t *testing.T, n int) {
	t.Helper()
	first := lastEvaluation(t)
	require.Eventually(t, func() bool {
		return lastEvaluation(t).Sub(first) >= time.Duration(n)*time.Second
	}, time.Minute, 250*time.Millisecond, "%d rule evaluations", n)
}

// lastEvaluation is when Prometheus last evaluated the shipped rules; every rule must have
// evaluated without an error.
func lastEvaluation(t *testing.T) time.Time {
	t.Helper()
	rules, err := prom.API.Rules(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, rules.Groups, 1)
	var last time.Time
	for _, r := range rules.Groups[0].Rules {
		a, ok := r.(promv1.AlertingRule)
		require.Truef(t, ok, "the shipped rules are alerts: %#v", r)
		require.Emptyf(t, a.LastError, "alert %s evaluates", a.Name)
		if a.LastEvaluation.After(last) {
			last = a.LastEvaluation
		}
	}
	return last
}

// requireNeverFired fails if any evaluation since start saw the alert firing. A pending alert is
// not one: its cause held for less than its `for` (a missed scrape or two on a loaded machine
// makes GroveWebhookDown and GroveNoLeader pending for a second).
func requireNeverFired(t *testing.T, alert string, start time.Time) {
	t.Helper()
	window := int(math.Ceil(time.Since(start).Seconds()))
	seen := query(t, fmt.Sprintf(`count_over_time(ALERTS{alertname=%q,alertstate="firing"}[%ds])`, alert, window))
	if len(seen) == 0 {
		return
	}
	// Say when, and which scrapes failed meanwhile: the cluster's logs are kept for that time.
	require.Failf(t, "alert fired before its scenario", "%s fired before its scenario: %v\nactive (pending or firing) at: %s\nscrapes that failed: %s",
		alert, seen, sampleTimes(fmt.Sprintf(`ALERTS{alertname=%q}[%ds]`, alert, window), nil),
		sampleTimes(fmt.Sprintf(`up[%ds]`, window), func(v model.SampleValue) bool { return v == 0 }))
}

// sampleTimes runs a range selector and lists each series with the times of its samples that
// keep (nil: all) holds for, or says why it could not: it only explains a failure.
func sampleTimes(q string, keep func(model.SampleValue) bool) string {
	v, _, err := prom.API.Query(context.Background(), q, time.Now())
	if err != nil {
		return fmt.Sprintf("(query %s: %v)", q, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return fmt.Sprintf("(query %s returned a %s)", q, v.Type())
	}
	var b strings.Builder
	for _, s := range m {
		var times []string
		for _, p := range s.Values {
			if keep == nil || keep(p.Value) {
				times = append(times, p.Timestamp.Time().UTC().Format("15:04:05.000"))
			}
		}
		if len(times) > 0 {
			fmt.Fprintf(&b, "\n  %s: %s", s.Metric, strings.Join(times, " "))
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func waitFiring(t *testing.T, alert string) {
	t.Helper()
	require.Eventuallyf(t, func() bool {
		return len(query(t, fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}`, alert))) > 0
	}, 3*time.Minute, time.Second, "%s fires", alert)
}

func waitResolved(t *testing.T, alert string) {
	t.Helper()
	require.Eventuallyf(t, func() bool {
		return len(query(t, fmt.Sprintf(`ALERTS{alertname=%q}`, alert))) == 0
	}, 3*time.Minute, time.Second, "%s resolves", alert)
}

// TestEveryAlertHasAScenario keeps the list of scenarios and the shipped rules in step: an alert
// added to the PrometheusRule without a scenario here fails.
func TestEveryAlertHasAScenario(t *testing.T) {
	rules, err := prom.API.Rules(context.Background(), nil)
	require.NoError(t, err)
	var shipped []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if a, ok := r.(promv1.AlertingRule); ok {
				shipped = append(shipped, a.Name)
			}
		}
	}
	assert.ElementsMatch(t, alerts, shipped)
}
