package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/expand"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
)

// Events of Training workloads.
const (
	EventReplicaRestarting   = "ReplicaRestarting"
	EventMaxRestartsExceeded = "MaxRestartsExceeded"
	EventMaxRuntimeExceeded  = "MaxRuntimeExceeded"
	EventWorkloadSucceeded   = "WorkloadSucceeded"
	EventPodCliqueFailed     = "PodCliqueFailed"
)

var (
	trainingRestarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "grove_training_restarts_total", Help: "Replica restarts of Training PodCliqueSets.",
	})
	trainingPhases = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_training_phase_transitions_total", Help: "Training PodCliqueSets reaching a phase.",
	}, []string{"phase"})
)

func init() {
	metrics.Registry.MustRegister(trainingRestarts, trainingPhases)
}

func maxRestarts(pcs *grovev1alpha1.PodCliqueSet) int32 {
	if t := pcs.Spec.TrainingSpec; t != nil && t.MaxRestarts != nil {
		return *t.MaxRestarts
	}
	return 0
}

func terminal(phase grovev1alpha1.PodCliqueSetPhase) bool {
	return phase == grovev1alpha1.PodCliqueSetPhaseSucceeded || phase == grovev1alpha1.PodCliqueSetPhaseFailed
}

// restartOrFail handles a Training replica whose breach expired. Within the budget the replica is
// restarted: the count and the PodCliques it deletes (status.restartsInProgress) are written in
// one status update, then the PodCliques are deleted (and recreated on the next pass). A crash
// after the write finds them recorded and deletes them without counting again; a crash before it
// decides anew; a stale view's write is refused (resourceVersion). Past the budget the workload
// fails.
//
// recorded tells whether it wrote the status: the pass then writes nothing else.
func (r *Reconciler) restartOrFail(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, replica int, members []*grovev1alpha1.PodClique, why string) (recorded bool, err error) {
	if restartInProgress(pcs, members) == nil { // not yet decided for these PodCliques
		if pcs.Status.RestartCount >= maxRestarts(pcs) {
			if err := r.fail(ctx, pcs, obs, grovev1alpha1.ReasonMaxRestartsExceeded, EventMaxRestartsExceeded,
				fmt.Sprintf("replica %d failed (%s) after %d of %d restarts", replica, why, pcs.Status.RestartCount, maxRestarts(pcs))); err != nil {
				return false, err
			}
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventPodCliqueFailed, "Fail", "replica %d: %s", replica, why)
			return true, nil
		}
		restart := grovev1alpha1.ReplicaRestart{ReplicaIndex: int32(replica), Restart: pcs.Status.RestartCount + 1}
		for _, p := range members {
			restart.PodCliqueUIDs = append(restart.PodCliqueUIDs, p.UID)
		}
		updated := pcs.DeepCopy()
		updated.Status.RestartCount = restart.Restart
		updated.Status.RestartsInProgress = append(slices.DeleteFunc(updated.Status.RestartsInProgress, func(rr grovev1alpha1.ReplicaRestart) bool {
			return rr.ReplicaIndex == restart.ReplicaIndex
		}), restart)
		if err := r.Client.Status().Update(ctx, updated); err != nil {
			return false, err
		}
		*pcs = *updated
		recorded = true
		log.FromContext(ctx).Info("training restart: replica restarted, its PodCliques are deleted and recreated", "replica", replica,
			"reason", why, "restart", restart.Restart, "maxRestarts", maxRestarts(pcs))
		trainingRestarts.Inc()
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventPodCliqueFailed, "Restart", "replica %d: %s", replica, why)
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventReplicaRestarting, "Restart",
			"restarting replica %d (%s): restart %d of %d", replica, why, restart.Restart, maxRestarts(pcs))
	}
	_, err = gangtermination.DeletePodCliques(ctx, r.Client, members)
	return recorded, err
}

// restartInProgress returns the recorded restart that deletes one of these PodCliques, if any.
func restartInProgress(pcs *grovev1alpha1.PodCliqueSet, members []*grovev1alpha1.PodClique) *grovev1alpha1.ReplicaRestart {
	for i, rr := range pcs.Status.RestartsInProgress {
		for _, p := range members {
			if slices.Contains(rr.PodCliqueUIDs, p.UID) {
				return &pcs.Status.RestartsInProgress[i]
			}
		}
	}
	return nil
}

