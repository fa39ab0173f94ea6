package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one run's figures, as printed and as saved for later comparison.
type Report struct {
	Mode      string     `json:"mode"`
	Started   time.Time  `json:"started"`
	Baselines []Baseline `json:"baselines"`
	Scenarios []Scenario `json:"scenarios"`
	// Peers are the shapes run through this project and through the peers, same run.
	Peers []PeerRun `json:"peers,omitempty"`
	// Rollouts are the rollout family: one template change through each contender, same run.
	Rollouts []Rollout `json:"rollouts,omitempty"`
	// DayTwo are the day-two families (recovery, scale-out, placement) through this project and
	// the peers, same run.
	DayTwo []DayTwo `json:"dayTwo,omitempty"`
	// ComponentRestarts are the cluster's components that exited during the run and were started
	// again (kube-scheduler losing its lease under load), with when.
	ComponentRestarts []string         `json:"componentRestarts,omitempty"`
	Rest              *Rest            `json:"rest,omitempty"`
	Training          *Training        `json:"training,omitempty"`
	ManagedPods       int              `json:"managedPods,omitempty"`
	GangVsPlain       *GangVsPlain     `json:"gangVsPlain,omitempty"`
	KueueVsPlain      *KueueVsPlain    `json:"kueueVsPlain,omitempty"`
	Usage             map[string]usage `json:"usage"`
	Targets           []Target         `json:"targets"`
	Missed            int              `json:"missed"`
}

// Seconds are the phase times of a scenario or baseline.
type Seconds struct {
	Created float64 `json:"created"`
	Ungated float64 `json:"ungated"`
	Running float64 `json:"running"`
}

func seconds(p phases) Seconds {
	return Seconds{Created: p.Created.Seconds(), Ungated: p.Ungated.Seconds(), Running: p.Running.Seconds()}
}

// Baseline is the plain client's run for a pod count, with as many pods to a headless Service as
// its scenario and, for a scale-out, the running pods the new ones join.
type Baseline struct {
	Name           string  `json:"name"`
	Pods           int     `json:"pods"`
	PodsPerService int     `json:"podsPerService"`
	ExistingPods   int     `json:"existingPods,omitempty"`
	Phases         Seconds `json:"seconds"`
}

// Scenario is one workload's times, ratios and writes.
type Scenario struct {
	ID           string       `json:"id"`
	Description  string       `json:"description"`
	Pods         int          `json:"pods"`
	Phases       Seconds      `json:"seconds"`
	Baseline     Seconds      `json:"baselineSeconds"`
	UngatedRatio float64      `json:"ungatedRatio"`
	RunningRatio float64      `json:"runningRatio"`
	Writes       int          `json:"writes"`
	WritesPerPod float64      `json:"writesPerPod"`
	WritesBy     []writeCount `json:"writesBy"`
	// CPUSeconds each binary spent during the scenario: where an operator is slower than the
	// baseline, this tells whether it was busy or waiting.
	CPUSeconds map[string]float64 `json:"cpuSeconds,omitempty"`
}

// GangVsPlain is S1 in kube-scheduler gang mode against S1 in plain mode, same run.
type GangVsPlain struct {
	Pods         int     `json:"pods"`
	PlainRunning float64 `json:"plainRunningSeconds"`
	GangRunning  float64 `json:"gangRunningSeconds"`
	Ratio        float64 `json:"ratio"`
}

// Rest is S5: the converged cluster left alone.
type Rest struct {
	Seconds       float64            `json:"seconds"`
	Writes        int                `json:"writes"`
	WritesBy      []writeCount       `json:"writesBy"`
	LeaseRenewals int                `json:"leaseRenewals"`
	CPUPercent    map[string]float64 `json:"cpuPercentOfACore"`
}

// Training is S4: TrainJobs against the same PodCliqueSets applied directly.
type Training struct {
	Jobs            int          `json:"jobs"`
	PodsPerJob      int          `json:"podsPerJob"`
	DirectSeconds   float64      `json:"directSeconds"`
	TrainJobSeconds float64      `json:"trainJobSeconds"`
	Ratio           float64      `json:"ratio"`
	Writes          int          `json:"writes"`
	WritesBy        []writeCount `json:"writesBy"`
}

// Target is one goal of the benchmark issue and whether the run met it.
type Target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
}

// target records value against an inclusive upper limit (counts are never negative, so a limit
// of 0 means exactly 0).
func (r *Report) target(name string, value, limit float64) {
	r.record(Target{Name: name, Value: value, Limit: limit, Met: value <= limit})
}

// targetBelow records value against a strict upper limit.
func (r *Report) targetBelow(name string, value, limit float64) {
	r.record(Target{Name: name, Value: value, Limit: limit, Met: value < limit})
}

func (r *Report) record(t Target) {
	r.Targets = append(r.Targets, t)
	if !t.Met {
		r.Missed++
	}
}

