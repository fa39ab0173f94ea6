package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// A contender is one way to run a shape's pods: through this project or through a peer users
// choose instead. Each runs in its own namespace, which is then deleted, on the same cluster and
// with the same client limits (qps, burst) for every controller.
type contender struct {
	name string
	// kind is the lower-case kind of the objects applied, naming their admission webhooks.
	kind string
	// peer marks the controllers this project is compared with.
	peer bool
	// objs are the objects applied, at once, for pods pods.
	objs func(ns string, pods, groups int) []client.Object
	// rivals name the peers this project's contender is judged against; none: every peer of the
	// shape. A TrainJob is judged against Kubeflow's TrainJob, not against a JobSet applied
	// directly, which skips the layer both add.
	rivals []string
	// podsByPeer marks a contender whose pods a peer's controllers make (this project's TrainJob
	// on the JobSet path: JobSet and the Job controller, as for Kubeflow's): its times measure
	// those controllers again and are reported, not held to the targets.
	podsByPeer bool
	// swap, when set, runs before (on) and after (off) the contender: Kubeflow's controller
	// replaces the trainer-controller for its turn (both reconcile the same TrainJobs).
	swap func(ctx context.Context, on bool) error
}

// PeerRun is one contender's figures for a shape.
type PeerRun struct {
	Shape   string  `json:"shape"`
	Name    string  `json:"name"`
	Peer    bool    `json:"peer"`
	Pods    int     `json:"pods"`
	Kind    string  `json:"kind"`
	Created float64 `json:"createdSeconds"`
	// AdmissionMs is what one create of the kind waited for its admission webhooks (the API
	// server's own histogram: mean per webhook, summed), measured on the same creates sent as dry
	// runs first: the webhooks answer while no controller reacts, so the figure is the webhooks'
	// own (TLS, decoding, lookups), not the load the contender's controllers put on the machine.
	// Zero where the contender applies objects of other kinds too (a TrainJob and its runtime).
	AdmissionMs float64 `json:"admissionMsPerCreate"`
	// AdmissionUnderLoadMs is the same for the real creates, while the contender's controllers
	// already build the first workloads: a faster controller makes its own admission look slower.
	AdmissionUnderLoadMs float64 `json:"admissionMsPerCreateUnderLoad"`
	Running              float64 `json:"runningSeconds"`
	// Writes are every controller's writes in the namespace until all pods ran (the bench's own
	// creates of the workload excluded), by actor.
	Writes       int          `json:"writes"`
	WritesPerPod float64      `json:"writesPerPod"`
	WritesBy     []writeCount `json:"writesBy"`
	// Refused are writes the API server refused (status ≥ 400) until all pods ran, by actor
	// (kwok, the simulated kubelet, has its status patches refused now and then: it merges two
	// pod IPs into one patch).
	Refused       int          `json:"refused"`
	RefusedWrites []writeCount `json:"refusedWritesBy,omitempty"`
	// Deletion is the namespace's deletion: its time and the creates refused meanwhile.
	DeletionSeconds float64 `json:"deletionSeconds"`
	RefusedCreates  int     `json:"refusedCreatesDuringDeletion"`
	// OwnRefusedCreates are those of the contender's own controllers (this project's binaries,
	// or the peer's): the namespace controller's root-CA ConfigMap and the Job controller are
	// the cluster's.
	OwnRefusedCreates int          `json:"ownRefusedCreatesDuringDeletion"`
	RefusedBy         []writeCount `json:"refusedCreatesBy,omitempty"`
	// CPUSeconds each controller process spent from apply to namespace gone.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// Ratios are to the best peer of the shape (lower is better), filled at the end of the shape.
	CreatedRatio  float64 `json:"createdRatioToBestPeer,omitempty"`
	RunningRatio  float64 `json:"runningRatioToBestPeer,omitempty"`
	DeletionRatio float64 `json:"deletionRatioToBestPeer,omitempty"`
	// done is closed once the namespace is gone and err says how that went.
	done chan struct{}
	err  error
}

// longRunning keeps kwok's pods Running: a pod whose restart policy is Never completes at once in
// the local cluster unless told when to exit.
func longRunning(meta *metav1.ObjectMeta) {
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Labels[cluster.LabelExitCode] = "0"
	meta.Annotations[cluster.AnnotationExitAfter] = "87600h"
}

// longClique is a clique of pods that keep running, with the same kwok instructions as the
// peers' pods: each contender's pods go through the same simulated kubelet stages.
func longClique(name string, pods int) *grovev1alpha1.PodCliqueTemplateSpec {
	c := clique(name, int32(pods))
	meta := metav1.ObjectMeta{}
	longRunning(&meta)
	c.Labels, c.Annotations = meta.Labels, meta.Annotations
	return c
}

