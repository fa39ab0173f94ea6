package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// qps and burst of every binary and of the baseline client.
const qps, burst = 200, 400

// benchNode is a kwok node large enough that capacity never limits a scenario.
func benchNode(i int) cluster.NodeSpec {
	n := cluster.DefaultNode(i)
	n.Capacity[corev1.ResourcePods] = resource.MustParse("1000")
	n.Capacity[corev1.ResourceCPU] = resource.MustParse("1000")
	return n
}

type bench struct {
	c     *cluster.Cluster
	sz    sizes
	r     *Report
	cs    kubernetes.Interface
	w     *podWatch
	procs map[string]*cluster.Process
	bases map[string]phases
	// binDir holds the binaries, for restarting them in another scheduler mode.
	binDir string
	// progress prints a line as each part of the run starts and ends.
	progress progress
	// mode is the extra configuration every binary runs with now (the scheduler profiles).
	mode string
	// starts counts the starts of each log name.
	starts map[string]int
	// restartsMu guards restarts: the cluster's components its supervisor restarted, with when.
	restartsMu sync.Mutex
	restarts   []string
	// pprofURL is the grove-operator's profiling endpoint when sizes.HeapProfiles is set.
	pprofURL string
}

func (b *bench) k8s() client.Client { return b.c.Client() }

// baselineIdentity is the baseline client's service account. An administrator's requests skip
// authorization and API Priority and Fairness; the binaries' do not, so the baseline's must not
// either: it is a service account like them, allowed only the pods and Services it makes.
const baselineIdentity = "bench-baseline"

func (b *bench) baselineClient(ctx context.Context) (kubernetes.Interface, error) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: baselineIdentity},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "patch", "get", "list", "watch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: baselineIdentity},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: baselineIdentity},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: cluster.Namespace, Name: baselineIdentity}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := b.k8s().Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	cfg, err := b.c.RESTConfigFor(cluster.ServiceAccountUser(baselineIdentity), cluster.ServiceAccountGroups...)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// The authorizer learns the binding from its informer: wait until it allows a create.
	return cs, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"}},
		}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, nil
	})
}

func (b *bench) namespace(ctx context.Context, name string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return name, b.k8s().Create(ctx, ns)
}

