package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/cluster"
)

// write is an audit event of verb on resource/subresource name at ms after t0.
func write(ms int, verb, resource, sub, name string) cluster.AuditEvent {
	ev := cluster.AuditEvent{Verb: verb, StageTimestamp: time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond)}
	ev.ObjectRef.Resource, ev.ObjectRef.Subresource, ev.ObjectRef.Name = resource, sub, name
	ev.ResponseStatus.Code = 200
	return ev
}

func phase(t *testing.T, s StepPhases, name string) PhaseSummary {
	t.Helper()
	for _, p := range s.Phases {
		if p.Name == name {
			return p
		}
	}
	require.Failf(t, "phase missing", "%q not in %+v", name, s.Phases)
	return PhaseSummary{}
}

func TestStepPhasesFollowEachUnitFromItsFirstDecisionToTheNextUnits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []cluster.AuditEvent
		want   map[string]float64
		units  int
	}{
		{
			name: "this project's scaling-group replicas, one after the other",
			events: []cluster.AuditEvent{
				// a status write before the step is a reaction, not its beginning
				write(0, "update", "podcliques", "status", "disagg-0-prefill-1-pworker"),
				write(100, "update", "podcliques", "", "disagg-0-prefill-0-pworker"),
				write(120, "delete", "pods", "", "disagg-0-prefill-0-pworker-0"),
				write(150, "delete", "pods", "", "disagg-0-prefill-0-pworker-1"),
				write(400, "create", "pods", "", "disagg-0-prefill-0-pworker-0"),
				write(420, "create", "pods", "", "disagg-0-prefill-0-pworker-1"),
				write(600, "patch", "pods", "status", "disagg-0-prefill-0-pworker-1"),
				// the parent's write of the unit's PodGang is not the unit's own
				write(700, "patch", "podgangs", "status", "disagg-0-prefill-0"),
				write(720, "update", "podcliques", "status", "disagg-0-prefill-0-pworker"),
				write(760, "update", "podcliques", "status", "disagg-0-prefill-0-pworker"),
				write(900, "update", "podcliques", "", "disagg-0-prefill-1-pworker"),
				write(920, "delete", "pods", "", "disagg-0-prefill-1-pworker-0"),
				write(1300, "create", "pods", "", "disagg-0-prefill-1-pworker-0"),
				write(1500, "patch", "pods", "status", "disagg-0-prefill-1-pworker-0"),
			},
			units: 2,
			want: map[string]float64{
				phaseToDelete: 20, phaseDeletes: 15, phaseGone: 315, phaseCreates: 10, phaseReady: 190, phaseDecision: 300,
				phaseNoticed: 120, phaseReact: 180, phaseStep: 800,
			},
		},
		{
			name: "LeaderWorkerSet's groups, and a refused write is no milestone",
			events: []cluster.AuditEvent{
				write(0, "delete", "pods", "", "prefill-1"),
				// an Event about a pod names its unit too, and is no milestone
				write(5, "create", "events", "", "prefill-0.18a2b3c4d5e6f708"),
				write(10, "update", "statefulsets", "", "prefill-1"),
				write(50, "delete", "pods", "", "prefill-1-1"),
				func() cluster.AuditEvent {
					ev := write(60, "create", "pods", "", "prefill-1")
					ev.ResponseStatus.Code = 409
					return ev
				}(),
				write(200, "create", "pods", "", "prefill-1"),
				write(260, "create", "pods", "", "prefill-1-1"),
				write(500, "patch", "pods", "status", "prefill-1-1"),
				write(550, "update", "statefulsets", "status", "prefill-1"),
				write(700, "delete", "pods", "", "prefill-0"),
			},
			units: 2,
			want: map[string]float64{phaseToDelete: 0, phaseGone: 150, phaseCreates: 60, phaseDecision: 200,
				phaseNoticed: 50, phaseReact: 150, phaseStep: 700},
		},
		{
			name: "components step side by side: a unit's next is its own component's",
			events: []cluster.AuditEvent{
				write(0, "update", "podcliques", "", "disagg-0-prefill-0-pworker"),
				write(10, "update", "podcliques", "", "disagg-0-decode-0-dworker"),
				write(300, "patch", "pods", "status", "disagg-0-prefill-0-pworker-0"),
				write(350, "patch", "pods", "status", "disagg-0-decode-0-dworker-0"),
				write(400, "update", "podcliques", "", "disagg-0-prefill-1-pworker"),
				write(600, "update", "podcliques", "", "disagg-0-decode-1-dworker"),
			},
			units: 4,
			want:  map[string]float64{phaseDecision: 175, phaseStep: 495},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := stepPhases(tc.events)
			assert.Equal(t, tc.units, s.Units)
			for name, ms := range tc.want {
				assert.InDelta(t, ms, phase(t, s, name).MedianMs, 0.5, name)
			}
		})
	}
}

func TestStepPhasesOfNoUnitsAreEmpty(t *testing.T) {
	s := stepPhases([]cluster.AuditEvent{write(0, "update", "podcliquesets", "", "disagg")})
	assert.Zero(t, s.Units)
	assert.Empty(t, s.Phases)
}

func TestAUnitsStatusWrittenAfterTheNextUnitBeganSplitsNoDecision(t *testing.T) {
	s := stepPhases([]cluster.AuditEvent{
		write(0, "update", "podcliques", "", "disagg-0-prefill-0-pworker"),
		write(300, "patch", "pods", "status", "disagg-0-prefill-0-pworker-0"),
		write(400, "update", "podcliques", "", "disagg-0-prefill-1-pworker"),
		// the clique counted its Ready pod only after its parent had moved on
		write(450, "update", "podcliques", "status", "disagg-0-prefill-0-pworker"),
	})
	assert.InDelta(t, 100, phase(t, s, phaseDecision).MedianMs, 0.5)
	for _, p := range s.Phases {
		assert.NotContains(t, []string{phaseNoticed, phaseReact}, p.Name, "a hop that ended after the decision")
	}
}
