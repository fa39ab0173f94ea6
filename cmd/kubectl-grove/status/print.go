package status

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/tree"
)

// PrintPodCliqueSet draws a PodCliqueSet: replicas, scaling groups, PodCliques with Ready/total,
// their pods, and the PodGangs with their backend's acknowledgement; whatever waits says why.
func PrintPodCliqueSet(w io.Writer, v *View) {
	root := tree.New(pcsLine(v.PodCliqueSet))
	addPodCliqueSet(root, v)
	root.Write(w)
}

func pcsLine(pcs *grovev1alpha1.PodCliqueSet) string {
	line := fmt.Sprintf("PodCliqueSet %s/%s: %d/%d replicas available", pcs.Namespace, pcs.Name, pcs.Status.AvailableReplicas, pcs.Spec.Replicas)
	if pcs.Status.Phase != "" {
		line += fmt.Sprintf(", phase %s, restarts %d", pcs.Status.Phase, pcs.Status.RestartCount)
	}
	return line
}

func addPodCliqueSet(root *tree.Node, v *View) {
	pcs := v.PodCliqueSet
	if line := dispatchLine(v); line != "" {
		root.Add(line)
	}
	for _, c := range pcs.Status.Conditions {
		if notable(c) {
			root.Add(fmt.Sprintf("%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	for _, e := range pcs.Status.LastErrors {
		root.Add(fmt.Sprintf("error %s: %s", e.Code, e.Description))
	}
	addCoherentUpdate(root, v)
	for replica := range int(pcs.Spec.Replicas) {
		idx := strconv.Itoa(replica)
		r := root.Add("replica " + idx)
		for _, name := range slices.Sorted(maps.Keys(v.PodCliques)) {
			pclq := v.PodCliques[name]
			if pclq.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx && pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == "" {
				addPodClique(r, v, pclq)
			}
		}
		for _, g := range v.Groups {
			if g.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] != idx {
				continue
			}
			gn := r.Add(fmt.Sprintf("PodCliqueScalingGroup %s: %d/%d replicas available (minAvailable %d)%s%s", g.Name, g.Status.AvailableReplicas,
				g.Spec.Replicas, ptr.Deref(g.Spec.MinAvailable, 1), breached(g.Status.Conditions), updating(g.Status.Conditions)))
			for _, name := range slices.Sorted(maps.Keys(v.PodCliques)) {
				if pclq := v.PodCliques[name]; pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == g.Name {
					addPodClique(gn, v, pclq)
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(v.PodGangs)) {
			if pg := v.PodGangs[name]; pg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx {
				r.Add(gangLine(pg))
			}
		}
		if len(r.Children) == 0 {
			r.Add("nothing created yet")
		}
	}
}

// notable conditions are those a person acts on: the ones that are not in their good state.
func notable(c metav1.Condition) bool {
	good := map[string]metav1.ConditionStatus{
		grovev1alpha1.ConditionPodGangsSchedulable: metav1.ConditionTrue, grovev1alpha1.ConditionNameCollision: metav1.ConditionFalse,
		grovev1alpha1.ConditionMinAvailableBreached: metav1.ConditionFalse, grovev1alpha1.ConditionUpdateInProgress: metav1.ConditionFalse,
		grovev1alpha1.ConditionSchedulingConstraintsHonored: metav1.ConditionTrue, grovev1alpha1.ConditionTopologyLevelsUnavailable: metav1.ConditionFalse,
	}
	want, known := good[c.Type]
	return !known || c.Status != want
}

func breached(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, grovev1alpha1.ConditionMinAvailableBreached); c != nil && c.Status == metav1.ConditionTrue {
		return fmt.Sprintf(", breached since %s: %s", c.LastTransitionTime.UTC().Format("15:04:05"), c.Message)
	}
	return ""
}

// updating says that a rolling update is replacing a component's pods, or stalled past its
// progressDeadline, with the component's own message.
func updating(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, grovev1alpha1.ConditionUpdateInProgress)
	switch {
	case c == nil || c.Status == metav1.ConditionFalse:
		return ""
	case c.Reason == grovev1alpha1.ReasonProgressDeadlineExceeded:
		return ", update stalled: " + c.Message
	}
	return ", updating: " + c.Message
}

// replacing says that a restarted Training clique waits for the pods of the one it replaces.
func replacing(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, grovev1alpha1.ConditionPodCliqueScheduled); c != nil &&
		c.Reason == grovev1alpha1.ReasonReplacedPodsTerminating {
		return ", restarting: " + c.Message
	}
	return ""
}

func addPodClique(parent *tree.Node, v *View, pclq *grovev1alpha1.PodClique) {
	line := fmt.Sprintf("PodClique %s: %d/%d ready (minAvailable %d), %d gated%s%s%s", pclq.Name, pclq.Status.ReadyReplicas, pclq.Spec.Replicas,
		pclq.MinAvailableOrReplicas(), pclq.Status.ScheduleGatedReplicas, breached(pclq.Status.Conditions), updating(pclq.Status.Conditions),
		replacing(pclq.Status.Conditions))
	if meta.IsStatusConditionTrue(pclq.Status.Conditions, grovev1alpha1.ConditionSucceeded) {
		line += ", succeeded"
	}
	c := parent.Add(line)
	pods := v.Pods[pclq.Name]
	if len(pods) == 0 {
		c.Add("no pods yet")
	}
	for _, p := range pods {
		pl := fmt.Sprintf("pod %s: %s", p.Name, podState(p))
		if why := Wait(p, pclq, v); why != "" {
			pl += " — " + why
		}
		c.Add(pl)
	}
}

// podState is a pod's phase, readiness and restarts.
func podState(p *corev1.Pod) string {
	ready := "not ready"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = "ready"
		}
	}
	restarts := int32(0)
	for _, s := range p.Status.ContainerStatuses {
		restarts += s.RestartCount
	}
	phase := string(p.Status.Phase)
	if phase == "" {
		phase = string(corev1.PodPending)
	}
	if !p.DeletionTimestamp.IsZero() {
		phase = "Terminating"
	}
	return fmt.Sprintf("%s, %s, %d restarts", phase, ready, restarts)
}

