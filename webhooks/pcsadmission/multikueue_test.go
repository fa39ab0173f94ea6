package pcsadmission

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

const provisioningController = "kueue.x-k8s.io/provisioning-request"

// kueueQueues is a reader of Kueue's queues and admission checks holding objs.
func kueueQueues(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, kueuev1beta2.AddToScheme(scheme))
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

// teamA is the LocalQueue ns/team-a of the ClusterQueue gpus.
func teamA() *kueuev1beta2.LocalQueue {
	return &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a"}, Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "gpus"}}
}

// gpusChecking is the ClusterQueue gpus running the named admission checks.
func gpusChecking(checks ...string) *kueuev1beta2.ClusterQueue {
	cq := &kueuev1beta2.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}}
	if len(checks) > 0 {
		cq.Spec.AdmissionChecksStrategy = &kueuev1beta2.AdmissionChecksStrategy{}
		for _, c := range checks {
			cq.Spec.AdmissionChecksStrategy.AdmissionChecks = append(cq.Spec.AdmissionChecksStrategy.AdmissionChecks,
				kueuev1beta2.AdmissionCheckStrategyRule{Name: kueuev1beta2.AdmissionCheckReference(c)})
		}
	}
	return cq
}

func admissionCheck(name, controller string) *kueuev1beta2.AdmissionCheck {
	return &kueuev1beta2.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueuev1beta2.AdmissionCheckSpec{ControllerName: controller}}
}

// toMultiKueueCluster is a queue team-a leading to the MultiKueue check "multikueue".
func toMultiKueueCluster() []client.Object {
	return []client.Object{teamA(), gpusChecking("multikueue"), admissionCheck("multikueue", kueuev1beta2.MultiKueueControllerName)}
}

// updating is a context of an admission request updating the stored PodCliqueSet old.
func updating(t *testing.T, old *grovev1alpha1.PodCliqueSet) context.Context {
	t.Helper()
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Update, OldObject: runtime.RawExtension{Raw: raw}, Object: runtime.RawExtension{Raw: raw}}})
}

func TestANewPodCliqueSetWhoseQueueLeadsToMultiKueueIsMarkedForMultiKueue(t *testing.T) {
	none := func(*grovev1alpha1.PodCliqueSet) {}
	cases := []struct {
		name    string
		objs    []client.Object
		nilRead bool
		mutate  func(*grovev1alpha1.PodCliqueSet)
		want    *string
	}{
		{name: "the queue's ClusterQueue runs a MultiKueue check", objs: toMultiKueueCluster(), mutate: none, want: ptr.To(grovev1alpha1.ManagedByMultiKueue)},
		{name: "a MultiKueue check after a check of another controller", objs: []client.Object{teamA(), gpusChecking("provisioning", "multikueue"),
			admissionCheck("provisioning", provisioningController), admissionCheck("multikueue", kueuev1beta2.MultiKueueControllerName)},
			mutate: none, want: ptr.To(grovev1alpha1.ManagedByMultiKueue)},
		{name: "the LocalQueue does not exist", objs: []client.Object{gpusChecking("multikueue"), admissionCheck("multikueue", kueuev1beta2.MultiKueueControllerName)}, mutate: none},
		{name: "the ClusterQueue does not exist", objs: []client.Object{teamA(), admissionCheck("multikueue", kueuev1beta2.MultiKueueControllerName)}, mutate: none},
		{name: "the AdmissionCheck does not exist", objs: []client.Object{teamA(), gpusChecking("multikueue")}, mutate: none},
		{name: "a check of another controller", objs: []client.Object{teamA(), gpusChecking("provisioning"), admissionCheck("provisioning", provisioningController)}, mutate: none},
		{name: "a ClusterQueue without checks", objs: []client.Object{teamA(), gpusChecking()}, mutate: none},
		{name: "not queued", objs: toMultiKueueCluster(), mutate: func(p *grovev1alpha1.PodCliqueSet) { delete(p.Labels, grovev1alpha1.LabelKueueQueueName) }},
		{name: "admitted through its owner", objs: toMultiKueueCluster(), mutate: func(p *grovev1alpha1.PodCliqueSet) { withOwnerAdmission(p, trainJobOwner) }},
		{name: "MultiKueue's own copy on a worker cluster", objs: toMultiKueueCluster(), mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Labels[grovev1alpha1.LabelMultiKueueOrigin] = "manager"
		}},
		{name: "an explicit managedBy is kept", objs: toMultiKueueCluster(), mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.ManagedBy = ptr.To(grovev1alpha1.ManagedByGroveOperator)
		}, want: ptr.To(grovev1alpha1.ManagedByGroveOperator)},
		{name: "the Kueue integration is off: nothing to read", nilRead: true, mutate: none},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &Defaulter{Backends: kubeOnly}
			if !tc.nilRead {
				d.Queues = kueueQueues(t, interceptor.Funcs{}, tc.objs...)
			}
			pcs := queued(tc.mutate)

			require.NoError(t, d.Default(context.Background(), pcs))

			assert.Equal(t, tc.want, pcs.Spec.ManagedBy)
		})
	}
}

