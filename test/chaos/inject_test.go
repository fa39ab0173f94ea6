package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// probeRuntime is a runtime in the inference namespace that admission probes refer to.
const probeRuntime = "rt-probe"

// inject carries out one fault of the schedule and its recovery; recoveries that take a while
// (a node coming back, a pod ready again) run in the background so faults overlap.
func (r *run) inject(f fault) {
	kind, target, _ := strings.Cut(f.kind, " ")
	switch kind {
	case faultKill:
		r.killReplica(f, target)
	case faultLeaderKill:
		r.killLeader(f, target)
	case faultAPIServer:
		r.restartAPIServer(f)
	case faultPodDelete:
		r.deletePod(f)
	case faultPodUnready:
		r.unreadyPod(f)
	case faultNodeRemove:
		r.removeNode(f)
	case faultWebhookOutage:
		r.webhookOutage(f)
	default:
		panic("unknown fault " + f.kind)
	}
}

func pickOf[T any](items []T, pick float64) T {
	return items[int(pick*float64(len(items)))%len(items)]
}

// killReplica SIGKILLs one replica of a binary and restarts it after a short pause.
func (r *run) killReplica(f fault, name string) {
	rep := pickOf(fleet.of(name), f.pick)
	pause := f.hold / 3
	r.l.fault(f.kind, fmt.Sprintf("SIGKILL %s, restarted after %s", rep.identity, pause.Round(100*time.Millisecond)))
	fleet.kill(rep)
	time.Sleep(pause)
	if err := fleet.restart(rep); err != nil {
		r.l.violate(invConverged, "restarting %s: %v", rep.identity, err)
	}
}

// leaseHolder returns the replica that holds a binary's lease and renewed it within the last
// two seconds, or nil.
func (r *run) leaseHolder(b binary) *replica {
	writes := r.audit.where(func(ev cluster.AuditEvent) bool { return isLeaseWrite(ev, b.lease) && succeeded(ev) })
	if len(writes) == 0 {
		return nil
	}
	last := writes[len(writes)-1]
	if time.Since(last.StageTimestamp) > 2*time.Second {
		return nil
	}
	return fleet.byUser(last.User.Username)
}

// killLeader SIGKILLs the replica that leads a controller and checks that the other replica takes
// over within the lease duration plus two jittered retry periods (takeoverBound): a crash does
// not release the lease, so the standby waits for it to expire.
func (r *run) killLeader(f fault, name string) {
	b := binaryNamed(name)
	var leader, standby *replica
	r.waitFor(500*time.Millisecond, time.Minute, func() bool {
		leader = r.leaseHolder(b)
		return leader != nil && fleet.allRunning()
	})
	if leader == nil {
		r.l.violate(invLeaderTakeover, "%s: no replica renewed %s in the last minute", name, b.lease)
		return
	}
	for _, rep := range fleet.of(name) {
		if rep != leader {
			standby = rep
		}
	}
	if err := standby.proc.WaitReady(time.Minute); err != nil {
		r.l.violate(invLeaderTakeover, "%s: standby %s not ready: %v", name, standby.identity, err)
		return
	}
	r.l.fault(f.kind, fmt.Sprintf("SIGKILL leader %s; standby %s", leader.identity, standby.identity))
	killedAt := time.Now()
	fleet.kill(leader)
	var tookOver time.Time
	r.waitFor(200*time.Millisecond, 3*leaseDuration, func() bool {
		writes := r.audit.where(func(ev cluster.AuditEvent) bool {
			return isLeaseWrite(ev, b.lease) && succeeded(ev) && ev.User.Username == standby.user() && ev.StageTimestamp.After(killedAt)
		})
		if len(writes) > 0 {
			tookOver = writes[0].StageTimestamp
		}
		return !tookOver.IsZero()
	})
	bound := takeoverBound
	took := tookOver.Sub(killedAt)
	if r.l.check(invLeaderTakeover, !tookOver.IsZero() && took <= bound, "%s: standby %s took over after %s (bound %s)", name, standby.identity, took, bound) {
		r.l.logf("      %s leads %s after the kill", standby.identity, took.Round(10*time.Millisecond))
		r.noteTakeover(name, took)
	}
	if err := fleet.restart(leader); err != nil {
		r.l.violate(invConverged, "restarting %s: %v", leader.identity, err)
	}
}

