// Command trainer-controller turns TrainJobs into PodCliqueSets or JobSets and enforces their
// deadlines and TTLs.
package main

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/trainjob"
	"github.com/kubegrove/grove/internal/app"
)

// Leader election holds a Lease in the binary's namespace and reports changes as events.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=grove-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Secure metrics (server.metrics.secure, as deployed) check each scraper's token and permission
// with the API server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	app.Main(app.Options{
		Name:           "trainer-controller",
		LeaderElection: true,
		AddToScheme:    []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme},
		Cache:          cacheOptions(),
		Setup:          setup,
	})
}

// cacheOptions keep only TrainJobs' own ConfigMaps, PodCliqueSets and PodCliques in memory: a
// cluster's other ConfigMaps and inference workloads are none of this binary's business.
func cacheOptions() cache.Options {
	req, err := labels.NewRequirement(trainerv1alpha1.LabelTrainJobName, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	ours := cache.ByObject{Label: labels.NewSelector().Add(*req)}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}:           ours,
		&grovev1alpha1.PodCliqueSet{}: ours,
		&grovev1alpha1.PodClique{}:    ours,
	}}
}

func setup(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	return (&trainjob.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("trainer-controller")}).
		SetupWithManager(mgr, *cfg.Controllers.TrainJob.ConcurrentSyncs)
}
