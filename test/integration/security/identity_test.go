package securityintegration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/cluster"
)

// TestEveryBinaryActsAsItsOwnServiceAccountNeverAsAnAdministrator reads the API server's audit
// log: every write a binary made (its user agent starts with the binary's name: leases, the
// certificate Secret, the webhook configurations, token and access reviews) was made as
// system:serviceaccount:grove-system:<binary>, in no administrator group.
func TestEveryBinaryActsAsItsOwnServiceAccountNeverAsAnAdministrator(t *testing.T) {
	for _, b := range binaries {
		t.Run(b.name, func(t *testing.T) {
			var writes []cluster.AuditEvent
			require.Eventually(t, func() bool {
				var err error
				writes, err = cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
					return strings.HasPrefix(ev.UserAgent, b.name+"/") || ev.UserAgent == b.name
				})
				return err == nil && len(writes) > 0
			}, time.Minute, 200*time.Millisecond, "%s writes something (a lease, the certificate)", b.name)
			for _, ev := range writes {
				assert.Equal(t, serviceAccountUser(b.name), ev.User.Username, "%s %s/%s", ev.Verb, ev.ObjectRef.Resource, ev.ObjectRef.Name)
				assert.False(t, slices.Contains(ev.User.Groups, "system:masters"), "%s wrote as an administrator: %v", b.name, ev.User.Groups)
			}
		})
	}
}
