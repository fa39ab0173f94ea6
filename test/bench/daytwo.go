package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/cluster"
)

// The day-two families (issue 38): what users wait for after a workload first ran — a gang whole
// again after one of its pods failed, a deployment doubled at peak, a big gang placed by a gang
// scheduler — through this project and through the peers that do the same job, on the same
// cluster at the same client limits, each timed from its triggering write until the new pods it
// asks for all run.

// rival is one way through a day-two family: this project's or a peer's.
type rival struct {
	name string
	peer bool
	// podsByPeer marks this project's contender whose pods a peer's controllers make (a TrainJob
	// on the JobSet path): its time measures those controllers again, so it is reported and not
	// held to the time target.
	podsByPeer bool
	// against names the peers it is judged against; none: every peer of the family. A TrainJob is
	// judged against Kubeflow's TrainJob.
	against []string
	// swap runs before (on) and after (off) the rival, as for the peers' shapes.
	swap func(ctx context.Context, on bool) error
	// objs are the objects applied, at once.
	objs func(ns string) []client.Object
	// trigger is the write the time runs from, made once the workload's first pods all run; nil:
	// the creates are.
	trigger func(ctx context.Context, ns string) error
}

// family is one day-two scenario: pods pods run before the trigger, want new pods must run after
// it.
type family struct {
	id, desc   string
	pods, want int
	rivals     []rival
	// writesTarget holds this project's writes per pod to the best peer's.
	writesTarget bool
	// setup and teardown run around the family (a scheduler started, binaries reconfigured).
	setup, teardown func(ctx context.Context) error
	// rounds is how often each rival is timed; its time and writes are the median round's. A
	// change of ~20 s moves by ±25% with the machine's noise. The rivals take turns: every round
	// is a workload of its own, made for it and deleted after it, and round r runs each rival
	// once, in an order rotated by one from round r-1's (turnOrder). Rivals that cannot share the
	// cluster (Kubeflow's controller takes the trainer-controller's place for its turn) are then
	// timed a turn or two apart, in both orders, where one rival after the other, three rounds
	// each, put minutes of the machine's drift between two rivals compared (scale-out's scaling
	// group met its target at 0.81× in one full run and missed it at 1.08× in the next). Listing
	// each rival next to the peer it is judged against keeps the two adjacent in most rounds, in
	// both orders.
	rounds int
}

// DayTwo is one rival's run of a day-two family.
type DayTwo struct {
	Family      string `json:"family"`
	Description string `json:"description"`
	Contender   string `json:"contender"`
	Peer        bool   `json:"peer,omitempty"`
	// Pods is how many new pods were timed.
	Pods int `json:"pods"`
	// Seconds is from the triggering write until every new pod ran.
	Seconds float64 `json:"seconds"`
	Ratio   float64 `json:"ratioToBestPeer,omitempty"`
	// Writes are every controller's writes in the namespace (the bench's own excluded) from the
	// trigger until every new pod ran, by actor.
	Writes       int                `json:"writes"`
	WritesPerPod float64            `json:"writesPerPod"`
	WritesBy     []writeCount       `json:"writesBy"`
	CPUSeconds   map[string]float64 `json:"cpuSeconds"`
	// RoundSeconds are every round's times when the family runs in rounds (Seconds is the
	// median round's).
	RoundSeconds []float64 `json:"roundSeconds,omitempty"`
}

