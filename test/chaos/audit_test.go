package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/cluster"
)

// auditFollower reads the API server's audit log as it grows (a 30-minute run writes far too
// much to re-read the whole file for every check).
type auditFollower struct {
	path    string
	mu      sync.Mutex
	f       *os.File
	partial []byte
	events  []cluster.AuditEvent
}

func newAuditFollower(path string) *auditFollower { return &auditFollower{path: path} }

// poll reads every complete line written since the last poll.
func (a *auditFollower) poll() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		f, err := os.Open(a.path)
		if err != nil {
			return err
		}
		a.f = f
	}
	buf := make([]byte, 1<<20)
	for {
		n, err := a.f.Read(buf)
		a.partial = append(a.partial, buf[:n]...)
		for {
			i := bytes.IndexByte(a.partial, '\n')
			if i < 0 {
				break
			}
			if ev, ok := parseAuditLine(a.partial[:i]); ok {
				a.events = append(a.events, ev)
			}
			a.partial = a.partial[i+1:]
		}
		if err == io.EOF || n == 0 {
			// Keep the unread tail small: copy it to a fresh slice.
			a.partial = append([]byte(nil), a.partial...)
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// auditEventStart is how every line of the JSON audit log begins.
var auditEventStart = []byte(`{"kind":"Event"`)

// parseAuditLine decodes one line. An API server killed in the middle of a line leaves it
// unfinished and its successor appends to it; the event after the cut is still recovered.
func parseAuditLine(line []byte) (cluster.AuditEvent, bool) {
	var ev cluster.AuditEvent
	if json.Unmarshal(line, &ev) == nil {
		return ev, true
	}
	if i := bytes.LastIndex(line, auditEventStart); i > 0 && json.Unmarshal(line[i:], &ev) == nil {
		return ev, true
	}
	return ev, false
}

// follow polls until stop is closed.
func (a *auditFollower) follow(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = a.poll()
		}
	}
}

// where returns the events read so far for which keep returns true (all when keep is nil), in
// the order of their timestamps; it reads what was written since the last poll first.
func (a *auditFollower) where(keep func(cluster.AuditEvent) bool) []cluster.AuditEvent {
	_ = a.poll()
	a.mu.Lock()
	var out []cluster.AuditEvent
	for _, ev := range a.events {
		if keep == nil || keep(ev) {
			out = append(out, ev)
		}
	}
	a.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].StageTimestamp.Before(out[j].StageTimestamp) })
	return out
}

// close releases the file.
func (a *auditFollower) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f != nil {
		a.f.Close()
	}
}

// succeeded reports a write the API server carried out.
func succeeded(ev cluster.AuditEvent) bool {
	return ev.ResponseStatus.Code >= 200 && ev.ResponseStatus.Code < 300
}

// isLeaseWrite reports a write to a binary's leader-election Lease.
func isLeaseWrite(ev cluster.AuditEvent, lease string) bool {
	return ev.ObjectRef.Resource == "leases" && ev.ObjectRef.Namespace == cluster.Namespace && ev.ObjectRef.Name == lease
}

// leaderAt returns who held a lease at a moment: the author of the last successful write to it
// at or before then ("" when nobody wrote it yet).
func leaderAt(events []cluster.AuditEvent, lease string, at time.Time) string {
	holder := ""
	for _, ev := range events {
		if ev.StageTimestamp.After(at) {
			break
		}
		if isLeaseWrite(ev, lease) && succeeded(ev) {
			holder = ev.User.Username
		}
	}
	return holder
}

// leadershipViolations returns the writes a replica of a binary made while the lease was not its
// own: a replica that acts without leading, or two replicas acting in overlapping terms. A term
// runs from a replica's successful lease write to the next successful write by another; lease
// writes themselves (acquiring, renewing, failed attempts) are the election, not acting.
func leadershipViolations(events []cluster.AuditEvent, lease string, replicaUsers map[string]bool) []string {
	var out []string
	holder := ""
	for _, ev := range events {
		if isLeaseWrite(ev, lease) {
			if succeeded(ev) {
				holder = ev.User.Username
			}
			continue
		}
		if !replicaUsers[ev.User.Username] || ev.User.Username == holder {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s %s %s/%s by %s while %q held %s",
			ev.StageTimestamp.Format(time.RFC3339Nano), ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Namespace, ev.ObjectRef.Name, ev.User.Username, holder, lease))
	}
	return out
}

func auditWrite(at time.Time, user, resource, name string, code int) cluster.AuditEvent {
	ev := cluster.AuditEvent{Verb: "update", StageTimestamp: at}
	ev.User.Username = user
	ev.ObjectRef.Resource, ev.ObjectRef.Name = resource, name
	if resource == "leases" {
		ev.ObjectRef.Namespace = cluster.Namespace
	}
	ev.ResponseStatus.Code = code
	return ev
}

func TestAuditLineCutByAKilledAPIServerStillYieldsTheNextEvent(t *testing.T) {
	whole := `{"kind":"Event","verb":"update","user":{"username":"a"},"objectRef":{"resource":"leases","name":"l"},"responseStatus":{"code":200}}`
	ev, ok := parseAuditLine([]byte(whole))
	require.True(t, ok)
	assert.Equal(t, "a", ev.User.Username)
	ev, ok = parseAuditLine([]byte(`{"kind":"Event","verb":"crea` + whole))
	require.True(t, ok, "the event after the cut")
	assert.Equal(t, "leases", ev.ObjectRef.Resource)
	_, ok = parseAuditLine([]byte(`{"kind":"Event","verb":"crea`))
	assert.False(t, ok)
}

func TestLeadershipCheckFlagsWritesOutsideTheWritersTerm(t *testing.T) {
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	users := map[string]bool{"a": true, "b": true}
	events := []cluster.AuditEvent{
		auditWrite(at(0), "a", "leases", "l", 200),
		auditWrite(at(1), "a", "pods", "p1", 201),
		auditWrite(at(2), "b", "leases", "l", 409), // b tries and fails: a still leads
		auditWrite(at(3), "a", "pods", "p2", 200),
		auditWrite(at(10), "b", "leases", "l", 200), // a's lease expired: b leads
		auditWrite(at(11), "b", "pods", "p3", 200),
		auditWrite(at(12), "other", "pods", "p4", 200), // not a replica of this binary
	}
	assert.Empty(t, leadershipViolations(events, "l", users))

	late := append(append([]cluster.AuditEvent{}, events...), auditWrite(at(13), "a", "pods", "p5", 200))
	bad := leadershipViolations(late, "l", users)
	require.Len(t, bad, 1, "a write by the old leader inside the new leader's term")
	assert.Contains(t, bad[0], "p5")

	early := append([]cluster.AuditEvent{auditWrite(t0.Add(-time.Second), "b", "pods", "p0", 201)}, events...)
	assert.Len(t, leadershipViolations(early, "l", users), 1, "a write before any lease was held")
	assert.Equal(t, "b", leaderAt(events, "l", at(11)))
	assert.Equal(t, "a", leaderAt(events, "l", at(5)))
}
