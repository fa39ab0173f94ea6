// Package managedguard is grove-webhook's optional guard of the objects the operators manage:
// PodCliques, scaling groups, PodGangs, pods, Services, RBAC objects and autoscalers labelled
// app.kubernetes.io/managed-by=grove-operator may be changed only by the managing binaries and
// exempt users, so a hand edit cannot silently fight the controllers. Deleting a pod is always
// allowed (that is how users restart one), and a PodCliqueSet can opt its objects out.
package managedguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// Path is where the authorizer is served.
const Path = "/validate-managed-resources"

// AnnotationDisableProtection on a PodCliqueSet lets anyone change the objects made for it.
const AnnotationDisableProtection = "grove.io/disable-managed-resource-protection"

// +kubebuilder:webhook:path=/validate-managed-resources,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=grove.io;scheduler.grove.io;"";rbac.authorization.k8s.io;autoscaling,resources=podcliques;podcliquescalinggroups;podgangs;pods;services;serviceaccounts;roles;rolebindings;horizontalpodautoscalers,verbs=update;delete,versions=*,name=vmanagedresources.grove.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch

// Authorizer decides who may change managed objects.
type Authorizer struct {
	Client client.Client
	// Allowed are the managers and exempt users.
	Allowed []string
}

// SetupWithManager serves the authorizer when the configuration enables it.
func SetupWithManager(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	if !cfg.Authorizer.Enabled {
		return nil
	}
	a := &Authorizer{Client: mgr.GetClient(), Allowed: append(slices.Clone(cfg.Authorizer.ManagerUserNames), cfg.Authorizer.ExemptServiceAccountUserNames...)}
	mgr.GetWebhookServer().Register(Path, &webhook.Admission{Handler: a})
	return nil
}

// systemUsers keep Kubernetes itself working: the garbage collector and namespace controller
// delete, the controller-manager's controllers update.
func systemUser(user string, groups []string) bool {
	return user == "system:kube-controller-manager" || slices.Contains(groups, "system:serviceaccounts:kube-system")
}

// Handle allows or denies one request.
func (a *Authorizer) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Delete && req.Kind.Kind == "Pod" {
		return admission.Allowed("deleting a pod is how a user restarts it")
	}
	user := req.UserInfo.Username
	if slices.Contains(a.Allowed, user) || systemUser(user, req.UserInfo.Groups) {
		return admission.Allowed("")
	}
	obj, err := objectOf(req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if obj.GetLabels()[grovev1alpha1.LabelManagedBy] != grovev1alpha1.LabelManagedByValue {
		return admission.Allowed("not managed by the grove-operator")
	}
	owner := obj.GetLabels()[grovev1alpha1.LabelPartOf]
	if owner != "" {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if err := a.Client.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: owner}, pcs); err == nil &&
			pcs.Annotations[AnnotationDisableProtection] == "true" {
			return admission.Allowed("protection disabled on the PodCliqueSet")
		}
	}
	return admission.Denied(fmt.Sprintf("%s %s/%s is managed by the grove-operator for PodCliqueSet %q; only %s may %s it (annotate the PodCliqueSet with %s=true to opt out)",
		req.Kind.Kind, req.Namespace, req.Name, owner, strings.Join(a.Allowed, ", "), strings.ToLower(string(req.Operation)), AnnotationDisableProtection))
}

// objectOf decodes the object a request is about: the stored one for a deletion.
func objectOf(req admission.Request) (client.Object, error) {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	obj := &metav1.PartialObjectMetadata{}
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", req.Kind.Kind, req.Name, err)
	}
	return obj, nil
}
