package resizeguard

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// request is an UPDATE of obj (a PodClique or scaling group) from old to new replicas; with
// scale, through its scale subresource, whose Scale carries no labels.
func request(t *testing.T, obj client.Object, from, to int32, scale bool) admission.Request {
	t.Helper()
	raw := func(n int32) runtime.RawExtension {
		var o any
		switch obj := obj.(type) {
		case *grovev1alpha1.PodClique:
			c := obj.DeepCopy()
			c.Spec.Replicas = n
			o = c
		case *grovev1alpha1.PodCliqueScalingGroup:
			g := obj.DeepCopy()
			g.Spec.Replicas = n
			o = g
		}
		if scale {
			o = &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace()}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
		}
		b, err := json.Marshal(o)
		require.NoError(t, err)
		return runtime.RawExtension{Raw: b}
	}
	resource := "podcliques"
	if _, ok := obj.(*grovev1alpha1.PodCliqueScalingGroup); ok {
		resource = "podcliquescalinggroups"
	}
	req := admissionv1.AdmissionRequest{Operation: admissionv1.Update, Name: obj.GetName(), Namespace: obj.GetNamespace(),
		Kind: metav1.GroupVersionKind{Kind: obj.GetObjectKind().GroupVersionKind().Kind}, Resource: metav1.GroupVersionResource{Resource: resource},
		OldObject: raw(from), Object: raw(to)}
	if scale {
		req.SubResource = "scale"
	}
	return admission.Request{AdmissionRequest: req}
}

func TestReplicaChangesOfChildrenAreRefusedForTrainingAndDuringACoherentUpdateOfTheirReplica(t *testing.T) {
	inference := builders.PodCliqueSet("ns", "disagg").Replicas(2).Clique("frontend", 2)
	const refusal = "spec.replicas changes are not allowed while a coherent update is in progress on PodCliqueSet ns/disagg replica 1"
	frontend1 := builders.PodClique("ns", "disagg-1-frontend").OfReplica("disagg", "1").Replicas(2, 1).Obj()
	frontend0 := builders.PodClique("ns", "disagg-0-frontend").OfReplica("disagg", "0").Replicas(2, 1).Obj()
	prefill1 := builders.PodCliqueScalingGroup("ns", "disagg-1-prefill", "leader").OfReplica("disagg", "1").Replicas(2, 1).Obj()
	for _, tc := range []struct {
		name    string
		pcs     *grovev1alpha1.PodCliqueSet
		obj     client.Object
		to      int32
		scale   bool
		refused string
	}{
		{name: "an inference clique scales", pcs: inference.Obj(), obj: frontend1, to: 3},
		{name: "a Training clique does not", pcs: builders.PodCliqueSet("ns", "disagg").Clique("frontend", 2).Training(0).Obj(), obj: frontend1, to: 3,
			refused: "belongs to Training PodCliqueSet disagg, whose size cannot change while it runs"},
		{name: "the updating replica's clique does not, during a Coherent update", obj: frontend1, to: 3, refused: refusal,
			pcs: builders.PodCliqueSet("ns", "disagg").Replicas(2).Clique("frontend", 2).UpdateStrategy(grovev1alpha1.CoherentStrategy).Updating(1).Obj()},
		{name: "nor through its scale subresource", obj: frontend1, to: 1, scale: true, refused: refusal,
			pcs: builders.PodCliqueSet("ns", "disagg").Replicas(2).Clique("frontend", 2).UpdateStrategy(grovev1alpha1.CoherentStrategy).Updating(1).Obj()},
		{name: "nor its scaling group, through the scale subresource", obj: prefill1, to: 3, scale: true, refused: refusal,
			pcs: builders.PodCliqueSet("ns", "disagg").Replicas(2).Clique("frontend", 2).UpdateStrategy(grovev1alpha1.CoherentStrategy).Updating(1).Obj()},
		{name: "nor a replica waiting for its turn (its new PodCliques could only be made at the new template)", obj: frontend0, to: 3, refused: refusal,
			pcs: builders.PodCliqueSet("ns", "disagg").Replicas(2).Clique("frontend", 2).UpdateStrategy(grovev1alpha1.CoherentStrategy).Updating(1).Obj()},
		{name: "the replica scales once the update ended", obj: frontend1, to: 3,
			pcs: builders.PodCliqueSet("ns", "disagg").Replicas(2).Clique("frontend", 2).UpdateStrategy(grovev1alpha1.CoherentStrategy).Updating(1).UpdateEnded().Obj()},
		{name: "a RollingRecreate update does not hold scaling", obj: frontend1, to: 3,
			pcs: builders.PodCliqueSet("ns", "disagg").Replicas(2).Clique("frontend", 2).UpdateStrategy(grovev1alpha1.RollingRecreateStrategy).Updating(1).Obj()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			require.NoError(t, grovev1alpha1.AddToScheme(scheme))
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.pcs, tc.obj.DeepCopyObject().(client.Object)).Build()
			g := &Guard{Client: c}

			resp := g.Handle(context.Background(), request(t, tc.obj, 2, tc.to, tc.scale))

			if tc.refused == "" {
				assert.True(t, resp.Allowed, "refused: %v", resp.Result)
				return
			}
			assert.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusForbidden), resp.Result.Code, "a client tells the refusal by 403 Forbidden")
			assert.Contains(t, resp.Result.Message, tc.refused)
		})
	}
}
