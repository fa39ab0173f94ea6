package chaos

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/cluster"
)

// The chaos run restarts kube-apiserver; this proves the helper on its own: etcd keeps every
// object, the restarted server answers on the same address, and its audit log goes on in the
// same file.
func TestKubeAPIServerRestartKeepsStoredObjectsAndTheAuditLogGoesOn(t *testing.T) {
	ctx := context.Background()
	c := cluster.Current
	ns := c.NewNamespace(t)
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before"}, Data: map[string]string{"k": "v"}}
	require.NoError(t, c.Client().Create(ctx, before))
	audit := newAuditFollower(c.AuditLogPath())
	defer audit.close()
	writesTo := func(name string) int {
		return len(audit.where(func(ev cluster.AuditEvent) bool {
			return ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == ns && ev.ObjectRef.Name == name
		}))
	}
	require.Equal(t, 1, writesTo("before"))

	for _, kill := range []bool{true, false} {
		began := time.Now()
		require.NoError(t, c.Restart(ctx, "kube-apiserver", kill))
		t.Logf("kube-apiserver restarted (kill=%v) and ready in %s", kill, time.Since(began).Round(100*time.Millisecond))
	}
	got := &corev1.ConfigMap{}
	require.NoError(t, c.Client().Get(ctx, client.ObjectKeyFromObject(before), got))
	assert.Equal(t, before.UID, got.UID, "the same object, from etcd")
	assert.Equal(t, "v", got.Data["k"])

	require.NoError(t, c.Client().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after"}}))
	assert.Equal(t, 1, writesTo("before"), "the log was not truncated")
	assert.Equal(t, 1, writesTo("after"), "the restarted server appends to the same log")
	assert.Contains(t, c.Components(), "kube-apiserver")
	assert.Error(t, c.Restart(ctx, "no-such-component", true))
}

// A component that exits on its own (kube-scheduler losing its lease to an API server saturated
// by a burst of pods) is started again by cluster.Supervise, as a kubelet restarts a static pod,
// and counted: the chaos fleet's supervisor is Supervise, and make bench runs the same.
func TestAComponentThatExitsOnItsOwnIsStartedAgainAndCounted(t *testing.T) {
	ctx := context.Background()
	c := cluster.Current
	holder := func() string {
		lease := &coordinationv1.Lease{}
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-scheduler"}, lease); err != nil {
			return ""
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}
	// After an API server restart (the test before) kube-scheduler may exit late: start from one
	// that holds its lease.
	require.Eventually(t, func() bool { return holder() != "" && c.ComponentPid("kube-scheduler") > 0 }, time.Minute, 200*time.Millisecond)
	before, pid := holder(), c.ComponentPid("kube-scheduler")
	counted := fleet.unplannedExits()["kube-scheduler"]

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		require.ErrorIs(t, err, syscall.ESRCH, "only an already exited process may not be killed")
	}

	require.Eventually(t, func() bool { p := c.ComponentPid("kube-scheduler"); return p > 0 && p != pid }, 2*time.Minute, 200*time.Millisecond,
		"kube-scheduler is started again")
	require.Eventually(t, func() bool { h := holder(); return h != "" && h != before }, time.Minute, 200*time.Millisecond,
		"the new kube-scheduler takes the lease once the dead one's expires: it schedules again")
	assert.Greater(t, fleet.unplannedExits()["kube-scheduler"], counted, "the restart is counted")
}
