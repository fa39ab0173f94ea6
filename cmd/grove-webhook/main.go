// Command grove-webhook serves defaulting and validation for the grove.io and
// trainer.kubeflow.org kinds. It holds no state, so any number of replicas may run.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/internal/app"
	"github.com/kubegrove/grove/webhooks/admissionmetrics"
	"github.com/kubegrove/grove/webhooks/managedguard"
	"github.com/kubegrove/grove/webhooks/pcsadmission"
	"github.com/kubegrove/grove/webhooks/resizeguard"
	"github.com/kubegrove/grove/webhooks/topologyadmission"
	"github.com/kubegrove/grove/webhooks/trainjobadmission"
)

// The certificate rotator keeps the serving certificate in a Secret of the webhook's namespace
// (the deployment creates it empty; cert-controller fills it, never creates it) and injects its
// CA into the two webhook configurations (cluster-scoped, so watched cluster-wide).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;update,namespace=grove-system
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations;validatingwebhookconfigurations,verbs=get;list;watch;update

// Secure metrics (server.metrics.secure, as deployed) check each scraper's token and permission
// with the API server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	app.Main(app.Options{Name: "grove-webhook", WebhookServer: true, Setup: setup,
		// Volcano's Queue, which the volcano backend's admission checks read; Kueue's queues and
		// admission checks, which tell whether MultiKueue dispatches a PodCliqueSet.
		AddToScheme: []func(*runtime.Scheme) error{volcanov1beta1.AddToScheme, kueuev1beta2.AddToScheme},
		// What admission reads from the cache on every create: PodCliqueSets (name overlaps, the
		// authorizer's owners) and the runtimes TrainJobs name.
		Informers: []client.Object{&grovev1alpha1.PodCliqueSet{}, &trainerv1alpha1.TrainingRuntime{}, &trainerv1alpha1.ClusterTrainingRuntime{}}})
}

// setup serves every admission webhook through admissionmetrics, which counts and times each
// request (grove_admission_requests_total, grove_admission_duration_seconds): a webhook added to
// serve is metered without a line of its own.
func setup(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	return serve(admissionmetrics.Manager(mgr), cfg)
}

// serve registers the admission webhooks on mgr.
func serve(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	if cfg.Network.AutoMNNVLEnabled {
		if err := app.RequireComputeDomains(mgr); err != nil {
			return err
		}
	}
	registry, err := backends.Admitters(cfg.Scheduler)
	if err != nil {
		return err
	}
	if err := pcsadmission.SetupWithManager(mgr, cfg, registry); err != nil {
		return err
	}
	if err := topologyadmission.SetupWithManager(mgr, registry); err != nil {
		return err
	}
	if err := trainjobadmission.SetupWithManager(mgr, cfg); err != nil {
		return err
	}
	if err := resizeguard.SetupWithManager(mgr, cfg); err != nil {
		return err
	}
	return managedguard.SetupWithManager(mgr, cfg)
}
