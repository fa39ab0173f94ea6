package podcliquescalinggroup

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// groupReplica is one group replica as observed:
//   - outdated: its PodCliques run an older PodCliqueSet template;
//   - available: their status counts minAvailable Ready pods (and the pods agree);
//   - podsReady: the pods are Ready although the status does not count them yet;
//   - stale: the status does not describe the spec yet;
//   - oldPods: the status counts pods of an older template.
type groupReplica struct{ outdated, available, podsReady, stale, oldPods bool }

func TestReplicasTakeTheNewTemplateWithinTheGroupsBudget(t *testing.T) {
	old := groupReplica{outdated: true, available: true}
	oldDown := groupReplica{outdated: true}
	fresh := groupReplica{available: true}
	freshDown := groupReplica{}
	for _, tc := range []struct {
		name     string
		budget   *int32
		strategy grovev1alpha1.UpdateStrategyType
		replicas []groupReplica
		unread   bool // the reconciler did not read the pods
		want     []string
	}{
		{name: "no budget set: one available replica at a time, the lowest index first", replicas: []groupReplica{old, old, old}, want: []string{"0"}},
		{name: "maxUnavailable 2: two at once", budget: ptr.To[int32](2), replicas: []groupReplica{old, old, old}, want: []string{"0", "1"}},
		{name: "a replacement not available yet uses the budget", replicas: []groupReplica{freshDown, old, old}, want: []string{"0"}},
		{name: "a replacement available: the next one", replicas: []groupReplica{fresh, old, old}, want: []string{"0", "1"}},
		{name: "outdated replicas that are not available go at once, without budget (upstream #840)",
			replicas: []groupReplica{oldDown, oldDown, old}, want: []string{"0", "1"}},
		{name: "maxUnavailable 2 with one Pending outdated replica: it and one available replica",
			budget: ptr.To[int32](2), replicas: []groupReplica{old, oldDown, old}, want: []string{"0", "1"}},
		{name: "a replacement whose status does not describe its new spec yet is not available", replicas: []groupReplica{{available: true, stale: true}, old, old}, want: []string{"0"}},
		{name: "a replacement whose Ready pods are still the old template's is not available", replicas: []groupReplica{{available: true, oldPods: true}, old, old}, want: []string{"0"}},
		{name: "an outdated replica whose status lags its spec waits and uses the budget: its pods may all be Ready",
			replicas: []groupReplica{old, {outdated: true, available: true, stale: true}, old}, want: nil},
		{name: "an outdated replica whose status lags waits while an outdated Pending one still goes at once",
			replicas: []groupReplica{{outdated: true, available: true, stale: true}, oldDown}, want: []string{"1"}},
		{name: "an outdated replica whose status says down while its pods are Ready waits and uses the budget (status written before they became Ready)",
			replicas: []groupReplica{old, {outdated: true, podsReady: true}, old}, want: nil},
		{name: "an outdated replica short of pods at its template is down whatever its Ready pods: it goes at once",
			replicas: []groupReplica{old, {outdated: true, podsReady: true, oldPods: true}, old}, want: []string{"1"}},
		{name: "pods not read (no status to check against them): a status short of Ready pods is taken as it is",
			unread: true, replicas: []groupReplica{oldDown, old}, want: []string{"0"}},
		{name: "OnDelete: every replica takes the template (users replace the pods)", strategy: grovev1alpha1.OnDeleteStrategy,
			replicas: []groupReplica{old, old, old}, want: []string{"0", "1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := builders.PodCliqueScalingGroup("ns", "inf-0-prefill", "leader").Replicas(int32(len(tc.replicas)), 1).Obj()
			g.Spec.UpdateStrategy = tc.strategy
			if tc.budget != nil {
				g.Spec.RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: tc.budget}
			}
			want, have, ready := map[string]*grovev1alpha1.PodClique{}, map[string]*grovev1alpha1.PodClique{}, map[string]int32{}
			for j, r := range tc.replicas {
				name := "inf-0-prefill-" + strconv.Itoa(j) + "-leader"
				w := builders.PodClique("ns", name).Replicas(2, 1).OfGroupReplica(g.Name, strconv.Itoa(j)).Obj()
				w.Spec.PodCliqueSetGenerationHash = "new"
				h := w.DeepCopy()
				if r.outdated {
					h.Spec.PodCliqueSetGenerationHash = "old"
				}
				if r.available {
					h.Status.ReadyReplicas = 2
				}
				if r.available || r.podsReady {
					ready[name] = 2
				}
				h.Status.UpdatedReplicas = 2
				if r.oldPods {
					h.Status.UpdatedReplicas = 0 // its status still counts the old template's Ready pods
				}
				h.Status.ObservedGeneration = ptr.To(h.Generation)
				if r.stale {
					h.Generation++ // just handed the new template
				}
				want[name], have[name] = w, h
			}

			if tc.unread {
				ready = nil
			}
			allowed := replicasToUpdate(g, want, have, ready)

			var got []string
			for j, ok := range allowed {
				if ok && tc.replicas[mustAtoi(t, j)].outdated {
					got = append(got, j)
				}
			}
			sort.Strings(got)
			var wantOutdated []string
			for _, j := range tc.want {
				if tc.replicas[mustAtoi(t, j)].outdated {
					wantOutdated = append(wantOutdated, j)
				}
			}
			assert.Equal(t, wantOutdated, got, "outdated replicas allowed to take the template now")
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	i, err := strconv.Atoi(s)
	require.NoError(t, err)
	return i
}

func TestUpdateInProgressOfAGroup(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	t5 := metav1.NewTime(t0.Add(5 * time.Minute))
	open := func(updated int32, progressed *metav1.Time) *grovev1alpha1.PodCliqueScalingGroupUpdateProgress {
		return &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: t0, PodCliqueSetGenerationHash: "b",
			UpdatedPodCliquesCount: updated, TotalPodCliquesCount: 6, LastProgressedAt: progressed}
	}
	for _, tc := range []struct {
		name          string
		progress      *grovev1alpha1.PodCliqueScalingGroupUpdateProgress
		before        int32
		deadline      time.Duration
		now           metav1.Time
		wantReason    string
		wantProgessed *metav1.Time
		wantAfter     time.Duration
	}{
		{name: "never updated: no active update", now: t0, wantReason: grovev1alpha1.ReasonNoActiveUpdate},
		{name: "an update just opened progressed now", progress: open(0, nil), now: t0, wantReason: grovev1alpha1.ReasonProgressing, wantProgessed: &t0},
		{name: "more PodCliques at the new template is progress", progress: open(2, &t0), before: 1, now: t1, wantReason: grovev1alpha1.ReasonProgressing, wantProgessed: &t1},
		{name: "within the deadline: look again when it runs out", progress: open(2, &t0), before: 2, deadline: 2 * time.Minute, now: t1,
			wantReason: grovev1alpha1.ReasonProgressing, wantProgessed: &t0, wantAfter: time.Minute},
		{name: "past the deadline without progress: Unknown", progress: open(2, &t0), before: 2, deadline: 2 * time.Minute, now: t5,
			wantReason: grovev1alpha1.ReasonProgressDeadlineExceeded, wantProgessed: &t0},
		{name: "an ended update clears lastProgressedAt", progress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: t0, UpdateEndedAt: &t1, LastProgressedAt: &t0},
			now: t5, wantReason: grovev1alpha1.ReasonNoActiveUpdate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := builders.PodCliqueScalingGroup("ns", "inf-0-prefill", "leader", "worker").Replicas(3, 1).Obj()
			if tc.deadline > 0 {
				g.Spec.RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{ProgressDeadline: &metav1.Duration{Duration: tc.deadline}}
			}
			st := grovev1alpha1.PodCliqueScalingGroupStatus{UpdateProgress: tc.progress}

			after := trackProgress(&st, g, tc.before, tc.now)

			cond := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionUpdateInProgress)
			require.NotNil(t, cond)
			assert.Equal(t, tc.wantReason, cond.Reason, cond.Message)
			if st.UpdateProgress != nil {
				assert.Equal(t, tc.wantProgessed, st.UpdateProgress.LastProgressedAt)
			}
			assert.Equal(t, tc.wantAfter, after)
		})
	}
}