func (b *bench) run(ctx context.Context, binDir string) error {
	cs, err := b.baselineClient(ctx)
	if err != nil {
		return err
	}
	b.cs = cs
	observer, err := kubernetes.NewForConfig(b.c.RESTConfig())
	if err != nil {
		return err
	}
	if b.w, err = watchPods(ctx, observer); err != nil {
		return err
	}
	b.procs, b.binDir = map[string]*cluster.Process{}, binDir
	for _, name := range []string{"grove-operator", "backend-controller", "trainer-controller"} {
		if err := b.startBinary(name, name, ""); err != nil {
			return err
		}
	}
	// The webhook runs as deployed: every create of a workload waits for its admission.
	if err := b.startWebhook(ctx, "", "grove-webhook"); err != nil {
		return err
	}

	if err := b.warmUp(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	steps := []struct {
		id  string
		run func(ctx context.Context) error
	}{
		{"peers", b.peers},
		{"rollout", b.rollout},
		{"recovery", func(ctx context.Context) error {
			return b.runFamily(ctx, b.recovery(b.sz.Recovery, b.sz.RecoveryRounds))
		}},
		{"scale-out", func(ctx context.Context) error {
			return b.runFamily(ctx, b.scaleOut(b.sz.ScaleGroups, b.sz.ScaleSize, b.sz.ScaleRounds))
		}},
		{"placement", func(ctx context.Context) error { return b.runFamily(ctx, b.placement(b.sz.Placement)) }},
		{"s1", func(ctx context.Context) error {
			pods := int(b.sz.S1Workers) + 1
			return b.withBaseline(ctx, "baseline-big", baselineShape{Pods: pods, PerService: pods}, b.s1)
		}},
		{"s1-gang", func(ctx context.Context) error {
			pods := int(b.sz.S1Workers) + 1
			return b.withBaseline(ctx, "baseline-big", baselineShape{Pods: pods, PerService: pods}, b.s1Gang)
		}},
		{"s2", func(ctx context.Context) error {
			return b.withBaseline(ctx, "baseline-small", baselineShape{Pods: b.sz.S2Sets * b.sz.S2Pods, PerService: b.sz.S2Pods}, b.s2)
		}},
		{"s3", func(ctx context.Context) error {
			pods := int(b.sz.S3From) * 8
			return b.withBaseline(ctx, "baseline-group", baselineShape{Pods: pods, PerService: pods}, b.s3)
		}},
		{"s5", b.s5},
		{"s4", b.s4},
		{"s6", b.s6},
		{"memory", b.memory},
	}
	for _, s := range steps {
		if len(b.sz.Only) > 0 && !b.sz.Only[s.id] {
			continue
		}
		done := b.progress.start(s.id)
		err := s.run(ctx)
		done(err)
		if err != nil {
			return err
		}
	}
	return nil
}

// warmUp runs one burst of plain pods (the first shape's size) through the fresh cluster and
// removes it before anything is measured. The first burst after the nodes come up pays kwok's
// start: it played the pod-ready stage of ~110 of 1000 pods twice, and the second status patch,
// with a second pod IP, was refused — writes that counted against whichever contender ran first.
func (b *bench) warmUp(ctx context.Context) error {
	ns, err := b.namespace(ctx, "warm-up")
	if err != nil {
		return err
	}
	pods := int(b.sz.S1Workers) + 1
	if _, err := baseline(ctx, b.cs, b.w, ns, baselineShape{Pods: pods, PerService: pods}); err != nil {
		return err
	}
	if err := b.k8s().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	return b.namespaceGone(ctx, ns)
}

// namespaceGone waits until a deleted namespace is gone.
func (b *bench) namespaceGone(ctx context.Context, ns string) error {
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := b.k8s().Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("namespace %s not gone: %w", ns, err)
	}
	return nil
}

// gangConfig puts kube-scheduler in gang mode; the bench cluster serves CompositePodGroup, so
// the backend-controller builds hierarchical gangs.
const gangConfig = `scheduler:
  profiles:
  - name: kube-scheduler
    default: true
    config: {gangScheduling: true}
`

// startBinary starts one of the project's binaries with extraConfig, logging to logName, and
// waits until it is ready.
func (b *bench) startBinary(name, logName, extraConfig string) error {
	if name == "grove-operator" && b.sz.HeapProfiles != "" {
		ports, err := cluster.FreePorts(1)
		if err != nil {
			return err
		}
		extraConfig += fmt.Sprintf("debugging: {enableProfiling: true, pprofBindPort: %d}\n", ports[0])
		b.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", ports[0])
	}
	if name == "backend-controller" {
		return b.start(name, name, logName, extraConfig, "--backend=kube-scheduler")
	}
	return b.start(name, name, logName, extraConfig)
}

// startBackend starts a backend-controller syncing backend, known as key in b.procs and logging
// to key.
func (b *bench) startBackend(backend, key, extraConfig string) error {
	return b.start("backend-controller", key, key, extraConfig, "--backend="+backend)
}

// logName is base the first time, base-2 the second…: every start of a binary keeps its own log
// (a failed phase's logs are what says why).
func (b *bench) logName(base string) string {
	if b.starts == nil {
		b.starts = map[string]int{}
	}
	b.starts[base]++
	if n := b.starts[base]; n > 1 {
		return fmt.Sprintf("%s-%d", base, n)
	}
	return base
}

// start starts binary name as b.procs[key], logging to logName.
func (b *bench) start(name, key, logName, extraConfig string, args ...string) error {
	p, err := b.c.StartBinary(b.binDir, name, b.logName(logName), extraConfig, args...)
	if err != nil {
		return err
	}
	if err := p.WaitReady(time.Minute); err != nil {
		return err
	}
	b.procs[key] = p
	return nil
}