// jobSet is groups JobSets' worth of pods as one JobSet: one replicated job of groups Jobs of
// pods/groups pods each.
func jobSet(ns, name string, groups, podsPerGroup int) *jobsetv1alpha2.JobSet {
	pod := corev1.PodTemplateSpec{Spec: podSpec("worker")}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	longRunning(&pod.ObjectMeta)
	return &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: "worker", Replicas: int32(groups),
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Parallelism: ptr.To(int32(podsPerGroup)), Completions: ptr.To(int32(podsPerGroup)),
				CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimit: ptr.To[int32](0), Template: pod,
			}},
		}}},
	}
}

// peerRuntime is a plain torch runtime of one node job whose pods keep running, building kind.
func peerRuntime(ns string, kind trainerv1alpha1.WorkloadKind) *trainerv1alpha1.TrainingRuntime {
	rt := trainingRuntime(ns, "87600h")
	rt.Name = "bench-" + strings.ToLower(string(kind))
	rt.Spec.WorkloadKind = kind
	rt.Spec.MLPolicy = &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), MLPolicySource: trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}}
	return rt
}

func trainJob(ns, name, runtime string, nodes int) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: runtime, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer:    &trainerv1alpha1.Trainer{NumNodes: ptr.To(int32(nodes))},
		},
	}
}

// lws is a LeaderWorkerSet of groups groups of size pods (a leader and size-1 workers).
func lws(ns, name string, groups, size int) *unstructured.Unstructured {
	template := map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{cluster.LabelExitCode: "0"},
		"annotations": map[string]any{cluster.AnnotationExitAfter: "87600h"},
	}, "spec": map[string]any{
		"containers": []any{map[string]any{"name": "worker", "image": "busybox:1.36",
			"resources": map[string]any{"requests": map[string]any{"cpu": "10m"}}}},
	}}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"replicas":      int64(groups),
			"startupPolicy": "LeaderCreated",
			"leaderWorkerTemplate": map[string]any{
				"size":           int64(size),
				"workerTemplate": template,
			},
		},
	}}
	return u
}

// shape is one peer comparison: pods pods in groups groups, through each contender.
type shape struct {
	id, desc     string
	groups, pods int
	contenders   []contender
	// ourWritesGoal bounds the grove-operator's writes per pod (0: none).
	ourWritesGoal float64
}

// shapes are the peer comparisons: the same pods in one workload, and in many small groups.
func (b *bench) shapes() []shape {
	big := int(b.sz.S1Workers) + 1
	groups, size := b.sz.PeerGroups, b.sz.PeerGroupSize
	kubeflow := func(ctx context.Context, on bool) error { return b.kubeflowTurn(ctx, on) }
	return []shape{
		{id: fmt.Sprintf("%dx1", big), desc: fmt.Sprintf("%d pods in one workload", big), groups: 1, pods: big, contenders: []contender{
			{name: "PodCliqueSet", kind: "podcliqueset", objs: func(ns string, pods, _ int) []client.Object {
				return []client.Object{pcs(ns, "big", longClique("worker", pods))}
			}},
			{name: "TrainJob → PodCliqueSet", kind: "trainjob", rivals: []string{kubeflowName}, objs: func(ns string, pods, _ int) []client.Object {
				return []client.Object{peerRuntime(ns, trainerv1alpha1.WorkloadKindPodCliqueSet), trainJob(ns, "big", "bench-podcliqueset", pods)}
			}},
			{name: "TrainJob → JobSet", kind: "trainjob", rivals: []string{kubeflowName}, podsByPeer: true, objs: func(ns string, pods, _ int) []client.Object {
				return []client.Object{peerRuntime(ns, trainerv1alpha1.WorkloadKindJobSet), trainJob(ns, "big", "bench-jobset", pods)}
			}},
			{name: "JobSet", kind: "jobset", peer: true, objs: func(ns string, pods, _ int) []client.Object {
				return []client.Object{jobSet(ns, "big", 1, pods)}
			}},
			{name: kubeflowName, kind: "trainjob", peer: true, swap: kubeflow, objs: func(ns string, pods, _ int) []client.Object {
				return []client.Object{peerRuntime(ns, trainerv1alpha1.WorkloadKindJobSet), trainJob(ns, "big", "bench-jobset", pods)}
			}},
		}},
		{id: fmt.Sprintf("%dx%d", groups, size), desc: fmt.Sprintf("%d groups of %d pods", groups, size), groups: groups, pods: groups * size, ourWritesGoal: 1.3,
			contenders: []contender{
				{name: fmt.Sprintf("1 PodCliqueSet × %d replicas", groups), kind: "podcliqueset", objs: func(ns string, pods, groups int) []client.Object {
					p := pcs(ns, "groups", longClique("worker", pods/groups))
					p.Spec.Replicas = int32(groups)
					return []client.Object{p}
				}},
				{name: fmt.Sprintf("%d PodCliqueSets", groups), kind: "podcliqueset", objs: func(ns string, pods, groups int) []client.Object {
					var out []client.Object
					for i := range groups {
						out = append(out, pcs(ns, fmt.Sprintf("group-%d", i), longClique("worker", pods/groups)))
					}
					return out
				}},
				{name: fmt.Sprintf("LeaderWorkerSet %d×%d", groups, size), kind: "leaderworkerset", peer: true, objs: func(ns string, pods, groups int) []client.Object {
					return []client.Object{lws(ns, "groups", groups, pods/groups)}
				}},
				{name: fmt.Sprintf("%d JobSets", groups), kind: "jobset", peer: true, objs: func(ns string, pods, groups int) []client.Object {
					var out []client.Object
					for i := range groups {
						out = append(out, jobSet(ns, fmt.Sprintf("group-%d", i), 1, pods/groups))
					}
					return out
				}},
			}},
	}
}