// finishedRestarts keeps the recorded restarts one of whose PodCliques is still observed (nil
// when none is, so the field leaves the status).
func finishedRestarts(restarts []grovev1alpha1.ReplicaRestart, obs *observed) []grovev1alpha1.ReplicaRestart {
	live := map[types.UID]bool{}
	for _, p := range obs.cliques {
		live[p.UID] = true
	}
	var out []grovev1alpha1.ReplicaRestart
	for _, rr := range restarts {
		if slices.ContainsFunc(rr.PodCliqueUIDs, func(uid types.UID) bool { return live[uid] }) {
			out = append(out, rr)
		}
	}
	return out
}

// fail records the terminal Failed phase with its reason, and the pods counted at that moment,
// before tearing the workload down.
func (r *Reconciler) fail(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, reason, event, message string) error {
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseFailed
	pcs.Status.CliqueStatuses = cliqueStatuses(pcs, obs)
	meta.SetStatusCondition(&pcs.Status.Conditions, metav1.Condition{
		Type: grovev1alpha1.ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: pcs.Generation,
	})
	if err := r.Client.Status().Update(ctx, pcs); err != nil {
		return err
	}
	log.FromContext(ctx).Info("training workload failed: every pod is terminated", "reason", reason, "message", message)
	trainingPhases.WithLabelValues(string(grovev1alpha1.PodCliqueSetPhaseFailed)).Inc()
	r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, event, "Fail", "%s", message)
	return nil
}

// teardown deletes every PodClique of a failed workload, their pods with them, and its scaling
// groups, which would otherwise create their PodCliques again: nothing runs after Failed.
func (r *Reconciler) teardown(ctx context.Context, obs *observed) error {
	var err error
	for _, g := range obs.groups { // first, so none creates its PodCliques again in between
		if g.DeletionTimestamp.IsZero() {
			if derr := r.Client.Delete(ctx, g, client.Preconditions{UID: ptr.To(g.UID)}); client.IgnoreNotFound(derr) != nil {
				err = errors.Join(err, derr)
			}
		}
	}
	var all []*grovev1alpha1.PodClique
	for _, p := range obs.cliques {
		all = append(all, p)
	}
	_, derr := gangtermination.DeletePodCliques(ctx, r.Client, all)
	return errors.Join(err, derr)
}

// runtimeRemaining is how long a started Training workload with a maxRuntime may still run
// (0 when it has no limit or has not started).
func runtimeRemaining(pcs *grovev1alpha1.PodCliqueSet) time.Duration {
	t := pcs.Spec.TrainingSpec
	if !expand.IsTraining(pcs) || terminal(pcs.Status.Phase) || t == nil || t.MaxRuntime == nil || pcs.Status.StartTime == nil {
		return 0
	}
	if left := pcs.Status.StartTime.Add(t.MaxRuntime.Duration).Sub(time.Now()); left > 0 {
		return left
	}
	return 0
}

// checkRuntime fails a Training workload that ran longer than maxRuntime and otherwise returns
// how long it may still run.
func (r *Reconciler) checkRuntime(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed) (time.Duration, error) {
	t := pcs.Spec.TrainingSpec
	if t == nil || t.MaxRuntime == nil || pcs.Status.StartTime == nil {
		return 0, nil
	}
	if remaining := runtimeRemaining(pcs); remaining > 0 {
		return remaining, nil
	}
	return 0, r.fail(ctx, pcs, obs, grovev1alpha1.ReasonMaxRuntimeExceeded, EventMaxRuntimeExceeded,
		fmt.Sprintf("ran longer than maxRuntime %s (since %s)", t.MaxRuntime.Duration, pcs.Status.StartTime.Format(time.RFC3339)))
}

// trainingPhase derives Pending/Running/Succeeded from the children: Succeeded when the success
// policy holds (unset: every PodClique of every replica reports Succeeded). startTime is set
// once, on the first Running.
func (r *Reconciler) trainingPhase(pcs *grovev1alpha1.PodCliqueSet, st *grovev1alpha1.PodCliqueSetStatus, obs *observed) {
	if terminal(st.Phase) {
		return
	}
	if succeededByPolicy(pcs, obs) {
		st.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
		return
	}
	if st.Phase == grovev1alpha1.PodCliqueSetPhaseRunning && st.StartTime == nil {
		now := metav1.Now()
		st.StartTime = &now
	}
}