// schedulerMode restarts the grove-operator, the backend-controller, the trainer-controller
// (unless Kubeflow's replaces it) and grove-webhook with the scheduler profiles of extraConfig
// ("" is kube-scheduler in plain mode). All read the profiles: they switch together.
func (b *bench) schedulerMode(extraConfig, suffix string) error {
	b.mode = extraConfig
	for _, name := range []string{"grove-operator", "backend-controller", "trainer-controller"} {
		p := b.procs[name]
		if p == nil {
			continue
		}
		p.Stop()
		if err := b.startBinary(name, name+suffix, extraConfig); err != nil {
			return err
		}
	}
	return b.startWebhook(context.Background(), extraConfig, "grove-webhook"+suffix)
}

// startWebhook (re)starts grove-webhook with extraConfig, points the webhook configurations at
// it, and waits until the API server calls it: a dry-run PodCliqueSet create passes admission.
func (b *bench) startWebhook(ctx context.Context, extraConfig, logName string) error {
	if old := b.procs["grove-webhook"]; old != nil {
		old.Stop()
	}
	p, err := b.c.StartWebhookLogging(b.binDir, b.logName(logName), extraConfig, time.Minute)
	if err != nil {
		return err
	}
	b.procs["grove-webhook"] = p
	probe := pcs("default", "webhook-probe", clique("probe", 1))
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return b.k8s().Create(ctx, probe.DeepCopy(), client.DryRunAll) == nil, nil
	})
}

// withBaseline runs a scenario against the baseline of that shape, measured once per run.
func (b *bench) withBaseline(ctx context.Context, name string, shape baselineShape, run func(context.Context, phases) error) error {
	if b.bases == nil {
		b.bases = map[string]phases{}
	}
	base, ok := b.bases[name]
	if !ok {
		var err error
		if base, err = b.baseline(ctx, name, shape); err != nil {
			return err
		}
		b.bases[name] = base
	}
	return run(ctx, base)
}

