// Command backend-controller syncs the PodGangs of one scheduler backend (--backend) into that
// scheduler's own objects and reports back in the PodGang's status. Run one Deployment per
// enabled backend.
package main

import (
	"flag"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/backends/kube"
	"github.com/kubegrove/grove/controllers/podgang"
	"github.com/kubegrove/grove/internal/app"
)

// available are the backends this build can sync.
var available = map[configv1alpha1.SchedulerName]podgang.Backend{
	configv1alpha1.SchedulerNameKube: kube.Backend{},
}

func main() {
	backend := flag.String("backend", "", fmt.Sprintf("the scheduler backend to sync, one of %v, enabled in the configuration", configv1alpha1.SupportedSchedulerNames))
	app.Main(app.Options{
		Name:           "backend-controller",
		LeaderElection: true,
		LeaseName:      func() string { return "grove-backend-controller-" + *backend + "-leader" },
		Validate: func(cfg *configv1alpha1.OperatorConfiguration) error {
			name := configv1alpha1.SchedulerName(*backend)
			if !cfg.Scheduler.IsEnabled(name) {
				return fmt.Errorf("--backend=%q is not an enabled scheduler backend; enabled: %v (enable one with a scheduler.profiles entry)", *backend, cfg.Scheduler.EnabledBackends())
			}
			if available[name] == nil {
				return fmt.Errorf("--backend=%q cannot be synced by this build yet", *backend)
			}
			return nil
		},
		Setup: func(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
			r := &podgang.Reconciler{Client: mgr.GetClient(), Backend: available[configv1alpha1.SchedulerName(*backend)]}
			return r.SetupWithManager(mgr, *cfg.Controllers.PodGang.ConcurrentSyncs)
		},
	})
}
