// Command trainer-controller turns TrainJobs into PodCliqueSets or JobSets and enforces their
// deadlines and TTLs.
package main

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/fieldindex"
	"github.com/kubegrove/grove/controllers/trainer/statusserver"
	"github.com/kubegrove/grove/controllers/trainer/trainjob"
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
	if err := fieldindex.Setup(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r := &trainjob.Reconciler{Client: mgr.GetClient(), Recorder: terminating.Recorder(mgr.GetEventRecorder("trainer-controller"), mgr.GetClient()),
		Coscheduling: cfg.Scheduler.SchedulerPlugins(), ClusterName: cfg.Kueue.MultiKueue.ClusterName}
	if cfg.Server.TrainerStatus.Enabled {
		if err := addStatusServer(mgr, cfg); err != nil {
			return err
		}
		r.StatusServer = statusserver.Source(cfg)
	}
	return r.SetupWithManager(mgr, *cfg.Controllers.TrainJob.ConcurrentSyncs)
}

// The status server reviews each report's token and applies status.trainerStatus; with generated
// certificates it keeps its own CA and certificate in its own Secret in the binary's namespace.
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;update,namespace=grove-system

// addStatusServer serves Kubeflow Trainer's status endpoint on every replica
// (server.trainerStatus), with a client of its own rate limits so progress reports never slow
// the reconciler.
func addStatusServer(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	ts := cfg.Server.TrainerStatus
	var ready <-chan struct{}
	if cfg.CertManagement.Mode == configv1alpha1.CertManagementAuto {
		var err error
		ready, err = app.RotateServingCertificate(mgr, types.NamespacedName{Namespace: cfg.CertManagement.Namespace, Name: ts.SecretName},
			ts.ServerCertDir, "trainer-controller-status-ca", statusserver.DNSName(cfg))
		if err != nil {
			return err
		}
	}
	restCfg := rest.CopyConfig(mgr.GetConfig())
	restCfg.QPS, restCfg.Burst = ts.QPS, ts.Burst
	c, err := client.New(restCfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("trainer status server client: %w", err)
	}
	return mgr.Add(&statusserver.Server{
		Client:  c,
		Addr:    net.JoinHostPort(ts.BindAddress, strconv.Itoa(ts.Port)),
		CertDir: ts.ServerCertDir,
		Ready:   ready,
		Log:     ctrl.Log.WithName("trainer-status"),
	})
}
