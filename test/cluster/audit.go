package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// auditPolicy records every write (who, what, when) and nothing else, so tests can count the
// writes each binary makes — the measure of "quiet at rest" and of writes per pod.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// AuditEvent is one write the API server recorded.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
		// Reason is the refusal's machine-readable reason (AlreadyExists, Conflict, …), empty
		// for a success.
		Reason string `json:"reason"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

func (c *Cluster) auditLogPath() string { return filepath.Join(c.dir, "audit.log") }

// AuditLogPath is the API server's audit log (JSON lines of AuditEvent), for tests that follow it
// as it grows; a restarted API server appends to it.
func (c *Cluster) AuditLogPath() string { return c.auditLogPath() }

// AuditEvents returns the writes recorded so far for which keep returns true.
func (c *Cluster) AuditEvents(keep func(AuditEvent) bool) ([]AuditEvent, error) {
	events, _, err := c.auditEventsFrom(0, keep)
	return events, err
}

// auditEventsFrom reads the writes recorded from byte offset on, and returns the offset of the
// end of the last whole line it read: a line still being written is read by the next call.
func (c *Cluster) auditEventsFrom(offset int64, keep func(AuditEvent) bool) ([]AuditEvent, int64, error) {
	f, err := os.Open(c.auditLogPath())
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	var out []AuditEvent
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return out, offset, nil // a partial line, if any, is read again next time
		}
		if err != nil {
			return out, offset, err
		}
		offset += int64(len(line))
		var ev AuditEvent
		if json.Unmarshal(line, &ev) != nil {
			continue // not an event: the tail of a line an earlier read began in the middle of
		}
		if keep(ev) {
			out = append(out, ev)
		}
	}
}

// isMark tells AuditMark's own writes.
func isMark(ev AuditEvent) bool {
	return ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == metav1.NamespaceDefault &&
		strings.HasPrefix(ev.ObjectRef.Name, "audit-mark-")
}

// markSeq keeps two marks of one process apart when the clock's resolution does not.
var markSeq atomic.Int64

// AuditMark makes a write of its own and returns once the audit log holds it, with the time the
// API server recorded for it. Every write answered before the call is then in the log, so a test
// that counts writes up to a moment reads the log after a mark instead of sleeping for the log
// to catch up.
func (c *Cluster) AuditMark(t testing.TB) time.Time {
	t.Helper()
	at, err := c.auditMark(context.Background())
	require.NoError(t, err)
	return at
}

// auditMark is AuditMark for callers that are not on the test's goroutine.
func (c *Cluster) auditMark(ctx context.Context) (time.Time, error) {
	from := int64(0)
	if st, err := os.Stat(c.auditLogPath()); err == nil {
		from = st.Size() // the mark is written after this: no need to read what came before
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: metav1.NamespaceDefault,
		Name:      fmt.Sprintf("audit-mark-%d-%d", time.Now().UnixNano(), markSeq.Add(1)),
	}}
	if err := c.client.Create(ctx, cm); err != nil {
		return time.Time{}, fmt.Errorf("writing the audit mark: %w", err)
	}
	defer func() { _ = c.client.Delete(ctx, cm) }()
	var at time.Time
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		marks, next, err := c.auditEventsFrom(from, func(ev AuditEvent) bool {
			return ev.Verb == "create" && ev.ObjectRef.Resource == "configmaps" &&
				ev.ObjectRef.Namespace == cm.Namespace && ev.ObjectRef.Name == cm.Name
		})
		if err != nil {
			return false, err
		}
		from = next
		if len(marks) == 0 {
			return false, nil
		}
		at = marks[0].StageTimestamp
		return true, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("the audit log does not record the mark %s: %w", cm.Name, err)
	}
	return at, nil
}

// WaitQuiet returns once the audit log has recorded none of the writes keep selects for quiet,
// and fails the test if that does not happen within timeout: the moment something settled, read
// from what the API server recorded rather than assumed after a fixed sleep. A writer that never
// pauses for quiet fails it.
func (c *Cluster) WaitQuiet(t testing.TB, quiet, timeout time.Duration, keep func(AuditEvent) bool) time.Time {
	t.Helper()
	var (
		from     int64
		last     time.Time
		lastSeen time.Time
	)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		mark, err := c.auditMark(context.Background())
		require.NoError(ct, err)
		writes, next, err := c.auditEventsFrom(from, keep)
		require.NoError(ct, err)
		from = next
		for _, w := range writes {
			if !isMark(w) && w.StageTimestamp.After(last) {
				last = w.StageTimestamp
			}
		}
		require.GreaterOrEqual(ct, mark.Sub(last), quiet, "the last write selected was at %s", last.Format(time.StampMilli))
		lastSeen = mark
	}, timeout, quiet/4, "no write selected for %s", quiet)
	return lastSeen
}
