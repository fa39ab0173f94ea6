// Package hostile submits malformed and hostile objects through a real kube-apiserver while the
// four binaries run as separate processes with their own least-privilege identities: grove-webhook
// (registered for admission over TLS), grove-operator, the kube-scheduler backend-controller and
// trainer-controller. Every case states its outcome — rejected with a message naming the field
// path and the rule, or stored and handled — and afterwards every binary must still be alive and
// healthy, and nothing already stored may have changed.
package hostileintegration

import (
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/cluster"
)

// readyTimeout bounds each binary's start on a loaded machine.
const readyTimeout = 2 * time.Minute

// binDir holds the project's binaries, built once per package run.
var binDir string

// binaries are the running processes, by name; every test ends by checking they survived.
var binaries = map[string]*cluster.Process{}

// httpClient is an admin client of the API server, for requests whose raw body matters (numbers
// that overflow int32, strings that are not durations, 10 MB bodies): a typed client could not
// even encode them.
var httpClient *http.Client

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Only etcd and kube-apiserver: no pod ever runs, so no scheduler, nodes or JobSet controller
	// are needed, and the package starts in seconds.
	opts := cluster.Options{APIServerOnly: true}
	return cluster.MainWithBinaries(m, opts, &binDir, func(c *cluster.Cluster) error {
		webhook, err := c.StartWebhook(binDir, "", readyTimeout)
		if err != nil {
			return err
		}
		binaries["grove-webhook"] = webhook
		for _, b := range []struct {
			name string
			args []string
		}{
			{"grove-operator", nil},
			{"backend-controller", []string{"--backend=kube-scheduler"}},
			{"trainer-controller", nil},
		} {
			p, err := c.StartBinary(binDir, b.name, b.name, "", b.args...)
			if err != nil {
				return err
			}
			if err := p.WaitReady(readyTimeout); err != nil {
				return err
			}
			binaries[b.name] = p
		}
		httpClient, err = newHTTPClient(c)
		return err
	})
}

// requireBinariesHealthy fails the test unless every binary still runs and answers /healthz:
// no hostile object may crash or wedge a process.
func requireBinariesHealthy(t *testing.T) {
	t.Helper()
	for name, p := range binaries {
		exited, err := p.Exited()
		require.False(t, exited, "%s exited (%v):\n%s", name, err, p.LogTail(40))
		resp, err := http.Get(p.HealthzURL) //nolint:gosec // loopback probe
		require.NoError(t, err, "%s /healthz", name)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s /healthz: %s", name, body)
	}
}
