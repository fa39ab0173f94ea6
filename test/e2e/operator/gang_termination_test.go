package operatore2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// cliqueUIDs maps each PodClique of a PodCliqueSet to its UID; a gang termination replaces them.
func cliqueUIDs(t *testing.T, ns, pcs string) map[string]types.UID {
	t.Helper()
	list := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
	out := map[string]types.UID{}
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out[p.Name] = p.UID
		}
	}
	return out
}

// makeUnready marks a Running pod not Ready, as a failing readiness probe would; kwok leaves it so.
func makeUnready(t *testing.T, ns, name string) {
	t.Helper()
	setReady(t, ns, name, corev1.ConditionFalse)
}

func setReady(t *testing.T, ns, name string, status corev1.ConditionStatus) {
	t.Helper()
	pod := &corev1.Pod{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod))
	patched := pod.DeepCopy()
	for i := range patched.Status.Conditions {
		if patched.Status.Conditions[i].Type == corev1.PodReady || patched.Status.Conditions[i].Type == corev1.ContainersReady {
			patched.Status.Conditions[i].Status = status
			patched.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	require.NoError(t, k8s().Status().Patch(context.Background(), patched, client.MergeFrom(pod)))
}

// gangPCS is a replica of a standalone clique "a" (2 pods, minAvailable 2) and "b", plus a
// scaling group "g" of clique "m" with the given replicas and minAvailable.
func gangPCS(ns, name string, delay *time.Duration, groupReplicas, groupMin int32, groupDelay *time.Duration) *grovev1alpha1.PodCliqueSet {
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("a", 2), clique("b", 1), clique("m", 1)},
			PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "g", CliqueNames: []string{"m"}, Replicas: ptr.To(groupReplicas), MinAvailable: ptr.To(groupMin)},
			},
		}},
	}
	if delay != nil {
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: *delay}
	}
	if groupDelay != nil {
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TerminationDelay = &metav1.Duration{Duration: *groupDelay}
	}
	return pcs
}

func durationPtr(d time.Duration) *time.Duration { return &d }

// startGang creates the PodCliqueSet and waits until every clique was available and the
// PodCliqueSet counts every replica available: a later count below that proves a pass that saw
// the change.
func startGang(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, pods int) map[string]types.UID {
	t.Helper()
	require.NoError(t, k8s().Create(context.Background(), pcs))
	waitRunning(t, pcs.Namespace, pcs.Name, pods, 2*time.Minute)
	waitCliquesWereAvailable(t, pcs.Namespace, pcs.Name)
	waitAvailable(t, pcs.Namespace, pcs.Name, pcs.Spec.Replicas)
	return cliqueUIDs(t, pcs.Namespace, pcs.Name)
}

// waitCliquesWereAvailable waits until every PodClique of the PodCliqueSet reports it was
// available.
func waitCliquesWereAvailable(t *testing.T, ns, pcs string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &grovev1alpha1.PodCliqueList{}
		require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
		for _, p := range list.Items {
			if !p.Status.WasAvailable {
				return false
			}
		}
		return len(list.Items) > 0
	}, time.Minute, 100*time.Millisecond, "every PodClique was available")
}

// waitBreached waits for the clique's breach and returns when it began, as its condition says
// (to the second).
func waitBreached(t *testing.T, ns, pclq string) time.Time {
	t.Helper()
	var c *metav1.Condition
	require.Eventually(t, func() bool {
		p := &grovev1alpha1.PodClique{}
		if k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pclq}, p) != nil {
			return false
		}
		c = meta.FindStatusCondition(p.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
		return c != nil && c.Status == metav1.ConditionTrue
	}, 30*time.Second, 100*time.Millisecond, "%s breached", pclq)
	return c.LastTransitionTime.Time
}

// waitAvailable waits until the PodCliqueSet's status counts n available replicas: the operator
// has seen its cliques' state and acted on it.
func waitAvailable(t *testing.T, ns, pcs string, n int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pcs}, got) == nil && got.Status.AvailableReplicas == n
	}, 30*time.Second, 100*time.Millisecond, "%s has %d available replicas", pcs, n)
}