// noteTakeover keeps the slowest takeover per controller for the figures.
func (r *run) noteTakeover(name string, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.takeovers == nil {
		r.takeovers = map[string][]time.Duration{}
	}
	r.takeovers[name] = append(r.takeovers[name], took)
}

// restartAPIServer restarts kube-apiserver (SIGKILL or SIGTERM) with etcd keeping the data, and
// checks that every stored spec survived.
func (r *run) restartAPIServer(f fault) {
	r.specWrites.RLock()
	defer r.specWrites.RUnlock()
	before := r.snapshotPersistently()
	kill := f.pick < 0.5
	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	r.l.fault(f.kind, how+" kube-apiserver, etcd keeps its data")
	began := time.Now()
	if err := r.c.Restart(r.ctx, "kube-apiserver", kill); err != nil {
		r.l.violate(invConverged, "restarting kube-apiserver: %v", err)
		return
	}
	r.l.logf("      kube-apiserver serves again after %s", time.Since(began).Round(100*time.Millisecond))
	r.compareSnapshots("after the kube-apiserver restart", before, r.snapshotPersistently())
}

// inferencePods lists the live inference pods by name.
func (r *run) inferencePods(ready bool) []corev1.Pod {
	list := &corev1.PodList{}
	if err := r.k.List(r.ctx, list, client.InNamespace(inferenceNS)); err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Labels[grovev1alpha1.LabelPartOf] == stuckPCS {
			continue // its claims never exist: it never runs, by design
		}
		if p.DeletionTimestamp == nil && (!ready || podReady(&p)) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deletePod deletes a live inference pod; the operator must refill its index.
func (r *run) deletePod(f fault) {
	pods := r.inferencePods(false)
	if len(pods) == 0 {
		r.l.fault(f.kind, "no inference pod to delete (API server unavailable?)")
		return
	}
	p := pickOf(pods, f.pick)
	r.l.fault(f.kind, "delete "+p.Name)
	if err := r.k.Delete(r.ctx, &p); err != nil {
		r.l.logf("      delete %s: %v", p.Name, err)
	}
}

// unreadyPod turns a Ready inference pod's readiness off for a while, as a failing probe would.
func (r *run) unreadyPod(f fault) {
	pods := r.inferencePods(true)
	if len(pods) == 0 {
		r.l.fault(f.kind, "no ready inference pod (API server unavailable?)")
		return
	}
	p := pickOf(pods, f.pick)
	r.l.fault(f.kind, fmt.Sprintf("%s unready for %s", p.Name, f.hold.Round(100*time.Millisecond)))
	if err := r.setReady(&p, corev1.ConditionFalse); err != nil {
		r.l.logf("      unready %s: %v", p.Name, err)
		return
	}
	r.recoveries.Add(1)
	go func() {
		defer r.recoveries.Done()
		time.Sleep(f.hold)
		r.retry("making "+p.Name+" ready again", func() error {
			cur := &corev1.Pod{}
			err := r.k.Get(r.ctx, client.ObjectKeyFromObject(&p), cur)
			switch {
			case isNotFound(err):
				return nil // gone: nothing to make ready, kwok makes its replacement ready
			case err != nil:
				return err // the API server is restarting: try again
			case cur.UID != p.UID || cur.DeletionTimestamp != nil:
				return nil // replaced or going: kwok makes the new pod ready
			}
			return r.setReady(cur, corev1.ConditionTrue)
		})
	}()
}

func (r *run) setReady(p *corev1.Pod, status corev1.ConditionStatus) error {
	patched := p.DeepCopy()
	for i := range patched.Status.Conditions {
		if t := patched.Status.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
			patched.Status.Conditions[i].Status = status
			patched.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	return r.k.Status().Patch(r.ctx, patched, client.MergeFrom(p))
}

// removeNode deletes a chaos-pool node (its pods are lost, as with a dead machine; the pod
// garbage collector deletes them once it notices) and adds it back after a while.
func (r *run) removeNode(f fault) {
	nodes := &corev1.NodeList{}
	if err := r.k.List(r.ctx, nodes, client.MatchingLabels{labelPool: poolChaos}); err != nil {
		r.l.fault(f.kind, "cannot list nodes: "+err.Error())
		return
	}
	var up []string
	for _, n := range nodes.Items {
		if n.DeletionTimestamp == nil {
			up = append(up, n.Name)
		}
	}
	sort.Strings(up)
	if len(up) < 2 {
		r.l.fault(f.kind, "skipped: only one chaos node is up")
		return
	}
	name := pickOf(up, f.pick)
	away := 5 * f.hold
	r.l.fault(f.kind, fmt.Sprintf("delete node %s, back after %s", name, away.Round(time.Second)))
	if err := r.k.Delete(r.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		r.l.logf("      delete node %s: %v", name, err)
		return
	}
	r.recoveries.Add(1)
	go func() {
		defer r.recoveries.Done()
		time.Sleep(away)
		r.retry("re-adding node "+name, func() error {
			err := r.c.AddNodes(r.ctx, chaosNodeSpec(name))
			if err != nil && strings.Contains(err.Error(), "already exists") {
				return nil
			}
			return err
		})
		r.l.logf("      node %s is back", name)
	}()
}

// webhookOutage keeps the webhook down for a while: admission of grove and trainer objects must
// fail closed with an error that names the webhook, and nothing stored may change.
func (r *run) webhookOutage(f fault) {
	r.specWrites.RLock()
	defer r.specWrites.RUnlock()
	before := r.snapshotPersistently()
	w := fleet.of("grove-webhook")[0]
	r.l.fault(f.kind, fmt.Sprintf("webhook down for %s", f.hold.Round(100*time.Millisecond)))
	fleet.kill(w)
	err := r.k.Create(r.ctx, inferencePCS("admission-probe", 1), client.DryRunAll)
	r.l.check(invFailsClosed, err != nil && strings.Contains(err.Error(), `failed calling webhook "mpodcliqueset.grove.io"`),
		"a PodCliqueSet create while the webhook is down answered %v", err)
	if err != nil {
		r.l.logf("      PodCliqueSet admission: %v", err)
	}
	err = r.k.Create(r.ctx, probeTrainJob(), client.DryRunAll)
	r.l.check(invFailsClosed, err != nil && strings.Contains(err.Error(), `failed calling webhook "vtrainjob.trainer.kubeflow.org"`),
		"a TrainJob create while the webhook is down answered %v", err)
	time.Sleep(f.hold)
	if err := fleet.restart(w); err != nil {
		r.l.violate(invConverged, "restarting the webhook: %v", err)
		return
	}
	// Admitted again once the webhook is back.
	var last error
	r.waitFor(200*time.Millisecond, 30*time.Second, func() bool {
		last = r.k.Create(r.ctx, inferencePCS("admission-probe", 1), client.DryRunAll)
		return last == nil
	})
	r.l.check(invFailsClosed, last == nil, "admission after the webhook came back: %v", last)
	r.compareSnapshots("after the webhook outage", before, r.snapshotPersistently())
}

func probeTrainJob() *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: inferenceNS, Name: "admission-probe"},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: probeRuntime, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer:    &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](1)},
		},
	}
}