func (r *Report) print(out io.Writer) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nbench (%s) %s\n\n", r.Mode, r.Started.UTC().Format(time.RFC3339))
	for _, restart := range r.ComponentRestarts {
		fmt.Fprintf(w, "restarted during the run: %s\n", restart)
	}
	fmt.Fprintln(w, "baseline\tpods\tper Service\texisting\tcreated\tungated\tRunning\t")
	for _, b := range r.Baselines {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.2fs\t%.2fs\t%.2fs\t\n", b.Name, b.Pods, b.PodsPerService, b.ExistingPods,
			b.Phases.Created, b.Phases.Ungated, b.Phases.Running)
	}
	fmt.Fprintln(w, "\nscenario\tpods\tcreated\tungated\tRunning\tungated/base\tRunning/base\twrites/pod\t")
	for _, s := range r.Scenarios {
		fmt.Fprintf(w, "%s\t%d\t%.2fs\t%.2fs\t%.2fs\t%.2f×\t%.2f×\t%.2f\t\n", s.ID, s.Pods, s.Phases.Created, s.Phases.Ungated, s.Phases.Running,
			s.UngatedRatio, s.RunningRatio, s.WritesPerPod)
	}
	w.Flush()
	for _, s := range r.Scenarios {
		fmt.Fprintf(out, "\n%s (%s): %d writes; CPU", s.ID, s.Description, s.Writes)
		for _, name := range sortedKeys(s.CPUSeconds) {
			fmt.Fprintf(out, " %s %.1fs", name, s.CPUSeconds[name])
		}
		fmt.Fprintln(out)
		printWrites(out, s.WritesBy, float64(s.Pods))
	}
	r.printPeers(out)
	r.printRollouts(out)
	r.printDayTwo(out)
	if g := r.GangVsPlain; g != nil {
		fmt.Fprintf(out, "\ns1 in gang mode: %d pods Running in %.1fs against %.1fs in plain mode: %.2f×\n", g.Pods, g.GangRunning, g.PlainRunning, g.Ratio)
	}
	if k := r.KueueVsPlain; k != nil {
		fmt.Fprintf(out, "\ns6: %d PodCliqueSets × %d pods Running through Kueue in %.1fs against %.1fs without: %.2f×\n", k.Sets, k.PodsPerSet, k.KueueRunning, k.PlainRunning, k.Ratio)
	}
	if t := r.Training; t != nil {
		fmt.Fprintf(out, "\ns4: %d TrainJobs × %d pods Complete in %.1fs; the same PodCliqueSets applied directly Succeeded in %.1fs: %.2f×; %d writes\n",
			t.Jobs, t.PodsPerJob, t.TrainJobSeconds, t.DirectSeconds, t.Ratio, t.Writes)
		printWrites(out, t.WritesBy, float64(t.Jobs*t.PodsPerJob))
	}
	if rest := r.Rest; rest != nil {
		fmt.Fprintf(out, "\ns5: %.0fs at rest: %d writes (besides %d leader-election lease renewals); CPU %% of a core:", rest.Seconds, rest.Writes, rest.LeaseRenewals)
		for _, name := range sortedKeys(rest.CPUPercent) {
			fmt.Fprintf(out, " %s %.2f%%", name, rest.CPUPercent[name])
		}
		fmt.Fprintln(out)
		printWrites(out, rest.WritesBy, 1)
	}
	fmt.Fprintf(out, "\nprocesses (managed pods at the end: %d):\n", r.ManagedPods)
	for _, name := range sortedKeys(r.Usage) {
		u := r.Usage[name]
		fmt.Fprintf(out, "  %-20s CPU %6.1fs  RSS %6.1f MiB  peak RSS %6.1f MiB\n", name, u.CPUSeconds, u.RSSMiB, u.PeakRSSMiB)
	}
	fmt.Fprintln(out, "\ntargets:")
	for _, t := range r.Targets {
		mark := "met   "
		if !t.Met {
			mark = "MISSED"
		}
		fmt.Fprintf(out, "  %s %-55s %.2f (limit %.2f)\n", mark, t.Name, t.Value, t.Limit)
	}
}