func TestAnUpdateIsNeverMarkedForMultiKueue(t *testing.T) {
	stored := queued(func(*grovev1alpha1.PodCliqueSet) {})
	d := &Defaulter{Backends: kubeOnly, Queues: kueueQueues(t, interceptor.Funcs{}, toMultiKueueCluster()...)}
	pcs := stored.DeepCopy()
	pcs.Spec.Replicas = 3

	require.NoError(t, d.Default(updating(t, stored), pcs))

	assert.Nil(t, pcs.Spec.ManagedBy, "managedBy is decided once, on create")
}

func TestAFailedReadOfTheQueueIsAnInternalError(t *testing.T) {
	failOn := func(failing client.Object) interceptor.Funcs {
		return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*kueuev1beta2.AdmissionCheck); ok && key.Name == failing.GetName() {
				return errors.New("etcdserver: request timed out")
			}
			return c.Get(ctx, key, obj, opts...)
		}}
	}
	cases := []struct {
		name   string
		reader client.Reader
		cause  string
	}{
		{"reading the LocalQueue", failingReader{}, "connection refused"},
		{"reading an AdmissionCheck", kueueQueues(t, failOn(admissionCheck("multikueue", "")), toMultiKueueCluster()...), "request timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := queued(func(*grovev1alpha1.PodCliqueSet) {})

			err := (&Defaulter{Backends: kubeOnly, Queues: tc.reader}).Default(context.Background(), pcs)

			require.Error(t, err)
			assert.True(t, apierrors.IsInternalError(err), "a failed read decides nothing: %v", err)
			assert.Contains(t, err.Error(), "to learn whether MultiKueue dispatches it")
			assert.Contains(t, err.Error(), tc.cause)
			assert.Nil(t, pcs.Spec.ManagedBy)
		})
	}
}

// The served defaulting webhook patches spec.managedBy in on create only, and answers a failed
// read with 500.
func TestTheDefaultingWebhookPatchesManagedByOnCreate(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	pcs := queued(func(*grovev1alpha1.PodCliqueSet) {})
	raw, err := json.Marshal(pcs)
	require.NoError(t, err)
	request := func(op admissionv1.Operation) admission.Request {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "1", Operation: op, Object: runtime.RawExtension{Raw: raw},
			Kind: metav1.GroupVersionKind{Group: "grove.io", Version: "v1alpha1", Kind: "PodCliqueSet"}}}
		if op == admissionv1.Update {
			req.OldObject = runtime.RawExtension{Raw: raw}
		}
		return req
	}
	cases := []struct {
		name        string
		op          admissionv1.Operation
		reader      client.Reader
		wantPatch   bool
		wantAllowed bool
	}{
		{"create", admissionv1.Create, kueueQueues(t, interceptor.Funcs{}, toMultiKueueCluster()...), true, true},
		{"update", admissionv1.Update, kueueQueues(t, interceptor.Funcs{}, toMultiKueueCluster()...), false, true},
		{"create, the queue unread", admissionv1.Create, failingReader{}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := defaultingHandler(scheme, kubeOnly, tc.reader).Handle(context.Background(), request(tc.op))

			require.Equal(t, tc.wantAllowed, resp.Allowed, "%+v", resp.Result)
			if !tc.wantAllowed {
				assert.Equal(t, int32(500), resp.Result.Code)
				return
			}
			var managedBy []any
			for _, p := range resp.Patches {
				if p.Path == "/spec/managedBy" {
					managedBy = append(managedBy, p.Value)
				}
			}
			if tc.wantPatch {
				assert.Equal(t, []any{grovev1alpha1.ManagedByMultiKueue}, managedBy)
			} else {
				assert.Empty(t, managedBy)
			}
		})
	}
}