// baseline measures n gated pods created and ungated by a plain client, then removes them so
// they do not load later scenarios.
func (b *bench) baseline(ctx context.Context, name string, shape baselineShape) (phases, error) {
	ns, err := b.namespace(ctx, name)
	if err != nil {
		return phases{}, err
	}
	done := b.progress.start(fmt.Sprintf("  %s (%d pods)", name, shape.Pods))
	ph, err := baseline(ctx, b.cs, b.w, ns, shape)
	done(err)
	if err != nil {
		return ph, err
	}
	b.r.Baselines = append(b.r.Baselines, Baseline{Name: name, Pods: shape.Pods, PodsPerService: shape.PerService,
		ExistingPods: shape.Existing, Phases: seconds(ph)})
	return ph, b.k8s().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// scenario applies objects in a new namespace, waits until pods pods run, and records times
// against base and the writes the binaries made for them.
func (b *bench) scenario(ctx context.Context, id, desc string, pods int, base phases, objs func(ns string) []client.Object) (string, error) {
	ns, err := b.namespace(ctx, id)
	if err != nil {
		return "", err
	}
	return ns, b.scenarioIn(ctx, ns, id, desc, pods, base, objs)
}

// scenarioIn is a scenario in a namespace made (and furnished) beforehand.
func (b *bench) scenarioIn(ctx context.Context, ns, id, desc string, pods int, base phases, objs func(ns string) []client.Object) (err error) {
	done := b.progress.start(fmt.Sprintf("  %s: %s (%d pods)", id, desc, pods))
	defer func() { done(err) }()
	begin, before := time.Now(), b.usage()
	list := objs(ns)
	if err := parallel(len(list), applyParallelism, func(i int) error { return b.k8s().Create(ctx, list[i]) }); err != nil {
		return err
	}
	// Ten minutes, or 90 ms a pod for the fills of thousands.
	ph, err := b.w.waitPhases(ctx, ns, pods, begin, max(10*time.Minute, time.Duration(pods)*90*time.Millisecond))
	if err != nil {
		return err
	}
	return b.record(id, desc, ns, pods, begin, before, ph, base)
}

func secondsToDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func (b *bench) record(id, desc, ns string, pods int, begin time.Time, before map[string]usage, ph, base phases) error {
	time.Sleep(3 * time.Second) // the last status writes of the scenario land in its window
	writes, total, err := writesIn(b.c, ns, begin, time.Now())
	if err != nil {
		return err
	}
	sort.Slice(writes, func(i, j int) bool { return writes[i].Count > writes[j].Count })
	s := Scenario{ID: id, Description: desc, Pods: pods, Phases: seconds(ph), Baseline: seconds(base),
		UngatedRatio: ratio(ph.Ungated, base.Ungated), RunningRatio: ratio(ph.Running, base.Running),
		Writes: total, WritesPerPod: float64(total) / float64(pods), WritesBy: writes, CPUSeconds: map[string]float64{}}
	for name, u := range b.usage() {
		s.CPUSeconds[name] = u.CPUSeconds - before[name].CPUSeconds
	}
	b.r.Scenarios = append(b.r.Scenarios, s)
	return nil
}

func (b *bench) s1(ctx context.Context, base phases) error {
	pods := int(b.sz.S1Workers) + 1
	_, err := b.scenario(ctx, "s1", fmt.Sprintf("1 PCS: 1 leader + %d workers", b.sz.S1Workers), pods, base, func(ns string) []client.Object {
		return []client.Object{pcs(ns, "big", clique("leader", 1), clique("worker", b.sz.S1Workers))}
	})
	if err != nil {
		return err
	}
	s := &b.r.Scenarios[len(b.r.Scenarios)-1]
	b.r.target(s.ID+" gates lifted ≤ 1.3× baseline", s.UngatedRatio, 1.3)
	b.r.target(s.ID+" writes per pod ≤ 3", s.WritesPerPod, 3)
	return nil
}

// s1Gang is S1 with kube-scheduler in gang mode (each PodGang a Workload API gang), reported
// beside plain mode: the same pods, placed all or nothing.
func (b *bench) s1Gang(ctx context.Context, base phases) error {
	if err := b.schedulerMode(gangConfig, "-gang"); err != nil {
		return err
	}
	pods := int(b.sz.S1Workers) + 1
	_, err := b.scenario(ctx, "s1-gang", fmt.Sprintf("S1 in kube-scheduler gang mode (CompositePodGroup): 1 leader + %d workers", b.sz.S1Workers), pods, base,
		func(ns string) []client.Object {
			return []client.Object{pcs(ns, "big", clique("leader", 1), clique("worker", b.sz.S1Workers))}
		})
	if err != nil {
		return err
	}
	gang := b.r.Scenarios[len(b.r.Scenarios)-1]
	for _, s := range b.r.Scenarios {
		if s.ID == "s1" {
			b.r.GangVsPlain = &GangVsPlain{Pods: pods, PlainRunning: s.Phases.Running, GangRunning: gang.Phases.Running}
			if s.Phases.Running > 0 {
				b.r.GangVsPlain.Ratio = gang.Phases.Running / s.Phases.Running
			}
			b.r.target("s1 in gang mode Running ≤ 1.3× plain mode", b.r.GangVsPlain.Ratio, 1.3)
		}
	}
	return b.schedulerMode("", "-plain")
}

func (b *bench) s2(ctx context.Context, base phases) error {
	pods := b.sz.S2Sets * b.sz.S2Pods
	objs := func(ns string) []client.Object {
		var out []client.Object
		for i := range b.sz.S2Sets {
			out = append(out, pcs(ns, fmt.Sprintf("small-%d", i), clique("worker", int32(b.sz.S2Pods))))
		}
		return out
	}
	if _, err := b.scenario(ctx, "s2", fmt.Sprintf("%d PCS × %d pods at once", b.sz.S2Sets, b.sz.S2Pods), pods, base, objs); err != nil {
		return err
	}
	s := &b.r.Scenarios[len(b.r.Scenarios)-1]
	b.r.target(s.ID+" gates lifted ≤ 1.3× baseline", s.UngatedRatio, 1.3)
	b.r.target(s.ID+" writes per pod ≤ 3", s.WritesPerPod, 3)
	return nil
}

func (b *bench) s3(ctx context.Context, base phases) error {
	from := int(b.sz.S3From) * 8
	objs := func(ns string) []client.Object {
		p := pcs(ns, "grouped", clique("prefill", 4), clique("decode", 4))
		p.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "serve", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To(b.sz.S3From), MinAvailable: ptr.To[int32](1),
		}}
		return []client.Object{p}
	}
	ns, err := b.scenario(ctx, "s3", fmt.Sprintf("PCSG %d replicas × 2 cliques × 4 pods", b.sz.S3From), from, base, objs)
	if err != nil {
		return err
	}
	// Scale out: the added replicas against a baseline of as many pods, in rounds (scaled back in
	// between), the target checked on the median round.
	added := int(b.sz.S3To-b.sz.S3From) * 8
	var ratios []float64
	for round := 1; round <= b.sz.S3Rounds; round++ {
		if round > 1 {
			if err := b.scaleGroup(ctx, ns, b.sz.S3From, from); err != nil {
				return err
			}
		}
		// A scale-out by a plain client: the added pods join the running ones in one headless Service.
		addBase, err := b.baseline(ctx, fmt.Sprintf("baseline-scale-%d", round), baselineShape{Pods: added, PerService: from + added, Existing: from})
		if err != nil {
			return err
		}
		begin, before := time.Now(), b.usage()
		if err := b.patchGroupReplicas(ctx, ns, b.sz.S3To); err != nil {
			return err
		}
		ph, err := b.w.waitPhases(ctx, ns, added, begin, 10*time.Minute)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("scale the PCSG %d → %d replicas, round %d of %d", b.sz.S3From, b.sz.S3To, round, b.sz.S3Rounds)
		if err := b.record(fmt.Sprintf("s3-scale-%d", round), desc, ns, added, begin, before, ph, addBase); err != nil {
			return err
		}
		ratios = append(ratios, b.r.Scenarios[len(b.r.Scenarios)-1].UngatedRatio)
	}
	name := "s3 scale-out gates lifted ≤ 1.3× baseline"
	if len(ratios) > 1 {
		name += fmt.Sprintf(" (median of %d rounds)", len(ratios))
	}
	b.r.target(name, median(ratios), 1.3)
	return nil
}