// dispatchLine says, on MultiKueue's manager cluster, which worker cluster runs a dispatched
// PodCliqueSet, as its gangs' Workloads were placed; "" for any other PodCliqueSet.
func dispatchLine(v *View) string {
	if !grovev1alpha1.DispatchedByMultiKueue(v.PodCliqueSet) {
		return ""
	}
	clusters := map[string]bool{}
	waiting := ""
	for _, name := range slices.Sorted(maps.Keys(v.PodGangs)) {
		pg := v.PodGangs[name]
		c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionDispatched)
		switch {
		case c == nil:
			waiting = "gang " + name + " has no Workload yet (is a backend-controller with kueue.enabled running?)"
		case pg.DispatchedCluster() != "":
			clusters[pg.DispatchedCluster()] = true
		case waiting == "":
			waiting = fmt.Sprintf("gang %s %s (%s)", name, c.Message, c.Reason)
		}
	}
	switch {
	case len(clusters) > 0 && waiting == "":
		return fmt.Sprintf("dispatched by MultiKueue: runs on cluster %s (status copied back from there)", strings.Join(slices.Sorted(maps.Keys(clusters)), ", "))
	case len(clusters) > 0:
		return fmt.Sprintf("dispatched by MultiKueue: runs on cluster %s; %s", strings.Join(slices.Sorted(maps.Keys(clusters)), ", "), waiting)
	case waiting != "":
		return "dispatched by MultiKueue, on no worker yet: " + waiting
	}
	return "dispatched by MultiKueue, on no worker yet: its gangs are not created (is the grove-operator running?)"
}