const kubeflowName = "Kubeflow TrainJob → JobSet"

// own are the identities of a contender's own controllers.
func own(c contender) map[string]bool {
	switch {
	case !c.peer:
		return map[string]bool{"grove-operator": true, "backend-controller": true, "trainer-controller": true}
	case c.name == kubeflowName:
		return map[string]bool{cluster.KubeflowTrainerUser: true, cluster.JobSetUser: true}
	case strings.HasPrefix(c.name, "LeaderWorkerSet"):
		return map[string]bool{cluster.LWSUser: true}
	}
	return map[string]bool{cluster.JobSetUser: true}
}

// kubeflowTurn stops the trainer-controller and starts Kubeflow's controller manager (on), or
// the reverse (off).
func (b *bench) kubeflowTurn(ctx context.Context, on bool) error {
	if on {
		b.procs["trainer-controller"].Stop()
		delete(b.procs, "trainer-controller")
		p, err := b.c.StartKubeflowTrainer(ctx, qps, burst)
		if err != nil {
			return err
		}
		b.procs[cluster.KubeflowTrainerUser] = p
		return nil
	}
	b.procs[cluster.KubeflowTrainerUser].Stop()
	delete(b.procs, cluster.KubeflowTrainerUser)
	return b.startBinary("trainer-controller", "trainer-controller", b.mode)
}

// peers runs every shape through every contender and checks the targets against the best peer.
func (b *bench) peers(ctx context.Context) error {
	if err := b.ensureLWS(ctx); err != nil {
		return err
	}
	for _, sh := range b.shapes() {
		var runs []*PeerRun
		for i, c := range sh.contenders {
			run, err := b.peerRun(ctx, fmt.Sprintf("peer-%s-%d", strings.ToLower(sh.id), i), sh.id, c, sh.pods, sh.groups)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", sh.desc, c.name, err)
			}
			runs = append(runs, run)
		}
		for _, r := range runs {
			<-r.done
			if r.err != nil {
				return fmt.Errorf("%s, %s: %w", sh.desc, r.Name, r.err)
			}
		}
		for i, r := range runs {
			c := sh.contenders[i]
			best := PeerRun{Created: math.Inf(1), Running: math.Inf(1), DeletionSeconds: math.Inf(1), WritesPerPod: math.Inf(1)}
			for _, p := range runs {
				if p.Peer && (len(c.rivals) == 0 || slices.Contains(c.rivals, p.Name)) {
					best.Created, best.Running = min(best.Created, p.Created), min(best.Running, p.Running)
					best.DeletionSeconds, best.WritesPerPod = min(best.DeletionSeconds, p.DeletionSeconds), min(best.WritesPerPod, p.WritesPerPod)
				}
			}
			r.CreatedRatio, r.RunningRatio, r.DeletionRatio = r.Created/best.Created, r.Running/best.Running, r.DeletionSeconds/best.DeletionSeconds
			b.r.Peers = append(b.r.Peers, *r)
			if r.Peer {
				continue
			}
			prefix := sh.id + " " + r.Name
			if !c.podsByPeer {
				b.r.target(prefix+": all created ≤ 0.9× best peer", r.CreatedRatio, 0.9)
				b.r.target(prefix+": all Running ≤ 1.0× best peer", r.RunningRatio, 1.0)
			}
			b.r.target(prefix+": writes per pod ≤ best peer's", r.WritesPerPod, best.WritesPerPod)
			b.r.target(prefix+": refused creates of its binaries during namespace deletion = 0", float64(r.OwnRefusedCreates), 0)
			b.r.target(prefix+": namespace deletion ≤ 1.1× best peer", r.DeletionRatio, 1.1)
			if sh.groups > 1 && r.Kind == "podcliqueset" {
				for _, p := range runs {
					if p.Peer && p.Kind == "jobset" {
						b.r.target(prefix+": admission per create ≤ JobSet's (ms)", r.AdmissionMs, p.AdmissionMs)
					}
				}
			}
			if sh.ourWritesGoal > 0 {
				ours := 0
				for _, w := range r.WritesBy {
					if w.Binary == "grove-operator" {
						ours += w.Count
					}
				}
				b.r.target(prefix+": grove-operator writes per pod ≤ 1.3", float64(ours)/float64(r.Pods), sh.ourWritesGoal)
			}
		}
	}
	return nil
}

