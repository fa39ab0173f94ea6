// Command backend-controller syncs the PodGangs of one scheduler backend (--backend) into that
// scheduler's own objects and reports back in the PodGang's status. Run one Deployment per
// enabled backend.
package main

import (
	"flag"
	"fmt"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/internal/app"
)

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
			return nil
		},
	})
}