// succeededByPolicy reports whether the PodCliques the success policy targets have succeeded:
// All of them (every replica, every scaling-group replica), or Any one, as JobSet counts Jobs.
func succeededByPolicy(pcs *grovev1alpha1.PodCliqueSet, obs *observed) bool {
	var policy grovev1alpha1.TrainingSuccessPolicy
	if t := pcs.Spec.TrainingSpec; t != nil && t.SuccessPolicy != nil {
		policy = *t.SuccessPolicy
	}
	targeted := func(clique string) bool {
		return len(policy.TargetCliques) == 0 || slices.Contains(policy.TargetCliques, clique)
	}
	want, succeeded := 0, 0
	count := func(name string) {
		want++
		if p := obs.cliques[name]; p != nil && meta.IsStatusConditionTrue(p.Status.Conditions, grovev1alpha1.ConditionSucceeded) {
			succeeded++
		}
	}
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		for _, c := range standaloneCliques(pcs) {
			if targeted(c.Name) {
				count(grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name))
			}
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			group := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name)
			replicas := int(expand.GroupReplicas(&g))
			if have := obs.groups[group]; have != nil {
				replicas = int(have.Spec.Replicas)
			}
			for gi := 0; gi < replicas; gi++ {
				for _, c := range g.CliqueNames {
					if targeted(c) {
						count(grovev1alpha1.ScalingGroupPodCliqueName(group, gi, c))
					}
				}
			}
		}
	}
	if policy.Operator == grovev1alpha1.TrainingSuccessAny {
		return succeeded > 0
	}
	return want > 0 && succeeded == want
}

// successMessage says why a Training workload Succeeded.
func successMessage(pcs *grovev1alpha1.PodCliqueSet) string {
	t := pcs.Spec.TrainingSpec
	if t == nil || t.SuccessPolicy == nil {
		return "every pod of every replica exited 0"
	}
	op, targets := t.SuccessPolicy.Operator, "every clique"
	if op == "" {
		op = grovev1alpha1.TrainingSuccessAll
	}
	if len(t.SuccessPolicy.TargetCliques) > 0 {
		targets = "cliques " + strings.Join(t.SuccessPolicy.TargetCliques, ", ")
	}
	if op == grovev1alpha1.TrainingSuccessAny {
		return "a PodClique of " + targets + " succeeded (successPolicy Any); the PodCliques still running are deleted"
	}
	return "every PodClique of " + targets + " succeeded (successPolicy All); the PodCliques still running are deleted"
}

// finishSucceeded deletes the PodCliques of a Succeeded workload that have not succeeded
// themselves (a success policy was met while they still ran, e.g. MPI nodes after their
// launcher finished), as JobSet deletes its active Jobs; the succeeded ones are kept.
func (r *Reconciler) finishSucceeded(ctx context.Context, obs *observed) error {
	var running []*grovev1alpha1.PodClique
	for _, p := range obs.cliques {
		if p.DeletionTimestamp.IsZero() && !meta.IsStatusConditionTrue(p.Status.Conditions, grovev1alpha1.ConditionSucceeded) {
			running = append(running, p)
		}
	}
	if len(running) == 0 {
		return nil
	}
	names := make([]string, 0, len(running))
	for _, p := range running {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	log.FromContext(ctx).Info("training workload succeeded by its success policy: deleting the PodCliques still running", "podCliques", names)
	_, err := gangtermination.DeletePodCliques(ctx, r.Client, running)
	return err
}

// cliqueStatuses sums each template clique's pods over the replicas and scaling-group replicas,
// from the PodCliques' status.
func cliqueStatuses(pcs *grovev1alpha1.PodCliqueSet, obs *observed) []grovev1alpha1.CliqueStatus {
	out := make([]grovev1alpha1.CliqueStatus, 0, len(pcs.Spec.Template.Cliques))
	for _, c := range pcs.Spec.Template.Cliques {
		st := grovev1alpha1.CliqueStatus{Name: c.Name}
		add := func(name string) {
			if p := obs.cliques[name]; p != nil {
				st.Replicas += p.Status.Replicas
				st.ReadyReplicas += p.Status.ReadyReplicas
				st.SucceededReplicas += p.Status.SucceededReplicas
				st.FailedReplicas += p.Status.FailedReplicas
			}
		}
		for i := 0; i < int(pcs.Spec.Replicas); i++ {
			g := expand.GroupOf(pcs, c.Name)
			if g == nil {
				add(grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name))
				continue
			}
			pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name)
			replicas := expand.GroupReplicas(g)
			if have := obs.groups[pcsg]; have != nil {
				replicas = have.Spec.Replicas
			}
			for j := 0; j < int(replicas); j++ {
				add(grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, c.Name))
			}
		}
		out = append(out, st)
	}
	return out
}
