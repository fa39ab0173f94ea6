package backendsintegration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/backends/kai"
)

// The KAI backend keeps a Topology per binding: the backend-controller registers the
// TopologyReconciler for it.
var _ backends.TopologySyncer = (*kai.Backend)(nil)

// clusterTopology is a binding of a block, a rack and a host level.
func clusterTopology(name string) *grovev1alpha1.ClusterTopologyBinding {
	return &grovev1alpha1.ClusterTopologyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: grovev1alpha1.ClusterTopologyBindingSpec{Levels: []grovev1alpha1.TopologyLevel{
			{Domain: "block", Key: "example.com/block"}, {Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
}

func createBinding(t *testing.T, ct *grovev1alpha1.ClusterTopologyBinding) {
	t.Helper()
	require.NoError(t, env.Client.Create(context.Background(), ct))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ct) })
}

// kaiStatus waits until the binding's status describes its current generation for
// kai-scheduler and ok accepts it, and returns the binding.
func kaiStatus(t *testing.T, name string, ok func(st grovev1alpha1.SchedulerTopologyStatus, drift *metav1.Condition) bool, msg string) *grovev1alpha1.ClusterTopologyBinding {
	t.Helper()
	var got *grovev1alpha1.ClusterTopologyBinding
	if !assert.Eventually(t, func() bool {
		got = &grovev1alpha1.ClusterTopologyBinding{}
		if env.Client.Get(context.Background(), client.ObjectKey{Name: name}, got) != nil || got.Status.ObservedGeneration != got.Generation {
			return false
		}
		drift := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionSchedulerTopologyDrift)
		for _, st := range got.Status.SchedulerTopologyStatuses {
			if st.SchedulerName == "kai-scheduler" && drift != nil && drift.ObservedGeneration == got.Generation {
				return ok(st, drift)
			}
		}
		return false
	}, timeout, 100*time.Millisecond, "binding %s: %s", name, msg) {
		t.Fatalf("last status of binding %s: %+v", name, got.Status)
	}
	return got
}

func inSync(st grovev1alpha1.SchedulerTopologyStatus, drift *metav1.Condition) bool {
	return st.InSync && drift.Status == metav1.ConditionFalse && drift.Reason == "InSync"
}

func drifted(st grovev1alpha1.SchedulerTopologyStatus, drift *metav1.Condition) bool {
	return !st.InSync && drift.Status == metav1.ConditionTrue && drift.Reason == "TopologyDrift"
}

// driftedWith is drifted with a message naming the mismatch: the backend-controller may first see
// a referenced Topology missing (its informer not yet synced) and report that, a drift too.
func driftedWith(message string) func(st grovev1alpha1.SchedulerTopologyStatus, drift *metav1.Condition) bool {
	return func(st grovev1alpha1.SchedulerTopologyStatus, drift *metav1.Condition) bool {
		return drifted(st, drift) && strings.Contains(st.Message, message)
	}
}

func topologyNodeLabels(t *kaiv1alpha1.Topology) []string {
	var out []string
	for _, l := range t.Spec.Levels {
		out = append(out, l.NodeLabel)
	}
	return out
}

func TestKAITopologyIsAcceptedByKAISchemaAndFollowsTheBinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ct := clusterTopology("kai-owned")
	createBinding(t, ct)

	got := kaiStatus(t, ct.Name, inSync, "the Topology is created and in sync")
	topo := &kaiv1alpha1.Topology{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, topo))
	assert.Equal(t, []kaiv1alpha1.TopologyLevel{
		{NodeLabel: "example.com/block", Alias: "block"}, {NodeLabel: "example.com/rack", Alias: "rack"}, {NodeLabel: "kubernetes.io/hostname", Alias: "host"},
	}, topo.Spec.Levels, "round-trips KAI's schema unchanged")
	assert.True(t, metav1.IsControlledBy(topo, got), "owned by the binding, so it goes with it")
	assert.Equal(t, ct.Name, got.Status.SchedulerTopologyStatuses[0].TopologyReference)

	// A new rack key: KAI forbids editing node labels, so the Topology is replaced.
	got.Spec.Levels[1].Key = "example.com/rack-v2"
	require.NoError(t, env.Client.Update(ctx, got))
	require.Eventually(t, func() bool {
		now := &kaiv1alpha1.Topology{}
		return env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, now) == nil && now.UID != topo.UID &&
			assert.ObjectsAreEqual([]string{"example.com/block", "example.com/rack-v2", "kubernetes.io/hostname"}, topologyNodeLabels(now))
	}, timeout, 100*time.Millisecond, "the Topology is recreated with the new levels")
	got = kaiStatus(t, ct.Name, inSync, "in sync again at the new generation")

	// Only a domain renamed: the alias is edited in place, which KAI's schema allows.
	replaced := &kaiv1alpha1.Topology{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, replaced))
	got.Spec.Levels[0].Domain = "zone"
	require.NoError(t, env.Client.Update(ctx, got))
	require.Eventually(t, func() bool {
		now := &kaiv1alpha1.Topology{}
		return env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, now) == nil && now.UID == replaced.UID && now.Spec.Levels[0].Alias == "zone"
	}, timeout, 100*time.Millisecond, "the alias is updated in place")

	// Deleted by hand, it comes back.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, replaced))
	require.NoError(t, env.Client.Delete(ctx, replaced))
	require.Eventually(t, func() bool {
		now := &kaiv1alpha1.Topology{}
		return env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, now) == nil && now.UID != replaced.UID
	}, timeout, 100*time.Millisecond, "a deleted Topology comes back")
	kaiStatus(t, ct.Name, inSync, "still in sync")
}

