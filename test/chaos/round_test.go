package chaos

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// roundTimeout bounds one round; faults slow a round down, they must not stall it.
const roundTimeout = 6 * time.Minute

// roundResult is what a round's Training workloads ended with, by case name.
type roundResult map[string]outcome

// round runs one wave of the batch workload in its own namespace: the Training PodCliqueSets
// and the TrainJobs of every case, to the end — outcome checked, TTLs fired, everything deleted
// and checked for orphans. Rounds overlap, so faults hit workloads at every stage. The reference
// round runs before any fault; every other round must end as it did.
func (r *run) round(n int, reference bool) roundResult {
	ns := fmt.Sprintf("chaos-round-%03d", n)
	deadline := time.Now().Add(roundTimeout)
	if err := createPersistently(r.ctx, r.k, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, r.l.logf); err != nil {
		r.l.violate(invRoundCompletes, "%s: %v", ns, err)
		return nil
	}
	for _, c := range trainJobCases {
		if err := createPersistently(r.ctx, r.k, c.runtime(ns), r.l.logf); err != nil {
			r.l.violate(invRoundCompletes, "%s: %v", ns, err)
			return nil
		}
	}
	for _, c := range trainingCases {
		if err := createPersistently(r.ctx, r.k, c.pcs(ns), r.l.logf); err != nil {
			r.l.violate(invRoundCompletes, "%s: %v", ns, err)
			return nil
		}
	}
	for _, c := range trainJobCases {
		if err := createPersistently(r.ctx, r.k, c.trainJob(ns), r.l.logf); err != nil {
			r.l.violate(invRoundCompletes, "%s: %v", ns, err)
			return nil
		}
	}

	result := roundResult{}
	r.waitFor(time.Second, time.Until(deadline), func() bool {
		for _, c := range trainingCases {
			pcs := &grovev1alpha1.PodCliqueSet{}
			if _, done := result[c.name]; done {
				continue
			}
			if err := r.k.Get(r.ctx, client.ObjectKey{Namespace: ns, Name: c.name}, pcs); err == nil && isTerminal(pcs.Status.Phase) {
				result[c.name] = outcome{pcs.Status.Phase, pcs.Status.RestartCount}
			}
		}
		return len(result) == len(trainingCases)
	})
	for _, c := range trainingCases {
		got, ok := result[c.name]
		if reference {
			continue // checked against the computed outcome by the caller
		}
		want, known := r.reference[c.name]
		ok = ok && known
		r.l.check(invTrainingOutcome, ok && got == want, "%s/%s ended %+v (done: %v), the fault-free run ended %+v", ns, c.name, got, ok, want)
	}

	for _, c := range trainJobCases {
		r.checkTrainJob(ns, c, deadline)
	}

	// Finished Training workloads stay until deleted; deleting them takes every child along.
	for _, c := range trainingCases {
		r.deleteByTest(&grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.name}})
	}
	for _, c := range trainingCases {
		r.checkNoOrphans(ns, c.name, 2*time.Minute)
	}
	r.deleteByTest(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	var err error
	r.waitFor(time.Second, 2*time.Minute, func() bool {
		err = r.k.Get(r.ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return isNotFound(err)
	})
	r.l.check(invRoundCompletes, isNotFound(err), "%s: the namespace is not gone 2 minutes after its deletion: %v", ns, err)
	return result
}

// checkTrainJob waits until a TrainJob's TTL removed it and checks how it finished, when the TTL
// fired, that nothing of it is left, and that the trainer-controller created no child after the
// finish.
func (r *run) checkTrainJob(ns string, c trainJobCase, deadline time.Time) {
	key := client.ObjectKey{Namespace: ns, Name: c.name}
	release := func(tj *trainerv1alpha1.TrainJob) {
		r.retry("releasing "+c.name, func() error {
			patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`))
			return client.IgnoreNotFound(r.k.Patch(r.ctx, tj, patch))
		})
	}
	// A TrainJob whose TTL never fired is released too, so the namespace can go.
	defer func() {
		tj := &trainerv1alpha1.TrainJob{}
		if err := r.k.Get(r.ctx, key, tj); err == nil && len(tj.Finalizers) > 0 {
			release(tj)
		}
	}()
	var f finish
	finished := false
	r.waitFor(time.Second, time.Until(deadline), func() bool {
		tj := &trainerv1alpha1.TrainJob{}
		err := r.k.Get(r.ctx, key, tj)
		if isNotFound(err) {
			return true
		}
		if err != nil || tj.DeletionTimestamp == nil {
			return false
		}
		// The TTL deleted it; the test's finalizer keeps its last status readable.
		if got := finishOf(tj); got != nil {
			f, finished = finish{uid: tj.UID, condition: got.Type, reason: got.Reason, at: got.LastTransitionTime.Time}, true
			r.recordFinish(ns, c.name, f)
		}
		release(tj)
		return true
	})
	if !finished {
		f, finished = r.finished(ns, c.name) // gone without the finalizer's hold: the informer's record
	}
	if !r.l.check(invTrainJobOutcome, finished && f.condition == c.condition && (c.reason == "" || f.reason == c.reason),
		"%s/%s finished=%v %s/%s, want %s/%s", ns, c.name, finished, f.condition, f.reason, c.condition, c.reason) || !finished {
		return
	}
	// The TTL counts from the finish condition's transition (second resolution); the deletion's
	// time is in the audit log.
	var deletedAt time.Time
	var created []string
	trainer := "system:serviceaccount:" + cluster.Namespace + ":trainer-controller-"
	for _, ev := range r.audit.where(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && strings.HasPrefix(ev.User.Username, trainer)
	}) {
		if ev.ObjectRef.Resource == "trainjobs" && ev.ObjectRef.Name == c.name && ev.ObjectRef.Subresource == "" && ev.Verb == "delete" && succeeded(ev) && deletedAt.IsZero() {
			deletedAt = ev.StageTimestamp
		}
		child := ev.ObjectRef.Name == c.name || strings.HasPrefix(ev.ObjectRef.Name, c.name+"-")
		// A server-side apply that creates answers 201 like a create does.
		if child && ev.ObjectRef.Resource != "trainjobs" && ev.ObjectRef.Resource != "events" && ev.ResponseStatus.Code == 201 &&
			ev.StageTimestamp.After(f.at.Add(time.Second)) {
			created = append(created, fmt.Sprintf("%s %s %s at %s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name, ev.StageTimestamp.Format(time.RFC3339Nano)))
		}
	}
	r.l.check(invNoChildAfterFinish, len(created) == 0, "%s/%s finished at %s, then the trainer-controller created %v", ns, c.name, f.at, created)
	ttl := time.Duration(c.ttl) * time.Second
	r.l.check(invTTLFires, !deletedAt.IsZero() && deletedAt.Sub(f.at) >= ttl-time.Second,
		"%s/%s finished at %s, TTL %s, deleted by the trainer-controller at %v", ns, c.name, f.at, ttl, deletedAt)
	r.checkNoOrphans(ns, c.name, 2*time.Minute)
}
