// Package resizeguard guards spec.replicas of the PodCliques and PodCliqueScalingGroups of a
// PodCliqueSet, directly or through the scale subresource (`kubectl scale`, an autoscaler): a
// Training job's size is part of the job and never changes, and while a Coherent update runs every
// replica keeps its sizes — the plan of the replica being updated is made for them, and a waiting
// replica's new PodCliques could only be made at the new template — as upstream Grove refuses it,
// with the message NVIDIA Dynamo recognises (Dynamo takes an open update as a lock on scaling the
// whole PodCliqueSet).
package resizeguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// Path is where the guard is served.
const Path = "/validate-child-replicas"

// +kubebuilder:webhook:path=/validate-child-replicas,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=grove.io,resources=podcliques;podcliques/scale;podcliquescalinggroups;podcliquescalinggroups/scale,verbs=update,versions=v1alpha1,name=vchildreplicas.grove.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=grove.io,resources=podcliques;podcliquescalinggroups;podcliquesets,verbs=get;list;watch

// Guard refuses replica changes of Training children and of any child during a Coherent update.
type Guard struct {
	Client client.Client
}

// SetupWithManager serves the guard.
func SetupWithManager(mgr ctrl.Manager, _ *configv1alpha1.OperatorConfiguration) error {
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: &Guard{Client: mgr.GetClient()}})
	return nil
}

// withReplicas reads what the guard needs of a PodClique, a PodCliqueScalingGroup or a Scale.
type withReplicas struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
}

// Handle allows every update that keeps spec.replicas, and a change only when neither rule
// refuses it.
func (g *Guard) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var oldObj, newObj withReplicas
	if err := json.Unmarshal(req.OldObject.Raw, &oldObj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if err := json.Unmarshal(req.Object.Raw, &newObj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if oldObj.Spec.Replicas == newObj.Spec.Replicas {
		return admission.Allowed("")
	}
	labels := oldObj.Metadata.Labels
	if req.SubResource == "scale" {
		// A Scale carries no labels: read them from the scaled object.
		var obj client.Object = &grovev1alpha1.PodClique{}
		if req.Resource.Resource == "podcliquescalinggroups" {
			obj = &grovev1alpha1.PodCliqueScalingGroup{}
		}
		if err := g.Client.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, obj); err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		labels = obj.GetLabels()
	}
	owner := labels[grovev1alpha1.LabelPartOf]
	if owner == "" {
		return admission.Allowed("not part of a PodCliqueSet")
	}
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := g.Client.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: owner}, pcs); err != nil {
		return admission.Allowed("its PodCliqueSet is gone")
	}
	if pcs.Spec.WorkloadType == grovev1alpha1.WorkloadTypeTraining {
		log.FromContext(ctx).Info("refused a replica change: the PodCliqueSet is Training", "kind", req.Kind.Kind, "object", klog.KRef(req.Namespace, req.Name), "podCliqueSet", owner)
		return admission.Denied(fmt.Sprintf("spec.replicas: Forbidden: %s %s belongs to Training PodCliqueSet %s, whose size cannot change while it runs",
			req.Kind.Kind, req.Name, owner))
	}
	if updating, inProgress := pcs.CoherentUpdate(); inProgress {
		if updating < 0 {
			updating, _ = strconv.Atoi(labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex])
		}
		log.FromContext(ctx).Info("refused a replica change: a Coherent update is in progress", "kind", req.Kind.Kind, "object", klog.KRef(req.Namespace, req.Name),
			"podCliqueSet", owner, "replicaBeingUpdated", updating, "from", oldObj.Spec.Replicas, "to", newObj.Spec.Replicas)
		return admission.Denied(CoherentScaleRefusal(pcs, updating))
	}
	return admission.Allowed("")
}

// CoherentScaleRefusal is the reason a replica change is refused during a Coherent update: its
// beginning is upstream Grove's, which clients (NVIDIA Dynamo) match to wait and retry.
func CoherentScaleRefusal(pcs *grovev1alpha1.PodCliqueSet, replica int) string {
	return fmt.Sprintf("spec.replicas changes are not allowed while a coherent update is in progress on PodCliqueSet %s/%s replica %d; complete the update of this replica before scaling",
		pcs.Namespace, pcs.Name, replica)
}