// median is the middle value of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// patchGroupReplicas sets the S3 scaling group's replicas.
func (b *bench) patchGroupReplicas(ctx context.Context, ns string, replicas int32) error {
	pcsg := &grovev1alpha1.PodCliqueScalingGroup{}
	key := client.ObjectKey{Namespace: ns, Name: grovev1alpha1.PodCliqueScalingGroupName("grouped", 0, "serve")}
	if err := b.k8s().Get(ctx, key, pcsg); err != nil {
		return err
	}
	patch := client.MergeFrom(pcsg.DeepCopy())
	pcsg.Spec.Replicas = replicas
	return b.k8s().Patch(ctx, pcsg, patch)
}

// scaleGroup scales the S3 scaling group in to replicas and waits until only pods remain and the
// operators are quiet again, so the next round starts from the same state as the first.
func (b *bench) scaleGroup(ctx context.Context, ns string, replicas int32, pods int) error {
	if err := b.patchGroupReplicas(ctx, ns, replicas); err != nil {
		return err
	}
	if err := b.waitPodCount(ctx, ns, pods); err != nil {
		return fmt.Errorf("scaling %s in to %d replicas: %w", ns, replicas, err)
	}
	time.Sleep(5 * time.Second) // the status writes of the scale-in
	return nil
}

