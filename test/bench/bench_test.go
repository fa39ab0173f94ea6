package main

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTargetsCountWhatIsMissed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		value, limit float64
		met          bool
	}{
		{"ratio under the limit", 1.16, 1.3, true},
		{"ratio at the limit", 1.3, 1.3, true},
		{"ratio over the limit", 4.2, 1.3, false},
		{"zero means exactly zero", 0, 0, true},
		{"one write at rest misses", 1, 0, false},
		{"CPU < 1% is strict", 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{}
			if tc.name == "CPU < 1% is strict" {
				r.targetBelow(tc.name, tc.value, tc.limit)
			} else {
				r.target(tc.name, tc.value, tc.limit)
			}
			require.Len(t, r.Targets, 1)
			assert.Equal(t, tc.met, r.Targets[0].Met)
			assert.Equal(t, map[bool]int{true: 0, false: 1}[tc.met], r.Missed)
		})
	}
}

func TestPhasesWaitForEveryPodAndTakeTheSlowest(t *testing.T) {
	begin := time.Now()
	at := func(ms int) time.Time { return begin.Add(time.Duration(ms) * time.Millisecond) }
	w := &podWatch{pods: map[string]*podTimes{
		"a": {ns: "s1", seen: at(10), ungated: at(50), running: at(90)},
		"b": {ns: "s1", seen: at(30), ungated: at(40), running: at(120)},
		"c": {ns: "other", seen: at(1), ungated: at(2), running: at(999)},
		"d": {ns: "s1", seen: begin.Add(-time.Second), ungated: at(0), running: at(0)}, // before the scenario
	}}
	ph, ok := w.phases("s1", 2, begin)
	require.True(t, ok)
	assert.Equal(t, 30*time.Millisecond, ph.Created)
	assert.Equal(t, 50*time.Millisecond, ph.Ungated)
	assert.Equal(t, 120*time.Millisecond, ph.Running)

	_, ok = w.phases("s1", 3, begin)
	assert.False(t, ok, "a pod not yet seen keeps the scenario open")
	w.pods["e"] = &podTimes{ns: "s1", seen: at(60)}
	_, ok = w.phases("s1", 3, begin)
	assert.False(t, ok, "a gated pod keeps the scenario open")
}

func TestProcUsageReadsThisProcess(t *testing.T) {
	u, err := procUsage(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, u.PeakRSSMiB)
	assert.GreaterOrEqual(t, u.PeakRSSMiB, u.RSSMiB*0.99)
	assert.GreaterOrEqual(t, u.CPUSeconds, 0.0)
}

func TestMedianIsTheMiddleRound(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"one round", []float64{1.4}, 1.4},
		{"odd count, unsorted", []float64{1.42, 0.95, 1.18}, 1.18},
		{"even count: mean of the middle two", []float64{2, 1, 4, 3}, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := append([]float64(nil), tc.xs...)
			assert.InDelta(t, tc.want, median(tc.xs), 1e-9)
			assert.Equal(t, xs, tc.xs, "the rounds keep their order")
		})
	}
}
