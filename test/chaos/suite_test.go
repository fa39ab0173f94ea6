package chaos

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// roundEvery is how often a new wave of batch work starts during the fault window.
const roundEvery = 20 * time.Second

func TestMixedWorkloadKeepsEveryInvariantUnderSeededFaults(t *testing.T) {
	s, err := loadSettings()
	require.NoError(t, err)
	fmt.Printf("chaos seed %d, fault window %s (CHAOS_SEED=%d reproduces this fault schedule)\n", s.seed, s.duration, s.seed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := newLedger(os.Stdout)
	defer func() {
		if t.Failed() {
			v := l.violationList()
			verdict = fmt.Sprintf("chaos verdict: FAILED with CHAOS_SEED=%d CHAOS_DURATION=%s, %d violations:\n  %s", s.seed, s.duration, len(v), strings.Join(v, "\n  "))
		}
	}()
	r := newRun(ctx, cluster.Current, l)
	stop := make(chan struct{})
	defer close(stop)
	go r.audit.follow(stop)
	defer r.audit.close()
	require.NoError(t, r.watch())
	go r.pollUntil(stop)

	require.NoError(t, createPersistently(ctx, r.k, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inferenceNS}}, l.logf))
	probe := trainJobCases[0].runtime(inferenceNS)
	probe.Name = probeRuntime
	require.NoError(t, createPersistently(ctx, r.k, probe, l.logf))
	for _, name := range sortedKeys32(inferenceSets) {
		require.NoError(t, createPersistently(ctx, r.k, inferencePCS(name, inferenceSets[name]), l.logf))
	}
	// A workload whose claims step keeps failing the whole run: admitted with its template,
	// which then goes.
	require.NoError(t, createPersistently(ctx, r.k, stuckTemplate(), l.logf))
	require.NoError(t, createPersistently(ctx, r.k, stuck(), l.logf))
	require.NoError(t, client.IgnoreNotFound(r.k.Delete(ctx, stuckTemplate())))
	// A claim the operator made from the template before it went is deleted too: only then does
	// the step fail for good (it cannot make the claim again).
	require.Eventually(t, func() bool {
		_ = r.k.DeleteAllOf(ctx, &resourcev1.ResourceClaim{}, client.InNamespace(inferenceNS), client.MatchingLabels{grovev1alpha1.LabelPartOf: stuckPCS})
		got := &grovev1alpha1.PodCliqueSet{}
		return r.k.Get(ctx, client.ObjectKey{Namespace: inferenceNS, Name: stuckPCS}, got) == nil && len(got.Status.LastErrors) > 0
	}, 2*time.Minute, time.Second, "the stuck workload reports its failing step")
	require.True(t, r.checkConverged(3*time.Minute), "the inference workload starts")

	l.logf("fault-free reference round")
	r.reference = r.round(0, true)
	for _, c := range trainingCases {
		got, ok := r.reference[c.name]
		l.check(invReference, ok && got == c.expected(), "%s: the fault-free run ended %+v (done: %v), computed %+v", c.name, got, ok, c.expected())
	}

	plan := schedule(s.seed, s.duration)
	l.logf("fault window of %s starts: %d faults scheduled", s.duration, len(plan))
	windowStart := time.Now()
	var rounds sync.WaitGroup
	roundsStarted := make(chan struct{})
	go func() {
		defer close(roundsStarted)
		for n := 1; time.Since(windowStart) < s.duration; n++ {
			rounds.Add(1)
			go func(n int) {
				defer rounds.Done()
				r.round(n, false)
			}(n)
			r.scaleGroup(2 + int32(n%2))
			r.updateCoherent()
			time.Sleep(min(roundEvery, time.Until(windowStart.Add(s.duration))))
		}
	}()
	for _, f := range plan {
		if wait := time.Until(windowStart.Add(f.at)); wait > 0 {
			time.Sleep(wait)
		}
		if time.Since(windowStart) >= s.duration {
			break
		}
		r.inject(f)
	}
	l.logf("fault window over; waiting for the last rounds and recoveries")
	<-roundsStarted
	rounds.Wait()
	r.recoveries.Wait()

	r.checkConverged(3 * time.Minute)
	r.checkQuietAtRest(s.duration)
	r.checkLeadership()
	r.deleteInference()
	for _, p := range fleet.finalPanics() {
		l.violate(invNoPanic, "%s", p)
	}
	l.check(invNoPanic, true, "")

	r.addNotes()
	fmt.Println("\n" + l.table(s.seed, s.duration))
	assert.Empty(t, l.violationList(), "violations (seed %d)", s.seed)
}