// runFamily runs the rivals of f in turns, each round of each in a namespace of its own, then
// records the targets against the best peer.
func (b *bench) runFamily(ctx context.Context, f family) (err error) {
	done := b.progress.start(fmt.Sprintf("  %s: %s", f.id, f.desc))
	defer func() {
		done(err)
		if err != nil {
			err = fmt.Errorf("%s: %w", f.desc, err)
		}
	}()
	if f.setup != nil {
		if err := f.setup(ctx); err != nil {
			return err
		}
	}
	runs, err := takeTurns(ctx, f, b.runRival)
	if err != nil {
		return err
	}
	if f.teardown != nil {
		if err := f.teardown(ctx); err != nil {
			return err
		}
	}
	for i, rv := range f.rivals {
		r := &runs[i]
		bestTime, bestWrites := bestPeer(runs, f.rivals, rv)
		if math.IsInf(bestTime, 1) || bestTime <= 0 {
			return fmt.Errorf("%s: no peer it is judged against ran", rv.name)
		}
		r.Ratio = r.Seconds / bestTime
		if rv.peer || rv.podsByPeer {
			continue // reported, not held to the targets
		}
		prefix := fmt.Sprintf("%s %s", f.id, rv.name)
		b.r.target(prefix+": time ≤ 1.0× best peer", r.Ratio, 1.0)
		if f.writesTarget {
			b.r.target(prefix+": writes per pod ≤ best peer's", r.WritesPerPod, bestWrites)
		}
	}
	b.r.DayTwo = append(b.r.DayTwo, runs...)
	return nil
}

// takeTurns runs every turn of f (turnSchedule) through runOne and gives each rival the figures
// of its median round, every round's time in the order they ran.
func takeTurns(ctx context.Context, f family, runOne func(ctx context.Context, ns string, f family, rv rival) (DayTwo, error)) ([]DayTwo, error) {
	byRival := make([][]DayTwo, len(f.rivals))
	for _, t := range turnSchedule(f) {
		rv := f.rivals[t.rival]
		rv.name = t.label
		run, err := runOne(ctx, t.namespace, f, rv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.label, err)
		}
		run.Contender = f.rivals[t.rival].name
		byRival[t.rival] = append(byRival[t.rival], run)
	}
	runs := make([]DayTwo, len(f.rivals))
	for i := range byRival {
		runs[i] = medianRound(byRival[i])
	}
	return runs, nil
}

// turn is one rival's round of a family.
type turn struct {
	rival     int
	namespace string
	label     string
}

// turnSchedule is the order of a family's turns: each round every rival once, in turnOrder, on a
// namespace of its own.
func turnSchedule(f family) []turn {
	rounds := max(f.rounds, 1)
	out := make([]turn, 0, rounds*len(f.rivals))
	for round := 1; round <= rounds; round++ {
		for _, i := range turnOrder(len(f.rivals), round) {
			label := f.rivals[i].name
			if rounds > 1 {
				label = fmt.Sprintf("%s (round %d of %d)", label, round, rounds)
			}
			out = append(out, turn{rival: i, namespace: fmt.Sprintf("%s-%d-r%d", f.id, i, round), label: label})
		}
	}
	return out
}

// bestPeer is the lowest time and writes per pod among the peers rv is judged against.
func bestPeer(runs []DayTwo, rivals []rival, rv rival) (seconds, writesPerPod float64) {
	seconds, writesPerPod = math.Inf(1), math.Inf(1)
	for i, p := range rivals {
		if p.peer && (len(rv.against) == 0 || slices.Contains(rv.against, p.name)) {
			seconds, writesPerPod = min(seconds, runs[i].Seconds), min(writesPerPod, runs[i].WritesPerPod)
		}
	}
	return seconds, writesPerPod
}

// runRival creates the rival's workload in ns, waits until its pods run, triggers the change and
// waits until the new pods run; once measured, it deletes the namespace and waits until it is
// gone, so the next rival starts on an empty cluster (a failed run keeps it, for its logs).
func (b *bench) runRival(ctx context.Context, ns string, f family, rv rival) (_ DayTwo, err error) {
	done := b.progress.start(fmt.Sprintf("    %s: %s", f.id, rv.name))
	defer func() { done(err) }()
	if rv.swap != nil {
		if err := rv.swap(ctx, true); err != nil {
			return DayTwo{}, err
		}
		defer func() {
			if serr := rv.swap(ctx, false); err == nil {
				err = serr
			}
		}()
	}
	if _, err := b.namespace(ctx, ns); err != nil {
		return DayTwo{}, err
	}
	run, err := b.timeRival(ctx, ns, f, rv)
	if err != nil {
		return DayTwo{}, err
	}
	if err := b.k8s().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return run, err
	}
	return run, b.namespaceGone(ctx, ns)
}

