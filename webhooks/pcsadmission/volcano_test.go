package pcsadmission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

var volcanoEnabled = registryOf(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameVolcano}}})

func onVolcano(queue string) *grovev1alpha1.PodCliqueSet {
	pcs := valid()
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "volcano"
	}
	if queue != "" {
		pcs.Annotations = map[string]string{grovev1alpha1.AnnotationVolcanoQueue: queue}
	}
	return pcs
}

func queues(t *testing.T, names ...string) client.Reader {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, volcanov1beta1.AddToScheme(s))
	b := fake.NewClientBuilder().WithScheme(s)
	for _, n := range names {
		b = b.WithObjects(&volcanov1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: volcanov1beta1.QueueStatus{State: volcanov1beta1.QueueStateOpen}})
	}
	return b.Build()
}

func TestVolcanoPodCliqueSetIsRefusedWhenItsQueueDoesNotExist(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		pcs  *grovev1alpha1.PodCliqueSet
		have client.Reader
		want string
	}{
		{name: "its queue exists", pcs: onVolcano("gpu"), have: queues(t, "gpu")},
		{name: "no queue named, Volcano's default exists", pcs: onVolcano(""), have: queues(t, "default")},
		{name: "its queue is missing", pcs: onVolcano("gpu"), have: queues(t, "default"),
			want: `metadata.annotations[scheduling.grove.io/volcano-queue]: Invalid value: "gpu": Volcano queue "gpu" does not exist`},
		{name: "a malformed queue is refused without a read", pcs: onVolcano("GPU"), have: failingReader{},
			want: `metadata.annotations[scheduling.grove.io/volcano-queue]: Invalid value: "GPU"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &Validator{Backends: volcanoEnabled, SchedulerObjects: tc.have}

			_, err := v.ValidateCreate(ctx, tc.pcs)

			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestVolcanoQueueIsCheckedOnUpdateOnlyWhenItChanges(t *testing.T) {
	ctx := context.Background()
	old := onVolcano("gpu")
	v := &Validator{Backends: volcanoEnabled, SchedulerObjects: queues(t, "cpu")}

	_, err := v.ValidateUpdate(ctx, old, onVolcano("gpu"))
	assert.NoError(t, err, "a queue deleted after creation does not block other updates")

	_, err = v.ValidateUpdate(ctx, old, onVolcano("batch"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `Volcano queue "batch" does not exist`)
}

func TestVolcanoQueueOnAnotherBackendsPodCliqueSetIsReportedAsIgnored(t *testing.T) {
	pcs := valid()
	pcs.Annotations = map[string]string{grovev1alpha1.AnnotationVolcanoQueue: "gpu"}

	warnings, err := (&Validator{Backends: kubeOnly}).ValidateCreate(context.Background(), pcs)

	require.NoError(t, err)
	assert.Contains(t, warnings, `scheduling.grove.io/volcano-queue "gpu" is ignored: only the volcano backend reads it, and this PodCliqueSet's pods go to kube-scheduler`)

	warnings, err = (&Validator{Backends: volcanoEnabled, SchedulerObjects: queues(t, "gpu")}).ValidateCreate(context.Background(), onVolcano("gpu"))
	require.NoError(t, err)
	assert.Empty(t, warnings)
}