func TestTheRolloutReadsPodsOnlyToCheckAnOutdatedStatusShortOfReadyPods(t *testing.T) {
	for _, tc := range []struct {
		name      string
		strategy  grovev1alpha1.UpdateStrategyType
		training  bool
		unreached bool // the PodCliqueSet's rollout has not handed the group its template
		outdated  bool
		short     bool // the status counts fewer than minAvailable Ready pods
		want      bool
	}{
		{name: "an outdated PodClique whose status is short of Ready pods: read", outdated: true, short: true, want: true},
		{name: "at rest: not read", short: true},
		{name: "outdated, its status at minAvailable: not read", outdated: true},
		{name: "the rollout has not reached the group: not read", unreached: true, outdated: true, short: true},
		{name: "OnDelete: not read", strategy: grovev1alpha1.OnDeleteStrategy, outdated: true, short: true},
		{name: "training: not read", training: true, outdated: true, short: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := pcs()
			g := group(set, 2, 1).Obj()
			g.Spec.UpdateStrategy = tc.strategy
			if tc.training {
				g.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
			}
			have := groupWorld(set, g, 2, nil)
			for _, h := range have {
				h.Status.ObservedGeneration, h.Status.UpdatedReplicas = ptr.To(h.Generation), h.Spec.Replicas
				if tc.outdated {
					h.Spec.PodCliqueSetGenerationHash = "older"
				}
				if tc.short {
					h.Status.ReadyReplicas = 0
				}
			}
			if tc.unreached {
				g.Spec.PodCliqueSetGenerationHash = "older"
			}

			assert.Equal(t, tc.want, readsPods(set, g, have))
		})
	}
}