// s5 watches the converged S1–S3 for the rest window: no writes, almost no CPU.
func (b *bench) s5(ctx context.Context) error {
	time.Sleep(5 * time.Second)
	before := b.usage()
	begin := time.Now()
	time.Sleep(b.sz.Rest)
	after := b.usage()
	all, _, err := writesIn(b.c, "", begin, time.Now())
	if err != nil {
		return err
	}
	// Leader-election renewals are the one heartbeat an elected controller must write; they are
	// reported apart and are not writes about the workloads.
	rest := Rest{Seconds: b.sz.Rest.Seconds(), CPUPercent: map[string]float64{}}
	for _, wc := range all {
		if wc.Resource == "leases" {
			rest.LeaseRenewals += wc.Count
			continue
		}
		rest.Writes += wc.Count
		rest.WritesBy = append(rest.WritesBy, wc)
	}
	total := rest.Writes
	worst := 0.0
	for name, u := range after {
		pct := 100 * (u.CPUSeconds - before[name].CPUSeconds) / b.sz.Rest.Seconds()
		rest.CPUPercent[name] = pct
		worst = max(worst, pct)
	}
	b.r.Rest = &rest
	b.r.target("s5 writes at rest = 0", float64(total), 0)
	b.r.targetBelow("s5 CPU at rest < 1% of a core (worst binary)", worst, 1)
	return nil
}

// s4 runs the same training gangs twice: as Training PodCliqueSets applied directly, then as
// TrainJobs on the PodCliqueSet path, each until every one finished.
func (b *bench) s4(ctx context.Context) error {
	n, pods := b.sz.S4Jobs, b.sz.S4Pods
	direct, err := b.namespace(ctx, "s4-direct")
	if err != nil {
		return err
	}
	begin := time.Now()
	if err := parallel(n, 32, func(i int) error {
		return b.k8s().Create(ctx, trainingPCS(direct, fmt.Sprintf("train-%d", i), int32(pods), b.sz.S4ExitAfter))
	}); err != nil {
		return err
	}
	if err := waitAll(ctx, 10*time.Minute, "Training PodCliqueSets Succeeded", func() (int, int, error) {
		got, err := succeededPCS(ctx, b.k8s(), direct)
		return got, n, err
	}); err != nil {
		return err
	}
	directTime := time.Since(begin)

	jobs, err := b.namespace(ctx, "s4-trainjobs")
	if err != nil {
		return err
	}
	if err := b.k8s().Create(ctx, trainingRuntime(jobs, b.sz.S4ExitAfter)); err != nil {
		return err
	}
	begin = time.Now()
	if err := parallel(n, 32, func(i int) error {
		return b.k8s().Create(ctx, trainJob(jobs, fmt.Sprintf("train-%d", i), "bench", pods))
	}); err != nil {
		return err
	}
	if err := waitAll(ctx, 10*time.Minute, "TrainJobs Complete", func() (int, int, error) {
		got, err := completeTrainJobs(ctx, b.k8s(), jobs)
		return got, n, err
	}); err != nil {
		return err
	}
	jobTime := time.Since(begin)
	writes, total, err := writesIn(b.c, jobs, begin, time.Now())
	if err != nil {
		return err
	}
	b.r.Training = &Training{Jobs: n, PodsPerJob: pods, DirectSeconds: directTime.Seconds(), TrainJobSeconds: jobTime.Seconds(),
		Ratio: jobTime.Seconds() / directTime.Seconds(), Writes: total, WritesBy: writes}
	b.r.target("s4 TrainJobs Complete ≤ 1.2× the PCS applied directly", b.r.Training.Ratio, 1.2)
	return nil
}