// cliqueDeletes is the operator's successful deletes of PodCliques in a namespace that the audit
// log holds up to a mark made now.
func cliqueDeletes(t *testing.T, ns string) []string {
	t.Helper()
	mark := cluster.Current.AuditMark(t)
	writes, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return byOurBinaries(ns)(ev) && ev.Verb == "delete" && ev.ObjectRef.Resource == "podcliques" &&
			ev.ResponseStatus.Code < 300 && !ev.StageTimestamp.After(mark)
	})
	require.NoError(t, err)
	names := make([]string, 0, len(writes))
	for _, w := range writes {
		names = append(names, w.ObjectRef.Name)
	}
	return names
}

func replaced(before, after map[string]types.UID) (changed, kept []string) {
	for name, uid := range before {
		if after[name] == uid {
			kept = append(kept, name)
		} else {
			changed = append(changed, name)
		}
	}
	return changed, kept
}

func TestStandaloneCliqueBreachPastTheDelayTerminatesThePodCliqueSetReplica(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	before := startGang(t, gangPCS(ns, "gt", durationPtr(2*time.Second), 1, 1, nil), 4)
	makeUnready(t, ns, "gt-0-a-1")
	waitBreached(t, ns, "gt-0-a")
	require.Eventually(t, func() bool {
		changed, _ := replaced(before, cliqueUIDs(t, ns, "gt"))
		return len(changed) == len(before)
	}, time.Minute, 100*time.Millisecond, "every PodClique of the replica is recreated, healthy ones too")
	waitRunning(t, ns, "gt", 4, 2*time.Minute)
	assertEvent(t, ns, "gt", "GangTerminated")
	assertLogged(t, ns, "gt", "gang termination: replica terminated", "PodClique gt-0-a below minAvailable")
}

func TestBreachWithoutTerminationDelayIsReportedButNothingIsDeleted(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	before := startGang(t, gangPCS(ns, "off", nil, 1, 1, nil), 4)
	makeUnready(t, ns, "off-0-a-1")
	waitBreached(t, ns, "off-0-a")
	// The PodCliqueSet's pass that counts the replica unavailable has seen the breach, and
	// would have terminated the replica before writing it.
	waitAvailable(t, ns, "off", 0)
	assert.Empty(t, cliqueDeletes(t, ns), "no PodClique is deleted")
	_, kept := replaced(before, cliqueUIDs(t, ns, "off"))
	assert.Len(t, kept, len(before), "gang termination is disabled without terminationDelay")
}

func TestBreachThatRecoversBeforeTheDelayIsNotTerminated(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	before := startGang(t, gangPCS(ns, "heal", durationPtr(4*time.Second), 1, 1, nil), 4)
	makeUnready(t, ns, "heal-0-a-1")
	breached := waitBreached(t, ns, "heal-0-a")
	setReady(t, ns, "heal-0-a-1", corev1.ConditionTrue)
	cluster.SleepPast(breached, 4*time.Second) // the termination delay, counted from the breach
	_, kept := replaced(before, cliqueUIDs(t, ns, "heal"))
	assert.Len(t, kept, len(before))
	p := &grovev1alpha1.PodClique{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "heal-0-a"}, p))
	assert.Equal(t, grovev1alpha1.ReasonSufficientReadyPods, meta.FindStatusCondition(p.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached).Reason)
}

func TestNeverAvailableCliquesAreNeverTerminated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := gangPCS(ns, "never", durationPtr(time.Second), 1, 1, nil)
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "kai-scheduler" // stays gated: never available
	}
	require.NoError(t, k8s().Create(ctx, pcs))
	require.Eventually(t, func() bool { return len(cliqueUIDs(t, ns, "never")) == 3 }, time.Minute, 100*time.Millisecond)
	before := cliqueUIDs(t, ns, "never")
	// The pods wait for an acknowledgement that never comes: the clique's first status is
	// written when the grace for it ends, and says the clique was never available.
	var c *metav1.Condition
	require.Eventually(t, func() bool {
		p := &grovev1alpha1.PodClique{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "never-0-a"}, p))
		c = meta.FindStatusCondition(p.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
		return c != nil
	}, time.Minute, 100*time.Millisecond)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, grovev1alpha1.ReasonNeverAvailable, c.Reason)
	cluster.SleepPast(c.LastTransitionTime.Time, 3*time.Second) // three termination delays
	_, kept := replaced(before, cliqueUIDs(t, ns, "never"))
	assert.Len(t, kept, 3)
}

