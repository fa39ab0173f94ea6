package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// Leader election of the binaries as StartBinary configures it.
const (
	leaseDuration = 6 * time.Second
	retryPeriod   = time.Second
	// maxRetryWait is the longest a candidate waits between two looks at the lease: client-go
	// jitters the retry period by up to 1.2 times itself.
	maxRetryWait = retryPeriod * 22 / 10
	// takeoverBound is the longest a standby may take to lead after the leader was killed: the
	// killed leader's last renewal may reach the standby one wait late, the lease then runs for
	// its duration from that sighting, and the standby notices the expiry at its next look.
	takeoverBound = leaseDuration + 2*maxRetryWait
)

// binary is one of the project's four binaries as the run deploys it.
type binary struct {
	name string
	// replicas is 2 for the controllers (leader election), 1 for the webhook (admission is
	// stateless; one process makes "unavailable" a fault the run can inject).
	replicas int
	// lease is the controller's leader-election Lease in grove-system ("" for the webhook).
	lease string
	args  []string
}

var binaries = []binary{
	{name: "grove-webhook", replicas: 1},
	{name: "grove-operator", replicas: 2, lease: "grove-operator-leader"},
	{name: "backend-controller", replicas: 2, lease: "grove-backend-controller-kube-scheduler-leader", args: []string{"--backend=kube-scheduler"}},
	{name: "trainer-controller", replicas: 2, lease: "trainer-controller-leader"},
}

func binaryNamed(name string) binary {
	for _, b := range binaries {
		if b.name == name {
			return b
		}
	}
	panic("unknown binary " + name)
}

// replica is one process slot of a binary, with an identity of its own (a ServiceAccount
// <binary>-<a|b>) so the audit log tells the replicas apart.
type replica struct {
	binary   string
	identity string
	proc     *cluster.Process
	starts   int
	// held keeps the supervisor from restarting a replica a fault keeps down on purpose.
	held bool
}

// user is the audit log's name for the replica.
func (r *replica) user() string {
	return "system:serviceaccount:" + cluster.Namespace + ":" + r.identity
}

// replicaSet runs every replica and, like a Deployment, restarts one that exits on its own (a
// controller exits when it cannot renew its lease, e.g. while the API server restarts).
type replicaSet struct {
	c        *cluster.Cluster
	mu       sync.Mutex
	replicas []*replica
	// unplanned counts exits the supervisor repaired, by binary.
	unplanned map[string]int
	// panics are log lines of exited processes that show a panic.
	panics []string
}

func newReplicaSet(c *cluster.Cluster) *replicaSet {
	rs := &replicaSet{c: c, unplanned: map[string]int{}}
	for _, b := range binaries {
		for i := 0; i < b.replicas; i++ {
			rs.replicas = append(rs.replicas, &replica{binary: b.name, identity: fmt.Sprintf("%s-%c", b.name, 'a'+i)})
		}
	}
	return rs
}

// startAll starts the webhook, registers it as deployed, then the controllers, and the
// supervisor.
func (rs *replicaSet) startAll(ctx context.Context) error {
	for _, r := range rs.replicas {
		b := binaryNamed(r.binary)
		// As deployed with deploy/overlays/kube-scheduler-gang: every gang placed whole.
		p, err := rs.c.StartBinaryAs(binDir, r.binary, r.identity, r.identity, cluster.GangSchedulerConfig, b.args...)
		if err != nil {
			return err
		}
		r.proc, r.starts = p, 1
		if r.binary == "grove-webhook" {
			if err := p.WaitReady(time.Minute); err != nil {
				return err
			}
			if err := apiserver.RegisterWebhooks(ctx, rs.c.Client(), "config/webhook", "grove-", p.WebhookHostPort, rs.c.CAPEM()); err != nil {
				return err
			}
		}
	}
	for _, r := range rs.replicas {
		if err := r.proc.WaitReady(time.Minute); err != nil {
			return err
		}
	}
	go rs.supervise()
	return nil
}

// of returns the replicas of a binary.
func (rs *replicaSet) of(name string) []*replica {
	var out []*replica
	for _, r := range rs.replicas {
		if r.binary == name {
			out = append(out, r)
		}
	}
	return out
}

// byUser finds the replica an audit user name belongs to.
func (rs *replicaSet) byUser(user string) *replica {
	for _, r := range rs.replicas {
		if r.user() == user {
			return r
		}
	}
	return nil
}

// kill SIGKILLs a replica and holds it down until restart.
func (rs *replicaSet) kill(r *replica) {
	rs.mu.Lock()
	r.held = true
	p := r.proc
	rs.mu.Unlock()
	p.Kill()
}

// restart starts a killed replica again on its old ports and waits until it is ready.
func (rs *replicaSet) restart(r *replica) error {
	rs.mu.Lock()
	if err := rs.restartLocked(r); err != nil {
		rs.mu.Unlock()
		return err
	}
	r.held = false
	p := r.proc
	rs.mu.Unlock()
	return p.WaitReady(time.Minute)
}

func (rs *replicaSet) restartLocked(r *replica) error {
	rs.notePanic(r)
	p, err := rs.c.RestartBinary(r.proc, fmt.Sprintf("%s-%d", r.identity, r.starts+1))
	if err != nil {
		return err
	}
	r.proc = p
	r.starts++
	return nil
}

// notePanic records the panics in a replica's log: one that ended the process, and one that
// controller-runtime recovered in a reconciler (the process lives on, the bug is just as real).
func (rs *replicaSet) notePanic(r *replica) {
	for _, line := range strings.Split(r.proc.LogTail(1<<30), "\n") {
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") || strings.Contains(line, "Observed a panic") {
			rs.panics = append(rs.panics, r.identity+": "+line)
		}
	}
}

// supervise restarts replicas that exited on their own, as a Deployment would, and the
// cluster's own components (cluster.Supervise, as make bench does), as a kubelet restarts static
// pods.
func (rs *replicaSet) supervise() {
	go rs.c.Supervise(context.Background(), 500*time.Millisecond, func(names []string, err error) {
		fmt.Printf("supervisor: restarted cluster components %v (error: %v)\n", names, err)
		rs.mu.Lock()
		defer rs.mu.Unlock()
		for _, n := range names {
			rs.unplanned[n]++
		}
	})
	for range time.Tick(500 * time.Millisecond) {
		rs.mu.Lock()
		for _, r := range rs.replicas {
			if exited, _ := r.proc.Exited(); !exited || r.held {
				continue
			}
			rs.unplanned[r.binary]++
			if err := rs.restartLocked(r); errors.Is(err, cluster.ErrStopping) {
				rs.mu.Unlock()
				return
			} else if err != nil {
				fmt.Printf("supervisor: restarting %s: %v\n", r.identity, err)
			}
		}
		rs.mu.Unlock()
	}
}

// allRunning reports whether every replica's process runs.
func (rs *replicaSet) allRunning() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.replicas {
		if exited, _ := r.proc.Exited(); exited {
			return false
		}
	}
	return true
}

// unplannedExits returns a copy of the supervisor's counts.
func (rs *replicaSet) unplannedExits() map[string]int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[string]int{}
	for k, v := range rs.unplanned {
		out[k] = v
	}
	return out
}

// finalPanics checks every running replica's log too and returns every panic seen.
func (rs *replicaSet) finalPanics() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.replicas {
		rs.notePanic(r)
	}
	return append([]string(nil), rs.panics...)
}
