// Command backend-controller syncs the PodGangs of one scheduler backend (--backend) into that
// scheduler's own objects and reports back in the PodGang's status. Run one Deployment per
// enabled backend.
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/backend/fieldindex"
	"github.com/kubegrove/grove/controllers/backend/kueueworkload"
	"github.com/kubegrove/grove/controllers/backend/podgang"
	"github.com/kubegrove/grove/internal/app"
	"github.com/kubegrove/grove/internal/app/servedapis"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
)

// Leader election holds a Lease in the binary's namespace and reports changes as events.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=grove-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// Nothing is created in a namespace being deleted (the API server would refuse it), as a
// metadata-only informer of namespaces tells.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Secure metrics (server.metrics.secure, as deployed) check each scraper's token and permission
// with the API server.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	backend := flag.String("backend", "", fmt.Sprintf("the scheduler backend to sync, one of %v, enabled in the configuration", configv1alpha1.SupportedSchedulerNames))
	app.Main(app.Options{
		Name:           "backend-controller",
		LeaderElection: true,
		LeaseName:      func() string { return "grove-backend-controller-" + *backend + "-leader" },
		AddToScheme:    []func(*runtime.Scheme) error{kaiv2alpha2.AddToScheme, kaiv1alpha1.AddToScheme, schedv1alpha1.AddToScheme, volcanov1beta1.AddToScheme, kueuev1beta2.AddToScheme},
		Validate: func(cfg *configv1alpha1.OperatorConfiguration) error {
			if name := configv1alpha1.SchedulerName(*backend); !cfg.Scheduler.IsEnabled(name) {
				return fmt.Errorf("--backend=%q is not an enabled scheduler backend; enabled: %v (enable one with a scheduler.profiles entry)", *backend, cfg.Scheduler.EnabledBackends())
			}
			return nil
		},
		Setup: func(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
			registry, err := backends.Syncers(cfg.Scheduler, mgr.GetClient())
			if err != nil {
				return err
			}
			b := registry.Get(configv1alpha1.SchedulerName(*backend))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := b.Init(ctx); err != nil {
				return fmt.Errorf("initializing the %s backend: %w", b.Name(), err)
			}
			_, keepsTopology := b.(backends.TopologySyncer)
			if err := fieldindex.Setup(context.Background(), mgr.GetFieldIndexer(), keepsTopology); err != nil {
				return err
			}
			r := &podgang.Reconciler{Client: mgr.GetClient(), Backend: b}
			if err := r.SetupWithManager(mgr, *cfg.Controllers.PodGang.ConcurrentSyncs); err != nil {
				return err
			}
			if !cfg.Kueue.Enabled {
				return nil
			}
			// Queued gangs of this backend get their Kueue Workloads from this instance.
			if err := servedapis.Check(mgr.GetRESTMapper(), "kueue.enabled is on: install Kueue (its CRDs), or turn the integration off",
				kueuegang.WorkloadGVK, kueuev1beta2.SchemeGroupVersion.WithKind("LocalQueue")); err != nil {
				return err
			}
			return (&kueueworkload.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Backend: string(b.Name()),
				Recorder: mgr.GetEventRecorder("backend-controller")}).SetupWithManager(mgr, *cfg.Controllers.PodGang.ConcurrentSyncs)
		},
	})
}