func gangLine(pg *schedulerv1alpha1.PodGang) string {
	backend := pg.Labels[grovev1alpha1.LabelSchedulerName]
	if pg.MultiKueueRoleOf() == schedulerv1alpha1.MultiKueueManager {
		line := fmt.Sprintf("PodGang %s (its Workload dispatched by MultiKueue)", pg.Name)
		for _, t := range []string{schedulerv1alpha1.ConditionDispatched, schedulerv1alpha1.ConditionQueueAdmitted} {
			if c := meta.FindStatusCondition(pg.Status.Conditions, t); c != nil {
				line += fmt.Sprintf("; %s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		return line
	}
	line := fmt.Sprintf("PodGang %s: phase %s, backend %s", pg.Name, orUnknown(string(pg.Status.Phase)), backend)
	if !pg.Acknowledged() {
		return line + ": " + unacknowledged(pg)
	}
	line += ": acknowledged"
	if c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled); c != nil && c.Status != metav1.ConditionTrue {
		line += fmt.Sprintf("; not placed (%s): %s", c.Reason, c.Message)
	}
	return line
}

// unacknowledged says why the backend has not acknowledged a PodGang's current generation.
func unacknowledged(pg *schedulerv1alpha1.PodGang) string {
	backend := pg.Labels[grovev1alpha1.LabelSchedulerName]
	c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	switch {
	case c == nil:
		return fmt.Sprintf("not acknowledged: no backend-controller for %q has answered (is one running?)", backend)
	case c.Status != metav1.ConditionTrue:
		return fmt.Sprintf("not acknowledged by %s: %s: %s", backend, c.Reason, c.Message)
	}
	return fmt.Sprintf("not acknowledged by %s for generation %d yet (acknowledged %d)", backend, pg.Generation, c.ObservedGeneration)
}

// Wait is the one-line reason a pod is not running, "" when it is or has finished.
func Wait(p *corev1.Pod, pclq *grovev1alpha1.PodClique, v *View) string {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name != grovev1alpha1.SchedulingGatePodGangPendingCreation {
			return fmt.Sprintf("gated by %s, a gate another controller set", g.Name)
		}
	}
	if len(p.Spec.SchedulingGates) > 0 {
		return gateReason(p, pclq, v)
	}
	if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("%s by %s: %s", strings.ToLower(c.Reason), p.Spec.SchedulerName, c.Message)
		}
	}
	if p.Annotations[grovev1alpha1.AnnotationStartupGate] == grovev1alpha1.StartupGateWaiting {
		why := parentsWait(pclq, v)
		if why == "" {
			why = "the operator releases it on its next pass"
		}
		return fmt.Sprintf("held at start by %s: %s", grovev1alpha1.StartupWaitContainer, why)
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason != "" {
			return fmt.Sprintf("container %s waits: %s %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		}
	}
	if p.Spec.NodeName == "" {
		return "not scheduled yet"
	}
	return ""
}

// gateReason says what keeps the operator's gate on a pod, in the order the operator checks.
func gateReason(p *corev1.Pod, pclq *grovev1alpha1.PodClique, v *View) string {
	name := pclq.Labels[grovev1alpha1.LabelPodGang]
	pg := v.PodGangs[name]
	switch {
	case pg == nil:
		return fmt.Sprintf("gated: its PodGang %s does not exist yet", name)
	case !pg.Acknowledged():
		return fmt.Sprintf("gated: PodGang %s %s", name, unacknowledged(pg))
	case !pg.MaySchedule(p.Name):
		return fmt.Sprintf("gated: PodGang %s does not reference the pod yet", name)
	}
	if base := pclq.Labels[grovev1alpha1.LabelBasePodGang]; base != "" {
		if b := v.PodGangs[base]; b == nil || !meta.IsStatusConditionTrue(b.Status.Conditions, schedulerv1alpha1.ConditionScheduled) {
			return fmt.Sprintf("gated: its scaled gang %s is placed after its base gang %s, which is not scheduled yet", name, base)
		}
	}
	if why := parentsWait(pclq, v); why != "" {
		return "gated: " + why
	}
	return "gated: the operator lifts the gate on its next pass"
}

// parentsWait names the first clique the pod's clique starts after that is not up, "" when all are.
func parentsWait(pclq *grovev1alpha1.PodClique, v *View) string {
	for _, parentName := range pclq.Spec.StartsAfter {
		parent := v.PodCliques[parentName]
		mustSucceed := slices.Contains(pclq.Spec.StartsAfterSucceeded, parentName)
		switch {
		case parent == nil:
			return fmt.Sprintf("starts after %s, which does not exist yet", parentName)
		case !parent.UpForDependents(mustSucceed) && mustSucceed:
			return fmt.Sprintf("starts after %s has succeeded", parentName)
		case !parent.UpForDependents(mustSucceed):
			return fmt.Sprintf("starts after %s (%d/%d ready)", parentName, parent.Status.ReadyReplicas, parent.MinAvailableOrReplicas())
		}
	}
	return ""
}

// PrintTrainJob draws a TrainJob and its workload.
func PrintTrainJob(w io.Writer, v *TrainJobView) {
	tj := v.TrainJob
	root := tree.New(fmt.Sprintf("TrainJob %s/%s: %s", tj.Namespace, tj.Name, trainJobState(tj)))
	for _, c := range tj.Status.Conditions {
		root.Add(fmt.Sprintf("%s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message))
	}
	switch {
	case v.Workload != nil:
		n := root.Add(pcsLine(v.Workload.PodCliqueSet))
		addPodCliqueSet(n, v.Workload)
	case v.JobSet != nil:
		n := root.Add(fmt.Sprintf("JobSet %s: suspended %t", v.JobSet.Name, ptr.Deref(v.JobSet.Spec.Suspend, false)))
		for _, s := range v.JobSet.Status.ReplicatedJobsStatus {
			n.Add(fmt.Sprintf("replicatedJob %s: %d ready, %d active, %d succeeded, %d failed", s.Name, s.Ready, s.Active, s.Succeeded, s.Failed))
		}
		for _, p := range v.JobPods {
			line := fmt.Sprintf("pod %s: %s", p.Name, podState(p))
			if why := Wait(p, &grovev1alpha1.PodClique{}, &View{}); why != "" {
				line += " — " + why
			}
			n.Add(line)
		}
	case ptr.Deref(tj.Spec.ManagedBy, "") == trainerv1alpha1.MultiKueueManagedBy:
		if !meta.IsStatusConditionTrue(tj.Status.Conditions, grovev1alpha1.ConditionDispatched) {
			root.Add("dispatched by MultiKueue, on no worker yet: Kueue's MultiKueue creates its copy on the worker cluster that admits it")
		} else {
			root.Add("dispatched by MultiKueue: its workload runs on the worker cluster (Dispatched above); run this command there for its pods")
		}
	default:
		root.Add("no workload: the trainer-controller has not created it (see Running above)")
	}
	root.Write(w)
}

func trainJobState(tj *trainerv1alpha1.TrainJob) string {
	for _, t := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed, trainerv1alpha1.TrainJobSuspended, trainerv1alpha1.TrainJobRunning} {
		if meta.IsStatusConditionTrue(tj.Status.Conditions, t) {
			return t
		}
	}
	return "Pending"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
