package podcliquescalinggroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// groupWorld is replica 0's group g of set with its PodCliques for group replicas 0..n-1 as
// the template makes them, all available (Ready, wasAvailable); breached maps a PodClique's name
// to when it breached.
func groupWorld(set *grovev1alpha1.PodCliqueSet, g *grovev1alpha1.PodCliqueScalingGroup, n int, breached map[string]time.Time) map[string]*grovev1alpha1.PodClique {
	full := g.DeepCopy()
	full.Spec.Replicas = int32(n)
	have := Members(set, full, 0, nil)
	for name, pclq := range have {
		pclq.UID = types.UID("uid-" + name)
		pclq.Status.ReadyReplicas, pclq.Status.WasAvailable = pclq.Spec.Replicas, true
		if at, ok := breached[name]; ok {
			pclq.Status.Conditions = []metav1.Condition{{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue,
				Reason: "InsufficientReadyPods", LastTransitionTime: metav1.NewTime(at)}}
		}
	}
	return have
}

func TestDecideGroupTransitions(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	names := func(pclqs []*grovev1alpha1.PodClique) []string {
		var out []string
		for _, p := range pclqs {
			out = append(out, p.Name)
		}
		return out
	}
	cases := []struct {
		name          string
		replicas, min int32
		observed      int // group replicas whose PodCliques exist
		training      bool
		finished      bool    // the PodCliqueSet Succeeded
		recorded      []int32 // status.recoveringReplicas before the pass
		breached      map[string]time.Time
		wantBreach    metav1.ConditionStatus
		wantRecycle   []string
		wantRecord    bool
		wantRecover   []int32
		wantCreates   []string
		wantDeletes   []string
		wantRequeue   time.Duration
	}{
		{name: "at rest: nothing", replicas: 2, min: 1, observed: 2, wantBreach: metav1.ConditionFalse},
		{name: "breached within the delay: looks again when it runs out", replicas: 2, min: 1, observed: 2,
			breached: map[string]time.Time{"inf-0-prefill-1-worker": now.Add(-20 * time.Second)}, wantBreach: metav1.ConditionFalse, wantRequeue: 10 * time.Second},
		{name: "breached past the delay, minAvailable kept: the replica is recorded, then recycled", replicas: 2, min: 1, observed: 2,
			breached: map[string]time.Time{"inf-0-prefill-1-worker": now.Add(-time.Minute)}, wantBreach: metav1.ConditionFalse,
			wantRecycle: []string{"1"}, wantRecord: true, wantRecover: []int32{1}},
		{name: "recorded by a pass that crashed before deleting: recycled without a second write", replicas: 2, min: 1, observed: 2, recorded: []int32{1},
			breached: map[string]time.Time{"inf-0-prefill-1-worker": now.Add(-time.Minute)}, wantBreach: metav1.ConditionFalse,
			wantRecycle: []string{"1"}, wantRecover: []int32{1}},
		{name: "a recycled replica not yet back and another breach: below minAvailable, the PodCliqueSet decides", replicas: 2, min: 2, observed: 2, recorded: []int32{0},
			breached: map[string]time.Time{"inf-0-prefill-0-leader": now.Add(-time.Minute)}, wantBreach: metav1.ConditionTrue, wantRecover: []int32{0}},
		{name: "training: never recycled by the group", replicas: 2, min: 1, observed: 2, training: true,
			breached: map[string]time.Time{"inf-0-prefill-1-worker": now.Add(-time.Minute)}, wantBreach: metav1.ConditionTrue},
		{name: "idle at 0 replicas: never breached, its PodCliques go", replicas: 0, min: 1, observed: 1, wantBreach: metav1.ConditionFalse,
			wantDeletes: []string{"inf-0-prefill-0-leader", "inf-0-prefill-0-worker"}},
		{name: "scaled out: the new replica's PodCliques are created", replicas: 3, min: 1, observed: 2, wantBreach: metav1.ConditionFalse,
			wantCreates: []string{"inf-0-prefill-2-leader", "inf-0-prefill-2-worker"}},
		{name: "the workload Succeeded: PodCliques the PodCliqueSet deleted are not made again", replicas: 3, min: 1, observed: 2, finished: true,
			wantBreach: metav1.ConditionFalse},
		{name: "scaled in: the replica beyond spec.replicas loses its PodCliques", replicas: 1, min: 1, observed: 2, wantBreach: metav1.ConditionFalse,
			wantDeletes: []string{"inf-0-prefill-1-leader", "inf-0-prefill-1-worker"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := pcs()
			g := group(set, tc.replicas, tc.min).TerminationDelay(metav1.Duration{Duration: 30 * time.Second}).Obj()
			if tc.training {
				g.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
			}
			g.Status.RecoveringReplicas = tc.recorded
			if tc.finished {
				set.Status.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
			}
			p := decideGroup(groupInput{pcs: set, pcsg: g, have: groupWorld(set, g, tc.observed, tc.breached), unseen: sets.New[string](), now: now})
			assert.Equal(t, tc.wantBreach, p.breach.Status, p.breach.Message)
			var recycled []string
			for _, r := range p.recycle {
				recycled = append(recycled, r.replica)
			}
			assert.Equal(t, tc.wantRecycle, recycled, "recycled")
			assert.Equal(t, tc.wantRecord, p.record, "recorded before deleting")
			assert.Equal(t, tc.wantRecover, p.recovering, "recovering")
			assert.Equal(t, tc.wantCreates, names(p.creates), "creates")
			assert.Equal(t, tc.wantDeletes, names(p.deletes), "deletes")
			assert.Equal(t, tc.wantRequeue, p.requeue, "requeue")
			assert.Empty(t, p.updates, "no template change")
		})
	}
}

func TestAMemberBroughtToTheTemplateSaysWhy(t *testing.T) {
	base := func() *grovev1alpha1.PodClique {
		p := &grovev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "inf-0-g-0-worker"}}
		p.Spec.Replicas = 2
		p.Spec.PodCliqueSetGenerationHash = "rev-1"
		p.Spec.PodSpec.Containers = []corev1.Container{{Name: "c", Image: "img:1"}}
		return p
	}
	cases := []struct {
		name   string
		change func(*grovev1alpha1.PodClique)
		want   string
	}{
		{"a new image", func(p *grovev1alpha1.PodClique) { p.Spec.PodSpec.Containers[0].Image = "img:2" }, "its pod template changed"},
		{"a new size", func(p *grovev1alpha1.PodClique) { p.Spec.Replicas = 3 }, "its replica count changed (the template's, or an autoscaler's)"},
		{"only the revision", func(p *grovev1alpha1.PodClique) { p.Spec.PodCliqueSetGenerationHash = "rev-2" }, "the PodCliqueSet's update reached its group replica"},
		{"anything else", func(p *grovev1alpha1.PodClique) { p.Spec.MinAvailable = ptr.To[int32](1) }, "its spec differs from the template"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := base()
			tc.change(want)
			var p groupPlan
			p.update(base(), want)
			assert.Equal(t, []*grovev1alpha1.PodClique{want}, p.updates)
			assert.Equal(t, tc.want, p.updateReasons[want.Name])
		})
	}
}