// checkConverged waits until every replica runs, each controller has a leader, and the inference
// workload has exactly the pods a fault-free run has, all Running and Ready.
func (r *run) checkConverged(timeout time.Duration) bool {
	r.mu.Lock()
	want := expectedInferencePods(r.scaled)
	r.mu.Unlock()
	sort.Strings(want)
	var why string
	r.waitFor(time.Second, timeout, func() bool {
		why = r.convergence(want)
		return why == ""
	})
	if why != "" {
		fmt.Printf("not converged; the Coherent workload %s:\n%s", coherentSet, r.describeCoherent())
	}
	return r.l.check(invConverged, why == "", "not converged after %s: %s", timeout, why)
}

func (r *run) convergence(want []string) string {
	if !fleet.allRunning() {
		return "a replica is not running"
	}
	for _, b := range binaries {
		if b.lease != "" && r.leaseHolder(b) == nil {
			return b.name + " has no leader"
		}
	}
	pods := r.inferencePods(false)
	r.mu.Lock()
	revision := r.revision
	r.mu.Unlock()
	var names []string
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || !podReady(&p) || len(p.Spec.SchedulingGates) > 0 {
			return fmt.Sprintf("pod %s is %s, ready=%v, gates=%d", p.Name, p.Status.Phase, podReady(&p), len(p.Spec.SchedulingGates))
		}
		if p.Labels[grovev1alpha1.LabelPartOf] == coherentSet && strings.Contains(p.Name, "-worker-") && !runsRevision(&p, revision) {
			return fmt.Sprintf("pod %s does not run %s's latest worker template (revision %d)", p.Name, coherentSet, revision)
		}
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		return fmt.Sprintf("pods %v, want %v", names, want)
	}
	for name, replicas := range inferenceSets {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if err := r.k.Get(r.ctx, client.ObjectKey{Namespace: inferenceNS, Name: name}, pcs); err != nil {
			return err.Error()
		}
		if pcs.Status.AvailableReplicas != replicas {
			return fmt.Sprintf("%s has %d available replicas, want %d", name, pcs.Status.AvailableReplicas, replicas)
		}
		if up := pcs.Status.UpdateProgress; name == coherentSet && revision > 0 && (up == nil || up.UpdateEndedAt == nil) {
			return fmt.Sprintf("%s's Coherent update has not ended: %+v", name, up)
		}
	}
	return ""
}

