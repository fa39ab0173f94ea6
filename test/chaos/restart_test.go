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

// make bench supervises the cluster: a component that exits on its own (kube-scheduler losing its
// lease to an API server saturated by a burst of pods) is started again, as a kubelet restarts a
// static pod, and the restart is reported.
func TestSuperviseStartsAgainAComponentThatExitedAndSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := cluster.Current
	restarted := make(chan []string, 1)
	go c.Supervise(ctx, 200*time.Millisecond, func(names []string, err error) {
		assert.NoError(t, err)
		restarted <- names
	})
	pid := c.ComponentPid("kube-scheduler")
	require.Positive(t, pid)
	holder := func() string {
		lease := &coordinationv1.Lease{}
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-scheduler"}, lease); err != nil {
			return ""
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}
	before := holder()
	require.NotEmpty(t, before)

	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	select {
	case names := <-restarted:
		assert.Equal(t, []string{"kube-scheduler"}, names, "only the component that exited")
	case <-time.After(2 * time.Minute):
		t.Fatal("kube-scheduler was not started again within 2 minutes")
	}
	assert.NotEqual(t, pid, c.ComponentPid("kube-scheduler"), "a new process")
	require.Eventually(t, func() bool { h := holder(); return h != "" && h != before }, time.Minute, 200*time.Millisecond,
		"the new kube-scheduler takes the lease once the dead one's expires: it schedules again")
}
