package chaos

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// ledger counts what the run did and found: faults by kind, invariant checks by invariant, and
// every violation with its time. Every line it logs carries the offset from the start, so a
// failure can be laid against the fault log.
type ledger struct {
	start      time.Time
	out        io.Writer
	mu         sync.Mutex
	faults     map[string]int
	checks     map[string]int
	violations []string
	notes      []string
}

func newLedger(out io.Writer) *ledger {
	return &ledger{start: time.Now(), out: out, faults: map[string]int{}, checks: map[string]int{}}
}

func (l *ledger) offset() string {
	return fmt.Sprintf("+%7.1fs", time.Since(l.start).Seconds())
}

// logf prints a line stamped with the offset from the start.
func (l *ledger) logf(format string, args ...any) {
	fmt.Fprintf(l.out, "%s %s\n", l.offset(), fmt.Sprintf(format, args...))
}

// fault records one injected fault.
func (l *ledger) fault(kind, detail string) {
	l.mu.Lock()
	l.faults[kind]++
	l.mu.Unlock()
	l.logf("FAULT %-22s %s", kind, detail)
}

// check records that an invariant was evaluated once, and a violation when ok is false.
func (l *ledger) check(invariant string, ok bool, format string, args ...any) bool {
	l.mu.Lock()
	l.checks[invariant]++
	l.mu.Unlock()
	if !ok {
		l.violate(invariant, format, args...)
	}
	return ok
}

// violate records a violation of an invariant.
func (l *ledger) violate(invariant, format string, args ...any) {
	msg := fmt.Sprintf("%s %s: %s", l.offset(), invariant, fmt.Sprintf(format, args...))
	l.mu.Lock()
	l.violations = append(l.violations, msg)
	l.mu.Unlock()
	fmt.Fprintln(l.out, "VIOLATION "+msg)
}

// note records a figure worth printing under the table (takeover times, writes at rest).
func (l *ledger) note(format string, args ...any) {
	l.mu.Lock()
	l.notes = append(l.notes, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// violationList returns a copy of the violations.
func (l *ledger) violationList() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.violations...)
}

// table renders the figures the closing note pastes: faults by kind, checks by
// invariant, violations and the duration.
func (l *ledger) table(seed int64, faultWindow time.Duration) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "| chaos run | |\n|---|---|\n")
	fmt.Fprintf(&b, "| seed | %d |\n", seed)
	fmt.Fprintf(&b, "| fault window | %s |\n", faultWindow)
	fmt.Fprintf(&b, "| total duration | %s |\n", time.Since(l.start).Round(time.Second))
	total := 0
	for _, k := range sortedKeys(l.faults) {
		fmt.Fprintf(&b, "| fault %s | %d |\n", k, l.faults[k])
		total += l.faults[k]
	}
	fmt.Fprintf(&b, "| **faults injected** | **%d** |\n", total)
	checks := 0
	for _, k := range sortedKeys(l.checks) {
		fmt.Fprintf(&b, "| check %s | %d |\n", k, l.checks[k])
		checks += l.checks[k]
	}
	fmt.Fprintf(&b, "| **invariant checks run** | **%d** |\n", checks)
	fmt.Fprintf(&b, "| **violations** | **%d** |\n", len(l.violations))
	for _, n := range l.notes {
		fmt.Fprintf(&b, "\n%s", n)
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