// peerRun applies one contender's objects in a new namespace, waits until every pod runs, then
// deletes the namespace and waits until it is gone.
func (b *bench) peerRun(ctx context.Context, ns, shapeID string, c contender, pods, groups int) (_ *PeerRun, err error) {
	done := b.progress.start(fmt.Sprintf("  %s: %s (%d pods)", shapeID, c.name, pods))
	defer func() { done(err) }()
	if c.swap != nil {
		if err := c.swap(ctx, true); err != nil {
			return nil, err
		}
		defer func() { _ = c.swap(ctx, false) }()
	}
	if _, err := b.namespace(ctx, ns); err != nil {
		return nil, err
	}
	idle, err := b.dryRunAdmission(ctx, c, ns, pods, groups)
	if err != nil {
		return nil, err
	}
	before := b.allUsage()
	hooksBefore, err := b.admissionMetrics(ctx)
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	list := c.objs(ns, pods, groups)
	if err := parallel(len(list), applyParallelism, func(i int) error { return b.k8s().Create(ctx, list[i]) }); err != nil {
		return nil, err
	}
	ph, err := b.w.waitPhases(ctx, ns, pods, begin, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	hooksAfter, err := b.admissionMetrics(ctx)
	if err != nil {
		return nil, err
	}
	run := &PeerRun{Shape: shapeID, Name: c.name, Peer: c.peer, Kind: c.kind, Pods: pods, Created: ph.Created.Seconds(), Running: ph.Running.Seconds(),
		AdmissionMs: ms(idle), AdmissionUnderLoadMs: ms(admissionPerCreate(hooksBefore, hooksAfter, c.kind)), CPUSeconds: map[string]float64{}}
	time.Sleep(3 * time.Second) // the last status writes land in the window

	deleting := time.Now()
	if err := b.k8s().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	run.done = make(chan struct{})
	finish := func() {
		defer close(run.done)
		run.err = b.deleted(ctx, ns, c, run, before, begin, deleting)
	}
	if b.sz.OverlapDeletions {
		go finish()
		return run, nil
	}
	finish()
	return run, run.err
}

// applyParallelism is how many creates the bench sends at once, as a client applying a file of
// many objects would.
const applyParallelism = 32

// dryRunAdmission sends the contender's creates as dry runs, as many at once as the real ones,
// and returns what each waited for the kind's webhooks: admission alone, no controller reacting
// (a dry run stores nothing). Zero when the contender applies objects of other kinds too: a
// TrainJob's admission reads its runtime, which a dry run would not have stored.
func (b *bench) dryRunAdmission(ctx context.Context, c contender, ns string, pods, groups int) (time.Duration, error) {
	list := c.objs(ns, pods, groups)
	for _, obj := range list {
		gvk, err := apiutil.GVKForObject(obj, b.k8s().Scheme())
		if err != nil {
			return 0, err
		}
		if strings.ToLower(gvk.Kind) != c.kind {
			return 0, nil
		}
	}
	before, err := b.admissionMetrics(ctx)
	if err != nil {
		return 0, err
	}
	if err := parallel(len(list), applyParallelism, func(i int) error { return b.k8s().Create(ctx, list[i], client.DryRunAll) }); err != nil {
		return 0, fmt.Errorf("dry-run creates: %w", err)
	}
	after, err := b.admissionMetrics(ctx)
	if err != nil {
		return 0, err
	}
	return admissionPerCreate(before, after, c.kind), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// deleted waits until the namespace of run is gone and fills in the run's writes, refusals and
// CPU from the audit log and /proc.
func (b *bench) deleted(ctx context.Context, ns string, c contender, run *PeerRun, before map[string]usage, begin, deleting time.Time) error {
	if err := b.namespaceGone(ctx, ns); err != nil {
		return err
	}
	gone := time.Now()
	cpu := map[string]float64{}
	for name, u := range b.allUsage() {
		cpu[name] = u.CPUSeconds - before[name].CPUSeconds
	}

	events, err := b.c.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ev.StageTimestamp.After(begin) && actor(ev) != benchActor
	})
	if err != nil {
		return err
	}
	mine := own(c)
	writes, refusedBy, refusedWrites := map[writeCount]int{}, map[writeCount]int{}, map[writeCount]int{}
	for _, ev := range events {
		key := writeKey(actor(ev), ev)
		switch {
		case !ev.StageTimestamp.After(deleting):
			writes[key]++
			if ev.ResponseStatus.Code >= 400 {
				run.Refused++
				refusedWrites[refusalKey(actor(ev), ev)]++
			}
		case ev.StageTimestamp.After(deleting) && ev.Verb == "create" && ev.ResponseStatus.Code == 403:
			refusedBy[key]++
			run.RefusedCreates++
			if mine[key.Binary] {
				run.OwnRefusedCreates++
			}
		}
	}
	run.WritesBy, run.Writes = counts(writes)
	run.WritesPerPod = float64(run.Writes) / float64(run.Pods)
	run.RefusedBy, _ = counts(refusedBy)
	run.RefusedWrites, _ = counts(refusedWrites)
	run.CPUSeconds = cpu
	run.DeletionSeconds = gone.Sub(deleting).Seconds()
	return nil
}