// scaleGroup sets the scaled group's replicas through the scale subresource, as an autoscaler.
func (r *run) scaleGroup(replicas int32) {
	r.mu.Lock()
	r.scaled = replicas
	r.mu.Unlock()
	pcsg := &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: inferenceNS, Name: scaledGroup}}
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	r.retry("scaling "+scaledGroup, func() error {
		return r.k.SubResource("scale").Patch(r.ctx, pcsg.DeepCopy(), patch)
	})
	r.l.logf("      workload: %s scaled to %d", scaledGroup, replicas)
}

// updateCoherent changes the Coherent workload's worker template to the next revision: an update
// starts (or, when one is in flight, widens) while faults hit.
func (r *run) updateCoherent() {
	r.mu.Lock()
	r.revision++
	revision := r.revision
	r.mu.Unlock()
	r.specWrites.Lock()
	defer r.specWrites.Unlock()
	r.retry("changing "+coherentSet+"'s template", func() error {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if err := r.k.Get(r.ctx, client.ObjectKey{Namespace: inferenceNS, Name: coherentSet}, pcs); err != nil {
			return err
		}
		for _, c := range pcs.Spec.Template.Cliques {
			if c.Name == "worker" {
				c.Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: revisionEnv, Value: fmt.Sprint(revision)}}
			}
		}
		return r.k.Update(r.ctx, pcs)
	})
	r.l.logf("      workload: %s's worker template changed to revision %d (Coherent)", coherentSet, revision)
}