// dispatchedTraining is a queued Training PodCliqueSet MultiKueue dispatches, defaulted as
// grove-webhook's defaulting leaves it for validation.
func dispatchedTraining(mutate func(*grovev1alpha1.PodCliqueSet)) *grovev1alpha1.PodCliqueSet {
	return queued(func(p *grovev1alpha1.PodCliqueSet) {
		p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
		p.Spec.ManagedBy = ptr.To(grovev1alpha1.ManagedByMultiKueue)
		mutate(p)
		Default(p, kubeOnly)
	})
}

func TestMultiKueueDispatchesOnlyFixedSizeTrainingQueuedOnItsOwn(t *testing.T) {
	none := func(*grovev1alpha1.PodCliqueSet) {}
	autoscaled := &grovev1alpha1.AutoScalingConfig{MaxReplicas: 4}
	cases := []struct {
		name   string
		pcs    *grovev1alpha1.PodCliqueSet
		want   []string
		reason string
	}{
		{name: "a Training PodCliqueSet", pcs: dispatchedTraining(none)},
		{name: "an Inference PodCliqueSet", pcs: dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) { p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeInference }),
			want: []string{"spec.workloadType"}, reason: "MultiKueue dispatches Training workloads only"},
		{name: "an autoscaled clique", pcs: dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.ScaleConfig = autoscaled }),
			want: []string{"spec.template.cliques[0].spec.autoScalingConfig"}, reason: "an autoscaled clique cannot be dispatched"},
		{name: "an autoscaled scaling group", pcs: dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = autoscaled
		}), want: []string{"spec.template.podCliqueScalingGroups[0].scaleConfig"}, reason: "an autoscaled scaling group cannot be dispatched"},
		{name: "admitted through its owner", pcs: dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) { withOwnerAdmission(p, trainJobOwner) }),
			want: []string{queueAdmissionPath}, reason: "Owner cannot be dispatched by MultiKueue on its own"},
		{name: "not queued", pcs: dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) { delete(p.Labels, grovev1alpha1.LabelKueueQueueName) }),
			want: []string{"spec.managedBy"}, reason: "needs the kueue.x-k8s.io/queue-name label"},
		{name: "not dispatched: an autoscaled Inference PodCliqueSet is none of these rules' business", pcs: queued(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeInference
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = autoscaled
		})},
		{name: "managed by the grove-operator", pcs: queued(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeInference
			p.Spec.ManagedBy = ptr.To(grovev1alpha1.ManagedByGroveOperator)
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateMultiKueueCreate(tc.pcs)

			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
				assert.Contains(t, e.Detail, tc.reason)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTheValidatorAdmitsOnlyTrainingForMultiKueue(t *testing.T) {
	v := &Validator{Backends: kubeOnly, Kueue: true}
	t.Run("a Training PodCliqueSet is admitted", func(t *testing.T) {
		_, err := v.ValidateCreate(context.Background(), dispatchedTraining(func(*grovev1alpha1.PodCliqueSet) {}))
		assert.NoError(t, err)
	})
	t.Run("an Inference PodCliqueSet is refused naming spec.workloadType", func(t *testing.T) {
		_, err := v.ValidateCreate(context.Background(), dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeInference
		}))
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err), "%v", err)
		assert.Contains(t, err.Error(), "spec.workloadType: Forbidden: MultiKueue dispatches Training workloads only")
	})
}

