package trainjobadmission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

func volcanoRuntime(kind trainerv1alpha1.WorkloadKind, queue *string, priorityClass string) *trainerv1alpha1.TrainingRuntime {
	rt := frameworkRuntime("rt", trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}, "")
	rt.Spec.WorkloadKind = kind
	rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}}
	if queue != nil {
		rt.Spec.Template.Annotations = map[string]string{volcanov1beta1.QueueNameAnnotationKey: *queue}
	}
	rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = priorityClass
	return rt
}

func queuePatch(queue string) trainerv1alpha1.RuntimePatch {
	return trainerv1alpha1.RuntimePatch{Manager: "example.com/me", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
		Template: &trainerv1alpha1.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{Annotations: map[string]string{volcanov1beta1.QueueNameAnnotationKey: queue}}},
	}}
}

func cluster(t *testing.T, objs ...client.Object) client.Reader {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, volcanov1beta1.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func openQueue(name string) *volcanov1beta1.Queue {
	return &volcanov1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: volcanov1beta1.QueueStatus{State: volcanov1beta1.QueueStateOpen}}
}

// volcanoNotServed answers every read as if Volcano were not installed.
type volcanoNotServed struct{ client.Reader }

func (volcanoNotServed) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "scheduling.volcano.sh", Kind: "Queue"}}
}

func TestVolcanoTrainJobIsRefusedNamingTheFieldItsQueueOrSchedulerComesFrom(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, trainerv1alpha1.AddToScheme(s))
	q := func(s string) *string { return &s }
	cases := []struct {
		name    string
		runtime *trainerv1alpha1.TrainingRuntime
		patches []trainerv1alpha1.RuntimePatch
		cluster client.Reader
		backend bool
		want    []string
	}{
		{name: "the runtime's queue exists", runtime: volcanoRuntime("", q("research"), ""), cluster: cluster(t, openQueue("research"))},
		{name: "no queue named, Volcano's default exists", runtime: volcanoRuntime("", nil, ""), cluster: cluster(t, openQueue("default"))},
		{name: "a patch names an existing queue", runtime: volcanoRuntime("", q("missing"), ""), patches: []trainerv1alpha1.RuntimePatch{queuePatch("prod")},
			cluster: cluster(t, openQueue("prod"))},
		{name: "the runtime's queue is missing", runtime: volcanoRuntime("", q("research"), ""), cluster: cluster(t, openQueue("default")),
			want: []string{"spec.runtimeRef.name", `runtime "rt"'s spec.template.metadata.annotations[scheduling.volcano.sh/queue-name]: Volcano queue "research" does not exist`}},
		{name: "a patch names a missing queue", runtime: volcanoRuntime("", q("research"), ""), patches: []trainerv1alpha1.RuntimePatch{queuePatch("prod")},
			cluster: cluster(t, openQueue("research")),
			want:    []string{`spec.runtimePatches[0].trainingRuntimeSpec.template.metadata.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "prod": Volcano queue "prod" does not exist`}},
		{name: "an empty queue name", runtime: volcanoRuntime("", q(""), ""), cluster: cluster(t),
			want: []string{"spec.runtimeRef.name", "the Volcano queue name must not be empty"}},
		{name: "a closed queue", runtime: volcanoRuntime("", q("research"), ""),
			cluster: cluster(t, &volcanov1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "research"}, Status: volcanov1beta1.QueueStatus{State: volcanov1beta1.QueueStateClosed}}),
			want:    []string{`Volcano queue "research" is Closed, not Open`}},
		{name: "Volcano not installed", runtime: volcanoRuntime("", nil, ""), cluster: volcanoNotServed{},
			want: []string{"spec.runtimeRef.name", "Volcano is not installed: scheduling.volcano.sh/v1beta1 Queue is not served"}},
		{name: "a priority class that does not exist", runtime: volcanoRuntime("", nil, "urgent"), cluster: cluster(t, openQueue("default")),
			want: []string{`spec.template.spec.replicatedJobs[0].template.spec.template.spec.priorityClassName: PriorityClass "urgent" does not exist`}},
		{name: "a priority class that exists", runtime: volcanoRuntime("", nil, "urgent"),
			cluster: cluster(t, openQueue("default"), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "urgent"}, Value: 10})},
		{name: "the PodCliqueSet path without the volcano backend", runtime: volcanoRuntime(trainerv1alpha1.WorkloadKindPodCliqueSet, nil, ""), cluster: cluster(t, openQueue("default")),
			want: []string{"spec.runtimeRef.name", "the volcano scheduler backend is not enabled"}},
		{name: "the PodCliqueSet path with the volcano backend", runtime: volcanoRuntime(trainerv1alpha1.WorkloadKindPodCliqueSet, nil, ""), cluster: cluster(t, openQueue("default")), backend: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &TrainJobValidator{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(tc.runtime).Build(), Cluster: tc.cluster, VolcanoBackend: tc.backend}
			tj := trainJob("ns")
			tj.Spec.RuntimePatches = tc.patches

			_, err := v.ValidateCreate(context.Background(), tj)

			if len(tc.want) == 0 {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestVolcanoQueueOfARuntimePatchIsCheckedWhenThePatchChanges(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, trainerv1alpha1.AddToScheme(s))
	v := &TrainJobValidator{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(volcanoRuntime("", nil, "")).Build(), Cluster: cluster(t, openQueue("default"))}
	old := trainJob("ns")
	old.Spec.Suspend = new(true)
	patched := old.DeepCopy()
	patched.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{queuePatch("ghost")}

	_, err := v.ValidateUpdate(context.Background(), old, patched)

	require.Error(t, err)
	assert.Contains(t, err.Error(), `spec.runtimePatches[0].trainingRuntimeSpec.template.metadata.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "ghost"`)
}

func TestVolcanoNetworkTopologyIsRefusedOnThePodCliqueSetPathOnly(t *testing.T) {
	rt := volcanoRuntime(trainerv1alpha1.WorkloadKindPodCliqueSet, nil, "")
	rt.Spec.PodGroupPolicy.Volcano.NetworkTopology = &trainerv1alpha1.NetworkTopologySpec{Mode: "hard"}
	errs, _ := ValidateRuntimeSpec(&rt.Spec)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.podGroupPolicy.volcano.networkTopology", errs[0].Field)

	rt.Spec.WorkloadKind = trainerv1alpha1.WorkloadKindJobSet
	errs, _ = ValidateRuntimeSpec(&rt.Spec)
	assert.Empty(t, errs, "the JobSet path hands it to Volcano's PodGroup")
}