func TestScalingGroupReplicaIsRecycledWhileTheGroupStaysAboveMinAvailable(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	before := startGang(t, gangPCS(ns, "cycle", durationPtr(2*time.Second), 2, 1, nil), 5)
	makeUnready(t, ns, "cycle-0-g-1-m-0")
	waitBreached(t, ns, "cycle-0-g-1-m")
	require.Eventually(t, func() bool {
		changed, _ := replaced(before, cliqueUIDs(t, ns, "cycle"))
		return len(changed) == 1
	}, time.Minute, 100*time.Millisecond)
	changed, kept := replaced(before, cliqueUIDs(t, ns, "cycle"))
	assert.Equal(t, []string{"cycle-0-g-1-m"}, changed, "only the breached group replica is recreated")
	assert.ElementsMatch(t, []string{"cycle-0-a", "cycle-0-b", "cycle-0-g-0-m"}, kept)
	waitRunning(t, ns, "cycle", 5, 2*time.Minute)
}

func TestScalingGroupBelowMinAvailableEscalatesToThePodCliqueSetReplica(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	before := startGang(t, gangPCS(ns, "esc", durationPtr(2*time.Second), 2, 2, nil), 5)
	makeUnready(t, ns, "esc-0-g-1-m-0")
	require.Eventually(t, func() bool {
		changed, _ := replaced(before, cliqueUIDs(t, ns, "esc"))
		return len(changed) == len(before)
	}, time.Minute, 100*time.Millisecond, "the whole PodCliqueSet replica is recreated")
}

func TestScalingGroupOverrideDelayIsUsedInsteadOfThePodCliqueSetDelay(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	before := startGang(t, gangPCS(ns, "ovr", durationPtr(time.Hour), 2, 2, durationPtr(time.Second)), 5)
	begin := time.Now()
	makeUnready(t, ns, "ovr-0-g-0-m-0")
	require.Eventually(t, func() bool {
		changed, _ := replaced(before, cliqueUIDs(t, ns, "ovr"))
		return len(changed) == len(before)
	}, time.Minute, 100*time.Millisecond, "terminated after the group's 1s, not the PodCliqueSet's hour")
	assert.Less(t, time.Since(begin), time.Minute)
}

func assertEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	require.Eventually(t, func() bool {
		events := &corev1.EventList{}
		if k8s().List(context.Background(), events, client.InNamespace(ns)) != nil {
			return false
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "event %s on %s", reason, name)
}

// assertLogged waits for a line of the operator's log (text format: time, level, message, then
// the fields as JSON) whose message starts with msg, about the PodCliqueSet ns/name (the key
// controller-runtime puts on every line of its reconcile), with a reason containing reason.
func assertLogged(t *testing.T, ns, name, msg, reason string) {
	t.Helper()
	var seen []string
	require.Eventually(t, func() bool {
		seen = seen[:0]
		for _, line := range strings.Split(operator.Log(), "\n") {
			fields := strings.Split(line, "\t")
			if len(fields) < 3 {
				continue
			}
			var entry struct {
				Msg          string `json:"-"`
				Reason       string `json:"reason"`
				PodCliqueSet struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"PodCliqueSet"`
			}
			if json.Unmarshal([]byte(fields[len(fields)-1]), &entry) != nil || entry.PodCliqueSet.Name != name || entry.PodCliqueSet.Namespace != ns {
				continue
			}
			entry.Msg = fields[len(fields)-2]
			seen = append(seen, entry.Msg)
			if strings.HasPrefix(entry.Msg, msg) && strings.Contains(entry.Reason, reason) {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "a log line %q with reason %q about %s/%s; lines about it: %q", msg, reason, ns, name, seen)
}