func printWrites(out io.Writer, writes []writeCount, pods float64) {
	sorted := append([]writeCount(nil), writes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Count > sorted[j].Count })
	for _, wc := range sorted {
		fmt.Fprintf(out, "  %-20s %-7s %-42s %6d  (%.2f per pod)\n", wc.Binary, wc.Verb, wc.Resource, wc.Count, float64(wc.Count)/pods)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// printPeers prints each shape's contenders side by side, with ratios to the shape's best peer.
func (r *Report) printPeers(out io.Writer) {
	if len(r.Peers) == 0 {
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nshape\tcontender\tpods\tcreated\tRunning\tns deleted\tcreated/peer\tRunning/peer\tdeleted/peer\twrites/pod\trefused\trefused creates in deletion\tadmission/create (alone, under load)\t")
	for _, p := range r.Peers {
		name := p.Name
		if p.Peer {
			name += " (peer)"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.2fs\t%.2fs\t%.2fs\t%.2f×\t%.2f×\t%.2f×\t%.2f\t%d\t%d\t%.1fms, %.1fms\t\n", p.Shape, name, p.Pods, p.Created, p.Running,
			p.DeletionSeconds, p.CreatedRatio, p.RunningRatio, p.DeletionRatio, p.WritesPerPod, p.Refused, p.RefusedCreates, p.AdmissionMs, p.AdmissionUnderLoadMs)
	}
	w.Flush()
	for _, p := range r.Peers {
		fmt.Fprintf(out, "\n%s %s: %d writes; CPU", p.Shape, p.Name, p.Writes)
		for _, name := range sortedKeys(p.CPUSeconds) {
			if p.CPUSeconds[name] >= 0.05 {
				fmt.Fprintf(out, " %s %.1fs", name, p.CPUSeconds[name])
			}
		}
		fmt.Fprintln(out)
		printWrites(out, p.WritesBy, float64(p.Pods))
		for _, rc := range p.RefusedWrites {
			fmt.Fprintf(out, "  refused: %s %s %s ×%d (%s)\n", rc.Binary, rc.Verb, rc.Resource, rc.Count, strings.TrimSpace(fmt.Sprint(rc.Code, " ", rc.Reason)))
		}
		for _, rc := range p.RefusedBy {
			fmt.Fprintf(out, "  refused while the namespace was deleted: %s %s %s ×%d\n", rc.Binary, rc.Verb, rc.Resource, rc.Count)
		}
	}
}

// printRollouts prints each shape's contenders: the median round's time, its ratios to
// RollingRecreate's and to the peer's, the writes per pod, and each component's lowest available
// units (of all rounds) against its budget's floor; then each round.
func (r *Report) printRollouts(out io.Writer) {
	var shapes []string
	byShape := map[string][]Rollout{}
	for _, ro := range r.Rollouts {
		if _, ok := byShape[ro.Shape]; !ok {
			shapes = append(shapes, ro.Shape)
		}
		byShape[ro.Shape] = append(byShape[ro.Shape], ro)
	}
	for _, shape := range shapes {
		runs := byShape[shape]
		w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		header := fmt.Sprintf("\nrollout of %s\tcontender\tpods\tall new+Ready", shape)
		if n := len(runs[0].Rounds); n > 1 {
			header += fmt.Sprintf(" (median of %d)", n)
		}
		header += "\t/RollingRecreate\t/peer\twrites/pod"
		for _, c := range runs[0].Components {
			header += fmt.Sprintf("\t%s lowest (floor %d of %d)", c.Name, c.Floor, c.Units)
		}
		fmt.Fprintln(w, header+"\tbelow budget\t")
		for _, ro := range runs {
			name := ro.Contender
			if ro.Peer {
				name += " (peer)"
			}
			line := fmt.Sprintf("one template change\t%s\t%d\t%.2fs\t%.2f×\t%.2f×\t%.2f", name, ro.Pods, ro.Seconds, ro.Ratio, ro.PeerRatio, ro.WritesPerPod)
			for _, c := range ro.Components {
				line += fmt.Sprintf("\t%d (%d pods)", c.LowestAvailable, c.LowestReadyPods)
			}
			fmt.Fprintf(w, "%s\t%d\t\n", line, ro.BelowBudget)
		}
		w.Flush()
		for _, ro := range runs {
			fmt.Fprintf(out, "  %s rounds:", ro.Contender)
			for i, round := range ro.Rounds {
				fmt.Fprintf(out, " %.1fs", round.Seconds)
				var below []string
				for _, c := range ro.Components {
					if low := round.Lowest[c.Name]; low.Units < c.Floor {
						below = append(below, fmt.Sprintf("%s %d/%d", c.Name, low.Units, c.Units))
					}
				}
				if len(below) > 0 {
					fmt.Fprintf(out, " (below budget: %s)", strings.Join(below, ", "))
				}
				if i < len(ro.Rounds)-1 {
					fmt.Fprint(out, ",")
				}
			}
			fmt.Fprintln(out)
		}
		printStepPhases(out, runs)
	}
}

// printDayTwo prints each day-two family's contenders: the time from the trigger until every new
// pod ran, its ratio to the best peer, and the writes per pod meanwhile.
func (r *Report) printDayTwo(out io.Writer) {
	if len(r.DayTwo) == 0 {
		return
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nday two\tcontender\tnew pods\tall Running\t/best peer\twrites/pod\t")
	for _, d := range r.DayTwo {
		name := d.Contender
		if d.Peer {
			name += " (peer)"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.2fs\t%.2f×\t%.2f\t\n", d.Description, name, d.Pods, d.Seconds, d.Ratio, d.WritesPerPod)
	}
	w.Flush()
	for _, d := range r.DayTwo {
		if len(d.RoundSeconds) > 0 {
			rounds := make([]string, len(d.RoundSeconds))
			for i, sec := range d.RoundSeconds {
				rounds[i] = fmt.Sprintf("%.1fs", sec)
			}
			fmt.Fprintf(out, "  %s %s rounds: %s (the median counts)\n", d.Family, d.Contender, strings.Join(rounds, ", "))
		}
	}
	for _, d := range r.DayTwo {
		fmt.Fprintf(out, "\n%s %s: %d writes\n", d.Family, d.Contender, d.Writes)
		printWrites(out, d.WritesBy, float64(d.Pods))
	}
}
