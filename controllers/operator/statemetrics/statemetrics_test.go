package statemetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/test/builders"
)

// scrape registers a Collector over objs and returns the exposition of one scrape.
func scrape(t *testing.T, elected <-chan struct{}, objs ...client.Object) string {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, i := range fieldindex.All {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	c := &Collector{Reader: b.WithObjects(objs...).Build(),
		Clock: clocktesting.NewFakePassiveClock(now), Elected: elected}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	var out strings.Builder
	for _, f := range families {
		_, err := expfmt.MetricFamilyToText(&out, f)
		require.NoError(t, err)
	}
	return out.String()
}

func TestCollectorReportsTheCacheOnTheLeader(t *testing.T) {
	pg := gang("ns", "inf-0", now.Add(-20*time.Minute),
		cond(schedulerv1alpha1.ConditionScheduled, metav1.ConditionFalse, corev1.PodReasonUnschedulable, now.Add(-19*time.Minute)))
	gated := pod("inf-0-worker-0", "inf-0-worker", "inf-0", grovev1alpha1.SchedulingGatePodGangPendingCreation)
	pcs := builders.PodCliqueSet("ns", "inf").Obj()
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseRunning
	pcs.Status.Conditions = []metav1.Condition{cond(grovev1alpha1.ConditionUpdateInProgress, metav1.ConditionUnknown, grovev1alpha1.ReasonProgressDeadlineExceeded, now)}
	elected := make(chan struct{})
	close(elected)

	got := scrape(t, elected, pg, gated, pcs)

	for _, line := range []string{
		`grove_podgangs_unscheduled{backend="kai",namespace="ns",reason="Unschedulable"} 1`,
		`grove_podgangs_unscheduled_longest_seconds{backend="kai",namespace="ns",reason="Unschedulable"} 1200`,
		`grove_pods_gated{namespace="ns",reason="BackendNotReady"} 1`,
		`grove_podcliquesets{namespace="ns",phase="Running",workload_type="Inference"} 1`,
		`grove_podcliqueset_replicas_updating{namespace="ns"} 0`,
		`grove_podcliqueset_updates_in_progress{namespace="ns",strategy="RollingRecreate"} 1`,
		`grove_podcliqueset_updates_stalled{namespace="ns"} 1`,
	} {
		assert.Contains(t, got, line+"\n")
	}
}

func TestCollectorReportsNothingOnAStandby(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "inf").Obj()

	assert.Empty(t, scrape(t, make(chan struct{}), pcs), "a standby replica's cache is not filled, and its series would double the leader's")
}