// memory fills the cluster to each of MemoryPods managed pods in turn and reads every binary's
// peak RSS at each.
func (b *bench) memory(ctx context.Context) error {
	for _, target := range b.sz.MemoryPods {
		managed, err := b.managedPods(ctx)
		if err != nil {
			return err
		}
		if more := target - managed; more > 0 {
			// PodCliqueSets of 100 pods, as users run many workloads rather than one huge one.
			sets := (more + 99) / 100
			if _, err := b.scenario(ctx, fmt.Sprintf("fill-%d", target), fmt.Sprintf("%d PCS of up to 100 pods, to %d managed pods", sets, target), more, phases{Created: 1, Ungated: 1, Running: 1},
				func(ns string) []client.Object {
					var out []client.Object
					for i := range sets {
						out = append(out, pcs(ns, fmt.Sprintf("fill-%d", i), clique("worker", int32(min(100, more-100*i)))))
					}
					return out
				}); err != nil {
				return err
			}
			b.r.Scenarios = b.r.Scenarios[:len(b.r.Scenarios)-1]
		}
		b.r.ManagedPods = max(managed, target)
		for name, u := range b.usage() {
			if name == cluster.LWSUser || name == cluster.KubeflowTrainerUser {
				continue // peers: reported, not held to the project's target
			}
			b.r.target(fmt.Sprintf("%s peak RSS ≤ 200 MiB with %d pods", name, b.r.ManagedPods), u.PeakRSSMiB, 200)
		}
		if err := b.saveHeapProfile(ctx, fmt.Sprintf("grove-operator-heap-%d.pb.gz", b.r.ManagedPods)); err != nil {
			return err
		}
	}
	b.r.Usage = b.usage()
	return nil
}

// saveHeapProfile writes the grove-operator's heap profile (what it holds and what it
// allocated since it started) into sizes.HeapProfiles, when set: with the RSS it says where the
// memory goes (`go tool pprof -sample_index=inuse_space` or `alloc_space`).
func (b *bench) saveHeapProfile(ctx context.Context, name string) error {
	if b.sz.HeapProfiles == "" {
		return nil
	}
	if err := os.MkdirAll(b.sz.HeapProfiles, 0o755); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.pprofURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s from %s", resp.Status, b.pprofURL)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	path := filepath.Join(b.sz.HeapProfiles, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	fmt.Println("heap profile:", path)
	return nil
}

// managedPods counts the pods of the project's workloads in the cluster.
func (b *bench) managedPods(ctx context.Context) (int, error) {
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := b.k8s().List(ctx, pods, client.HasLabels{grovev1alpha1.LabelPartOf}); err != nil {
		return 0, err
	}
	return len(pods.Items), nil
}

func (b *bench) usage() map[string]usage {
	out := map[string]usage{}
	for name, p := range b.procs {
		if u, err := procUsage(p.Pid()); err == nil {
			out[name] = u
		}
	}
	return out
}

func ratio(a, base time.Duration) float64 {
	if base <= 0 {
		return 0
	}
	return a.Seconds() / base.Seconds()
}

// componentsRestarted records and prints the cluster's components its supervisor started again
// after they exited (a restart is part of what the run measured: the report names it).
func (b *bench) componentsRestarted(names []string, err error) {
	at := b.progress.since(time.Now())
	b.restartsMu.Lock()
	defer b.restartsMu.Unlock()
	for _, name := range names {
		b.restarts = append(b.restarts, fmt.Sprintf("%s at +%s", name, at))
		fmt.Fprintf(os.Stderr, "bench %8s  %s exited and was started again (its log says why)\n", at, name)
	}
	if err != nil {
		b.restarts = append(b.restarts, fmt.Sprintf("a restart failed at +%s: %v", at, err))
		fmt.Fprintf(os.Stderr, "bench %8s  restarting an exited component failed: %v\n", at, err)
	}
}

// componentRestarts are the restarts componentsRestarted recorded.
func (b *bench) componentRestarts() []string {
	b.restartsMu.Lock()
	defer b.restartsMu.Unlock()
	return slices.Clone(b.restarts)
}

// waitPodCount waits until ns holds exactly n pods (those being deleted count until gone).
func (b *bench) waitPodCount(ctx context.Context, ns string, n int) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &corev1.PodList{}
		if err := b.k8s().List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return len(list.Items) == n, nil
	})
}