func TestBindingKAIRejectsIsReportedAsDrift(t *testing.T) {
	t.Parallel()
	ct := clusterTopology("kai-rejected")
	// Valid for Grove, not for KAI: kubernetes.io/hostname must be KAI's lowest level.
	ct.Spec.Levels = append(ct.Spec.Levels, grovev1alpha1.TopologyLevel{Domain: "numa", Key: "example.com/numa"})
	createBinding(t, ct)

	got := kaiStatus(t, ct.Name, driftedWith("KAI rejects"), "KAI's rejection is reported")
	drift := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionSchedulerTopologyDrift)
	assert.Contains(t, drift.Message, `kai-scheduler: KAI rejects Topology "kai-rejected"`)
	assert.Contains(t, drift.Message, "lowest level")
}

func TestExternallyReferencedKAITopologyIsOnlyCheckedForDrift(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	external := &kaiv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "platform-topology"},
		Spec: kaiv1alpha1.TopologySpec{Levels: []kaiv1alpha1.TopologyLevel{{NodeLabel: "example.com/block"}, {NodeLabel: "kubernetes.io/hostname"}}}}
	require.NoError(t, env.Client.Create(ctx, external))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), external) })
	ct := clusterTopology("kai-external")
	ct.Spec.SchedulerTopologyBindings = []grovev1alpha1.SchedulerTopologyBinding{{SchedulerName: "kai-scheduler", TopologyReference: external.Name}}
	createBinding(t, ct)

	got := kaiStatus(t, ct.Name, driftedWith("its level 2"), "the external Topology lacks the rack level")
	st := got.Status.SchedulerTopologyStatuses[0]
	assert.Equal(t, "platform-topology", st.TopologyReference)
	assert.Contains(t, st.Message, "its level 2 is kubernetes.io/hostname, the binding's is example.com/rack")
	drift := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionSchedulerTopologyDrift)
	assert.Equal(t, "kai-scheduler: "+st.Message, drift.Message)
	now := &kaiv1alpha1.Topology{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: external.Name}, now))
	assert.Equal(t, external.ResourceVersion, now.ResourceVersion, "someone else's Topology is never written")
	assert.Empty(t, now.OwnerReferences)
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, &kaiv1alpha1.Topology{})), "no Topology of its own")

	// Another backend's entry is kept and counts for the condition.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			return err
		}
		got.Status.SchedulerTopologyStatuses = append(got.Status.SchedulerTopologyStatuses,
			grovev1alpha1.SchedulerTopologyStatus{SchedulerName: "another-scheduler", InSync: false, Message: "theirs", SchedulerBackendTopologyObservedGeneration: got.Generation})
		return env.Client.Status().Update(ctx, got)
	}))

	// Its owner replaces it with the binding's levels (KAI forbids editing them): in sync.
	require.NoError(t, env.Client.Delete(ctx, now))
	fixed := &kaiv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: external.Name}, Spec: kaiv1alpha1.TopologySpec{Levels: []kaiv1alpha1.TopologyLevel{
		{NodeLabel: "example.com/block"}, {NodeLabel: "example.com/rack"}, {NodeLabel: "kubernetes.io/hostname"},
	}}}
	require.NoError(t, env.Client.Create(ctx, fixed))
	got = kaiStatus(t, ct.Name, func(st grovev1alpha1.SchedulerTopologyStatus, drift *metav1.Condition) bool {
		return st.InSync && drift.Status == metav1.ConditionTrue && drift.Message == "another-scheduler: theirs"
	}, "kai-scheduler in sync, the other backend's entry kept")
	assert.Len(t, got.Status.SchedulerTopologyStatuses, 2)
}

func TestKAIPodGroupsNameTheBindingsTopology(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	ct := clusterTopology("kai-podgroups")
	createBinding(t, ct)
	pg := gang(ns, "topo-0", configv1alpha1.SchedulerNameKAI, map[string]string{kaiv2alpha2.QueueLabel: "team-a"})
	pg.Annotations[schedulerv1alpha1.AnnotationTopologyName] = ct.Name
	require.NoError(t, env.Client.Create(ctx, pg))
	backendAcknowledged(t, pg)

	topologies := func(name string) bool {
		got := &kaiv2alpha2.PodGroup{}
		if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "topo-0"}, got) != nil || got.Spec.TopologyConstraint == nil {
			return false
		}
		for _, sg := range got.Spec.SubGroups {
			if sg.TopologyConstraint != nil && sg.TopologyConstraint.Topology != name {
				return false
			}
		}
		return got.Spec.TopologyConstraint.Topology == name
	}
	require.Eventually(t, func() bool { return topologies(ct.Name) }, timeout, 100*time.Millisecond,
		"without a reference the PodGroup names the Topology the backend keeps, named after the binding")

	// Pointing kai-scheduler at another Topology moves the PodGroups there.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ct), ct))
	ct.Spec.SchedulerTopologyBindings = []grovev1alpha1.SchedulerTopologyBinding{{SchedulerName: "kai-scheduler", TopologyReference: "platform-topology-2"}}
	require.NoError(t, env.Client.Update(ctx, ct))
	require.Eventually(t, func() bool { return topologies("platform-topology-2") }, timeout, 100*time.Millisecond,
		"the PodGroup names the referenced Topology")
	kaiStatus(t, ct.Name, func(st grovev1alpha1.SchedulerTopologyStatus, drift *metav1.Condition) bool {
		return drifted(st, drift) && st.Message == `KAI Topology "platform-topology-2" named in schedulerTopologyBindings does not exist`
	}, "a missing referenced Topology is drift")
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: ct.Name}, &kaiv1alpha1.Topology{}))
	}, timeout, 100*time.Millisecond, "the Topology kept for the binding before is deleted")
}