// checkQuietAtRest counts each binary's writes (lease renewals excluded) over a window once the
// workload settled: controllers that converged write (next to) nothing.
func (r *run) checkQuietAtRest(faultWindow time.Duration) {
	window := 30 * time.Second
	if faultWindow >= 10*time.Minute {
		window = time.Minute
	}
	time.Sleep(5 * time.Second) // let the last status writes land
	from := time.Now()
	time.Sleep(window)
	to := time.Now()
	var figures []string
	perObject := map[string]int{}
	for _, b := range binaries {
		users := map[string]bool{}
		for _, rep := range fleet.of(b.name) {
			users[rep.user()] = true
		}
		writes := r.audit.where(func(ev cluster.AuditEvent) bool {
			return users[ev.User.Username] && !isLeaseWrite(ev, b.lease) && ev.StageTimestamp.After(from) && ev.StageTimestamp.Before(to)
		})
		for _, w := range writes {
			perObject[fmt.Sprintf("%s %s/%s %s/%s by %s", w.ObjectRef.Resource, w.ObjectRef.Subresource, w.ObjectRef.Namespace, w.ObjectRef.Name, w.Verb, b.name)]++
		}
		perMinute := float64(len(writes)) / window.Minutes()
		var sample []string
		for i, w := range writes {
			if i == 5 {
				break
			}
			sample = append(sample, fmt.Sprintf("%s %s %s/%s", w.Verb, w.ObjectRef.Resource, w.ObjectRef.Namespace, w.ObjectRef.Name))
		}
		r.l.check(invQuiet, perMinute <= maxWritesPerMinuteAtRest, "%s wrote %.1f/min at rest (bound %.0f): %v", b.name, perMinute, maxWritesPerMinuteAtRest, sample)
		figures = append(figures, fmt.Sprintf("%s %.1f", b.name, perMinute))
	}
	r.l.note("Writes per minute at rest (over %s, lease renewals excluded): %s.", window, strings.Join(figures, ", "))
	// No single object is rewritten while nothing about it changes — the stuck workload's failing
	// step included.
	for _, key := range slices.Sorted(maps.Keys(perObject)) {
		perMinute := float64(perObject[key]) / window.Minutes()
		r.l.check(invQuietObject, perMinute <= maxWritesPerObjectPerMinuteAtRest, "%s: %.1f writes/min at rest (bound %.0f)", key, perMinute, maxWritesPerObjectPerMinuteAtRest)
	}
	if len(perObject) == 0 {
		r.l.check(invQuietObject, true, "no object written at rest")
	}
	stuckNow := &grovev1alpha1.PodCliqueSet{}
	err := r.k.Get(r.ctx, client.ObjectKey{Namespace: inferenceNS, Name: stuckPCS}, stuckNow)
	r.l.check(invQuietObject, err == nil && len(stuckNow.Status.LastErrors) > 0, "the stuck workload reports its failing step (%v, %v)", err, stuckNow.Status.LastErrors)
}

// checkLeadership checks every write of the run: a controller replica writes only while it holds
// its lease, so two replicas never act in overlapping terms.
func (r *run) checkLeadership() {
	events := r.audit.where(nil)
	for _, b := range binaries {
		if b.lease == "" {
			continue
		}
		users := map[string]bool{}
		for _, rep := range fleet.of(b.name) {
			users[rep.user()] = true
		}
		writes := 0
		for _, ev := range events {
			if users[ev.User.Username] && !isLeaseWrite(ev, b.lease) {
				writes++
			}
		}
		bad := leadershipViolations(events, b.lease, users)
		for i := 0; i < writes-len(bad); i++ {
			r.l.check(invOneActingLeader, true, "")
		}
		for _, v := range bad {
			r.l.check(invOneActingLeader, false, "%s", v)
		}
	}
}

// deleteInference deletes the inference workload and checks that nothing of it is left.
func (r *run) deleteInference() {
	for name := range inferenceSets {
		r.deleteByTest(&grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: inferenceNS, Name: name}})
	}
	for name := range inferenceSets {
		r.checkNoOrphans(inferenceNS, name, 2*time.Minute)
	}
	r.deleteByTest(&trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: inferenceNS, Name: probeRuntime}})
	r.deleteByTest(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inferenceNS}})
}

// addNotes puts the figures that are not counts under the table.
func (r *run) addNotes() {
	r.mu.Lock()
	var takeovers []string
	for _, name := range sortedKeysDur(r.takeovers) {
		var worst time.Duration
		for _, d := range r.takeovers[name] {
			worst = max(worst, d)
		}
		takeovers = append(takeovers, fmt.Sprintf("%s %d× (slowest %s)", name, len(r.takeovers[name]), worst.Round(10*time.Millisecond)))
	}
	r.mu.Unlock()
	if len(takeovers) > 0 {
		r.l.note("Leader takeovers after a SIGKILL (lease %s, retry %s): %s.", leaseDuration, retryPeriod, strings.Join(takeovers, ", "))
	}
	var exits []string
	for name, n := range fleet.unplannedExits() {
		exits = append(exits, fmt.Sprintf("%s %d", name, n))
	}
	sort.Strings(exits)
	if len(exits) > 0 {
		r.l.note("Processes that exited on their own and were restarted, as a Deployment or kubelet would (a lease lost while the API server was down): %s.", strings.Join(exits, ", "))
	}
}

func sortedKeysDur(m map[string][]time.Duration) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