func counts(m map[writeCount]int) ([]writeCount, int) {
	var out []writeCount
	total := 0
	for k, v := range m {
		k.Count = v
		out = append(out, k)
		total += v
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out, total
}

// benchActor is the bench's own client: its creates of the workloads are the input, not a
// controller's work.
const benchActor = "bench"

// actor names who made a write: the project's binaries and the peers by their identity; writes
// made with the administrator's credentials (kwok, the bench) by the client's name.
func actor(ev cluster.AuditEvent) string {
	user := ev.User.Username
	if name, ok := strings.CutPrefix(user, "system:serviceaccount:"+cluster.Namespace+":"); ok {
		return name
	}
	if user == "admin" || user == "kubernetes-admin" || strings.HasPrefix(user, "system:admin") {
		agent, _, _ := strings.Cut(ev.UserAgent, "/")
		return agent
	}
	return strings.TrimPrefix(user, "system:")
}

// allUsage is usage() plus the cluster's controllers the contenders rely on.
func (b *bench) allUsage() map[string]usage {
	out := b.usage()
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", cluster.JobSetUser} {
		if pid := b.c.ComponentPid(name); pid > 0 {
			if u, err := procUsage(pid); err == nil {
				out[name] = u
			}
		}
	}
	return out
}

// webhookTime is the API server's admission webhook histogram (sum of seconds and count of
// calls), by webhook name, for creates.
type webhookTime map[string]struct{ Sum, Count float64 }

// admissionMetrics reads apiserver_admission_webhook_admission_duration_seconds from the API
// server's /metrics.
func (b *bench) admissionMetrics(ctx context.Context) (webhookTime, error) {
	cs, err := kubernetes.NewForConfig(b.c.RESTConfig())
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := webhookTime{}
	family := families["apiserver_admission_webhook_admission_duration_seconds"]
	if family == nil {
		return out, nil
	}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["operation"] != "CREATE" {
			continue
		}
		t := out[labels["name"]]
		t.Sum += m.GetHistogram().GetSampleSum()
		t.Count += float64(m.GetHistogram().GetSampleCount())
		out[labels["name"]] = t
	}
	return out, nil
}

// admissionPerCreate is the mean time each webhook of the kind took per create between before
// and after, summed over the kind's webhooks (mutating and validating run one after the other):
// what a create of one such object waits for admission.
func admissionPerCreate(before, after webhookTime, kind string) time.Duration {
	total := 0.0
	for name, a := range after {
		// kubebuilder names a kind's webhooks m<kind>.<domain> and v<kind>.<domain>.
		if len(name) < 2 || (name[0] != 'm' && name[0] != 'v') || !strings.HasPrefix(name[1:], kind+".") {
			continue
		}
		b := before[name]
		if calls := a.Count - b.Count; calls > 0 {
			total += (a.Sum - b.Sum) / calls
		}
	}
	return time.Duration(total * float64(time.Second))
}