func TestTheSpecOfAPodCliqueSetMultiKueueDispatchesIsImmutable(t *testing.T) {
	dispatched := dispatchedTraining(func(*grovev1alpha1.PodCliqueSet) {})
	local := dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) { p.Spec.ManagedBy = nil })
	changed := func(old *grovev1alpha1.PodCliqueSet, change func(*grovev1alpha1.PodCliqueSet)) *grovev1alpha1.PodCliqueSet {
		p := old.DeepCopy()
		change(p)
		return p
	}
	moreReplicas := func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Replicas++ }
	// A Training workload may take more restarts (validateTrainingUpdate): only MultiKueue refuses it.
	moreRestarts := func(p *grovev1alpha1.PodCliqueSet) {
		p.Spec.TrainingSpec = &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](5)}
	}
	cases := []struct {
		name string
		old  *grovev1alpha1.PodCliqueSet
		new  *grovev1alpha1.PodCliqueSet
		want []string
	}{
		{"replicas changed", dispatched, changed(dispatched, moreReplicas), []string{"spec"}},
		{"maxRestarts raised", dispatched, changed(dispatched, moreRestarts), []string{"spec"}},
		{"a clique's image changed", dispatched, changed(dispatched, func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Image = "busybox:2"
		}), []string{"spec"}},
		{"labels and annotations changed", dispatched, changed(dispatched, func(p *grovev1alpha1.PodCliqueSet) {
			p.Labels["team"] = "b"
			p.Annotations = map[string]string{"note": "x"}
		}), nil},
		{"not dispatched: maxRestarts raised", local, changed(local, moreRestarts), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range validateMultiKueueUpdate(tc.old, tc.new) {
				got = append(got, e.Field)
				assert.Contains(t, e.Detail, "immutable")
			}
			assert.Equal(t, tc.want, got)

			_, err := (&Validator{Backends: kubeOnly, Kueue: true}).ValidateUpdate(context.Background(), tc.old, tc.new)
			if tc.want == nil {
				assert.NoError(t, err, "nothing else refuses the change either")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "spec: Forbidden: the spec of a PodCliqueSet MultiKueue dispatches is immutable")
		})
	}
}

func TestAManagedByThatItsQueueContradictsIsRefused(t *testing.T) {
	operator := grovev1alpha1.ManagedByGroveOperator
	local := []client.Object{teamA(), gpusChecking()}
	cases := []struct {
		name      string
		objs      []client.Object
		managedBy *string
		refused   string
	}{
		{name: "MultiKueue's, its queue leading to MultiKueue", objs: toMultiKueueCluster(), managedBy: ptr.To(grovev1alpha1.ManagedByMultiKueue)},
		{name: "MultiKueue's, its queue without MultiKueue's check", objs: local, managedBy: ptr.To(grovev1alpha1.ManagedByMultiKueue),
			refused: `spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": queue "team-a" has no MultiKueue admission check`},
		{name: "the grove-operator's, its queue leading to MultiKueue", objs: toMultiKueueCluster(), managedBy: &operator,
			refused: `spec.managedBy: Invalid value: "grove.io/grove-operator": queue "team-a" leads to a MultiKueue admission check`},
		{name: "the grove-operator's, a local queue", objs: local, managedBy: &operator},
		{name: "MultiKueue's, its queue not created yet", managedBy: ptr.To(grovev1alpha1.ManagedByMultiKueue)},
		{name: "unset, its queue leading to MultiKueue (the defaulting webhook sets it)", objs: toMultiKueueCluster()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &Validator{Backends: kubeOnly, Kueue: true, Queues: kueueQueues(t, interceptor.Funcs{}, tc.objs...)}
			pcs := dispatchedTraining(func(p *grovev1alpha1.PodCliqueSet) { p.Spec.ManagedBy = tc.managedBy })
			_, err := v.ValidateCreate(context.Background(), pcs)
			if tc.refused == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.Contains(t, err.Error(), tc.refused)
		})
	}
}
