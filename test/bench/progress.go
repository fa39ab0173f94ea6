package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress says where a run is: a full run lasts over half an hour and prints its table only at
// the end, so each step, scenario and contender gets a line as it starts and as it ends, with its
// time and the time since the run began.
type progress struct {
	out   io.Writer
	began time.Time
}

func newProgress() progress { return progress{out: os.Stderr, began: time.Now()} }

// start prints that what begins and returns the function that prints how it ended.
func (p progress) start(what string) func(error) {
	if p.out == nil {
		return func(error) {}
	}
	start := time.Now()
	fmt.Fprintf(p.out, "bench %8s  %s ...\n", p.since(start), what)
	return func(err error) {
		end := time.Now()
		outcome := "done"
		if err != nil {
			outcome = "FAILED: " + err.Error()
		}
		fmt.Fprintf(p.out, "bench %8s  %s %s in %s\n", p.since(end), what, outcome, end.Sub(start).Round(100*time.Millisecond))
	}
}

func (p progress) since(t time.Time) string { return t.Sub(p.began).Round(time.Second).String() }
