// Command grove-operator reconciles PodCliqueSets, PodCliques and PodCliqueScalingGroups into
// pods, Services and PodGangs.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/controllers/operator/podclique"
	"github.com/kubegrove/grove/controllers/operator/podcliquescalinggroup"
	"github.com/kubegrove/grove/controllers/operator/podcliqueset"
	"github.com/kubegrove/grove/controllers/operator/statemetrics"
	"github.com/kubegrove/grove/internal/app"
	"github.com/kubegrove/grove/internal/reconcile/terminating"
)

// Leader election holds a Lease in the binary's namespace and reports changes as events.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=grove-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Secure metrics (server.metrics.secure, as deployed) check each scraper's token and permission
// with the API server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Nothing is created in a namespace being deleted (internal/reconcile/terminating): a metadata-only
// informer of namespaces tells.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

func main() {
	app.Main(app.Options{Name: "grove-operator", LeaderElection: true, Setup: setup, Cache: cacheOptions()})
}

// cacheOptions keep only the operator's own pods and ResourceClaims in memory — a cluster's other pods (thousands,
// on a shared cluster) are none of its business — and of those only the fields it reads.
func cacheOptions() cache.Options {
	req, err := labels.NewRequirement(grovev1alpha1.LabelPodClique, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*req), Transform: podclique.SlimPod},
		// Only the claims of resource sharing, not every claim of the cluster.
		&resourcev1.ResourceClaim{}: {Label: labels.SelectorFromSet(labels.Set{grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue})},
	}}
}

func setup(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	if cfg.Network.AutoMNNVLEnabled {
		if err := app.RequireComputeDomains(mgr); err != nil {
			return err
		}
	}
	recorder := terminating.Recorder(mgr.GetEventRecorder("grove-operator"), mgr.GetClient())
	registry, err := backends.PodPreparers(cfg.Scheduler)
	if err != nil {
		return err
	}
	if err := fieldindex.Setup(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// The gauges of what is true now are read from this cache at scrape time (docs/metrics.md).
	if err := statemetrics.Setup(mgr); err != nil {
		return err
	}
	c := cfg.Controllers
	if err := (&podcliqueset.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Backends: registry,
		TopologyAwareScheduling: cfg.TopologyAwareScheduling.Enabled, AutoMNNVL: cfg.Network.AutoMNNVLEnabled,
		ClusterName: cfg.Kueue.MultiKueue.ClusterName}).SetupWithManager(mgr, *c.PodCliqueSet.ConcurrentSyncs); err != nil {
		return err
	}
	if err := (&podcliquescalinggroup.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder}).SetupWithManager(mgr, *c.PodCliqueScalingGroup.ConcurrentSyncs); err != nil {
		return err
	}
	return (&podclique.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder, Backends: registry,
		StartupWaitImage: cfg.StartupOrdering.WaitImage}).SetupWithManager(mgr, *c.PodClique.ConcurrentSyncs)
}
