package podcliqueset

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
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
	trainingFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_training_failures_total", Help: "Training PodCliqueSets reaching phase Failed, by the reason of their Failed condition.",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(trainingRestarts, trainingPhases, trainingFailures)
	// Every reason exists from the start at 0, so increase() sees the first failure.
	for _, reason := range []string{grovev1alpha1.ReasonMaxRestartsExceeded, grovev1alpha1.ReasonMaxRuntimeExceeded, EventPodCliqueFailed} {
		trainingFailures.WithLabelValues(reason)
	}
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

// runtimeRemaining is how long a started Training workload with a maxRuntime may still run
// (0 when it has no limit or has not started).
func runtimeRemaining(pcs *grovev1alpha1.PodCliqueSet, now time.Time) time.Duration {
	t := pcs.Spec.TrainingSpec
	if !children.IsTraining(pcs) || terminal(pcs.Status.Phase) || t == nil || t.MaxRuntime == nil || pcs.Status.StartTime == nil {
		return 0
	}
	if left := pcs.Status.StartTime.Add(t.MaxRuntime.Duration).Sub(now); left > 0 {
		return left
	}
	return 0
}

// trainingPhase derives Pending/Running/Succeeded from the children: Succeeded when the success
// policy holds (unset: every PodClique of every replica reports Succeeded). startTime is set
// once, on the first Running — or on Succeeded, for a workload whose pods ran and finished
// between two passes (short pods on a busy operator): it did run, and a finished workload
// without a start would read as one that never started.
func trainingPhase(pcs *grovev1alpha1.PodCliqueSet, st *grovev1alpha1.PodCliqueSetStatus, obs *observed, now time.Time) {
	if terminal(st.Phase) {
		return
	}
	if succeededByPolicy(pcs, obs) {
		st.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
	}
	if (st.Phase == grovev1alpha1.PodCliqueSetPhaseRunning || st.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded) && st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: now}
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
			replicas := int(children.GroupReplicas(&g))
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
			g := children.GroupOf(pcs, c.Name)
			if g == nil {
				add(grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name))
				continue
			}
			pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name)
			replicas := children.GroupReplicas(g)
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