// timeRival creates the rival's workload and times it: its creates, or its trigger once its first
// pods all run.
func (b *bench) timeRival(ctx context.Context, ns string, f family, rv rival) (DayTwo, error) {
	begin, before := time.Now(), b.allUsage()
	list := rv.objs(ns)
	if err := parallel(len(list), applyParallelism, func(i int) error { return b.k8s().Create(ctx, list[i]) }); err != nil {
		return DayTwo{}, err
	}
	if rv.trigger == nil {
		return b.timeRound(ctx, ns, f, rv, begin, before)
	}
	if _, err := b.w.waitPhases(ctx, ns, f.pods, begin, 10*time.Minute); err != nil {
		return DayTwo{}, fmt.Errorf("before the trigger: %w", err)
	}
	time.Sleep(3 * time.Second) // the controllers' last status writes of the creation
	begin, before = time.Now(), b.allUsage()
	if err := rv.trigger(ctx, ns); err != nil {
		return DayTwo{}, fmt.Errorf("trigger: %w", err)
	}
	return b.timeRound(ctx, ns, f, rv, begin, before)
}

// timeRound waits until the family's new pods run after begin (the trigger, or the creates) and
// counts every actor's writes and CPU meanwhile.
func (b *bench) timeRound(ctx context.Context, ns string, f family, rv rival, begin time.Time, before map[string]usage) (DayTwo, error) {
	ph, err := b.w.waitPhases(ctx, ns, f.want, begin, 10*time.Minute)
	if err != nil {
		return DayTwo{}, err
	}
	run := DayTwo{Family: f.id, Description: f.desc, Contender: rv.name, Peer: rv.peer, Pods: f.want, Seconds: ph.Running.Seconds(), CPUSeconds: map[string]float64{}}
	// The writes that finish the change land in its window: the controllers' last status writes,
	// the old pods' deletions that end after the new pods run.
	time.Sleep(3 * time.Second)
	end := time.Now()
	for name, u := range b.allUsage() {
		run.CPUSeconds[name] = u.CPUSeconds - before[name].CPUSeconds
	}
	if run.WritesBy, run.Writes, err = writesBetween(b.c, ns, begin, end); err != nil {
		return DayTwo{}, err
	}
	run.WritesPerPod = float64(run.Writes) / float64(run.Pods)
	return run, nil
}

// medianRound is the round of the median time, with every round's time.
func medianRound(rounds []DayTwo) DayTwo {
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b DayTwo) int { return cmp.Compare(a.Seconds, b.Seconds) })
	run := sorted[(len(sorted)-1)/2]
	if len(rounds) > 1 {
		for _, r := range rounds {
			run.RoundSeconds = append(run.RoundSeconds, r.Seconds)
		}
	}
	return run
}

// writesBetween counts every actor's writes in ns between from and to but the bench's own.
func writesBetween(c *cluster.Cluster, ns string, from, to time.Time) ([]writeCount, int, error) {
	events, err := eventsBetween(c, ns, from, to)
	if err != nil {
		return nil, 0, err
	}
	out, total := writeCounts(events)
	return out, total, nil
}

// eventsBetween are the controllers' writes in namespace ns in (from, to] (the bench's own are
// not among them).
func eventsBetween(c *cluster.Cluster, ns string, from, to time.Time) ([]cluster.AuditEvent, error) {
	return c.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ev.StageTimestamp.After(from) && !ev.StageTimestamp.After(to) && actor(ev) != benchActor
	})
}

// writeCounts counts writes by writer, verb and resource.
func writeCounts(events []cluster.AuditEvent) ([]writeCount, int) {
	by := map[writeCount]int{}
	for _, ev := range events {
		by[writeKey(actor(ev), ev)]++
	}
	return counts(by)
}
