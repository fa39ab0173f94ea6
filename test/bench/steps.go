package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubegrove/grove/test/cluster"
)

// StepPhases is where a rolling update's steps spend their time, from the audit log of a round:
// for each unit (a group of pods replaced together), its writes in order. A unit's step begins
// with the first write of spec or metadata naming one of its objects, a phase ends with the next
// milestone, and the decision is the wait from a unit's last pod status write (its pods Ready)
// to the first write of the next unit of the same component — what a controller takes to notice
// the step is done and begin the next. Medians and 90th percentiles over the units, in
// milliseconds.
type StepPhases struct {
	Units  int            `json:"units"`
	Phases []PhaseSummary `json:"phases"`
}

// PhaseSummary is one phase of the steps.
type PhaseSummary struct {
	Name     string  `json:"name"`
	MedianMs float64 `json:"medianMs"`
	P90Ms    float64 `json:"p90Ms"`
	Units    int     `json:"units"`
}

// The phases of a step, in order.
const (
	phaseToDelete = "first write → first pod delete"
	phaseDeletes  = "first → last pod delete"
	phaseGone     = "last delete → first pod create"
	phaseCreates  = "first → last pod create"
	phaseReady    = "last create → last pod status (Ready)"
	phaseDecision = "last pod status → next unit's first write"
	// The decision's two hops: the unit's own controller counting its Ready pods (this
	// project's PodClique, LeaderWorkerSet's worker StatefulSet), then its parent beginning the
	// next unit.
	phaseNoticed = "  last pod status → unit's status write"
	phaseReact   = "  unit's status write → next unit's first write"
	phaseStep    = "step (first write → next unit's first write)"
)

// phaseOrder is the order the phases are reported in.
var phaseOrder = []string{phaseToDelete, phaseDeletes, phaseGone, phaseCreates, phaseReady, phaseDecision, phaseNoticed, phaseReact, phaseStep}

// unitName finds the unit of an object by name: the scaling-group replica of this project's
// PodCliques and pods (disagg-0-prefill-3-pworker-1) and LeaderWorkerSet's group of its pods and
// worker StatefulSet (prefill-3, prefill-3-1).
var unitName = regexp.MustCompile(`(?:^|-)((?:prefill|decode)-\d+)(?:-|$)`)

// stepResources are the kinds a step writes of its unit: not Events, whose names
// (<object>.<suffix>) would name a unit too.
var stepResources = map[string]bool{"pods": true, "podcliques": true, "podgangs": true, "statefulsets": true}

// unitOwners are the kinds that count a unit's Ready pods, written by the unit's own controller:
// not its PodGang, whose status the PodCliqueSet (the parent) writes.
var unitOwners = map[string]bool{"podcliques": true, "statefulsets": true}

// unitMilestones are one unit's times of the step's milestones (zero: not seen).
type unitMilestones struct {
	first, del0, del1, cre0, cre1, ready time.Time
	// noticed is the unit's first status write of a unitOwners kind at or after ready.
	noticed time.Time
}

// stepPhases lays out the steps of one round from its controllers' writes (the bench's own are
// not among them).
func stepPhases(events []cluster.AuditEvent) StepPhases {
	units := map[string]*unitMilestones{}
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b cluster.AuditEvent) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	for _, ev := range sorted {
		if !stepResources[ev.ObjectRef.Resource] {
			continue
		}
		m := unitName.FindStringSubmatch(ev.ObjectRef.Name)
		if m == nil || ev.ResponseStatus.Code >= 300 {
			continue
		}
		u := units[m[1]]
		t := ev.StageTimestamp
		if u == nil && ev.ObjectRef.Subresource == "" {
			// A status write reacts; the step begins with a decision: a write of spec or
			// metadata (a PodClique handed its template or gang, a pod deleted).
			u = &unitMilestones{first: t}
			units[m[1]] = u
		}
		if u == nil {
			continue
		}
		if ev.ObjectRef.Resource != "pods" {
			continue
		}
		switch {
		case ev.ObjectRef.Subresource == "status":
			u.ready = t
		case ev.ObjectRef.Subresource != "":
		case ev.Verb == "delete":
			if u.del0.IsZero() {
				u.del0 = t
			}
			u.del1 = t
		case ev.Verb == "create":
			if u.cre0.IsZero() {
				u.cre0 = t
			}
			u.cre1 = t
		}
	}
	for _, ev := range sorted {
		if ev.ObjectRef.Subresource != "status" || !unitOwners[ev.ObjectRef.Resource] || ev.ResponseStatus.Code >= 300 {
			continue
		}
		m := unitName.FindStringSubmatch(ev.ObjectRef.Name)
		if m == nil {
			continue
		}
		if u := units[m[1]]; u != nil && !u.ready.IsZero() && u.noticed.IsZero() && !ev.StageTimestamp.Before(u.ready) {
			u.noticed = ev.StageTimestamp
		}
	}
	// Each component (prefill, decode) steps through its own units, side by side with the others.
	byComponent := map[string][]*unitMilestones{}
	for name, u := range units {
		component := name[:strings.LastIndex(name, "-")]
		byComponent[component] = append(byComponent[component], u)
	}
	gaps := map[string][]float64{}
	add := func(name string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() && !to.Before(from) {
			gaps[name] = append(gaps[name], float64(to.Sub(from).Microseconds())/1000)
		}
	}
	for _, order := range byComponent {
		sort.Slice(order, func(i, j int) bool { return order[i].first.Before(order[j].first) })
		for i, u := range order {
			add(phaseToDelete, u.first, u.del0)
			add(phaseDeletes, u.del0, u.del1)
			add(phaseGone, u.del1, u.cre0)
			add(phaseCreates, u.cre0, u.cre1)
			add(phaseReady, u.cre1, u.ready)
			if i+1 < len(order) {
				add(phaseDecision, u.ready, order[i+1].first)
				if !u.noticed.After(order[i+1].first) {
					add(phaseNoticed, u.ready, u.noticed)
					add(phaseReact, u.noticed, order[i+1].first)
				}
				add(phaseStep, u.first, order[i+1].first)
			}
		}
	}
	out := StepPhases{Units: len(units)}
	for _, name := range phaseOrder {
		xs := gaps[name]
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		out.Phases = append(out.Phases, PhaseSummary{Name: name, MedianMs: median(xs), P90Ms: xs[(len(xs)*9)/10], Units: len(xs)})
	}
	return out
}

// printStepPhases prints each contender's phases side by side.
func printStepPhases(w io.Writer, runs []Rollout) {
	var with []Rollout
	for _, r := range runs {
		if r.Steps != nil && len(r.Steps.Phases) > 0 {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return
	}
	fmt.Fprintf(w, "  where a step's time goes (%s, last round; median / p90 ms over the units):\n", with[0].Shape)
	for _, name := range phaseOrder {
		var cells []string
		for _, r := range with {
			cell := "—"
			for _, p := range r.Steps.Phases {
				if p.Name == name {
					cell = fmt.Sprintf("%.0f / %.0f", p.MedianMs, p.P90Ms)
				}
			}
			cells = append(cells, fmt.Sprintf("%s %s", r.Contender, cell))
		}
		fmt.Fprintf(w, "    %-44s %s\n", name, strings.Join(cells, "; "))
	}
}
