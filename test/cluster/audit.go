package cluster

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
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
	f, err := os.Open(c.auditLogPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev AuditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue // a line being written
		}
		if keep(ev) {
			out = append(out, ev)
		}
	}
	return out, sc.Err()
}
