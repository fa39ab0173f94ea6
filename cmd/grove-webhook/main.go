// Command grove-webhook serves defaulting and validation for the grove.io and
// trainer.kubeflow.org kinds. It holds no state, so any number of replicas may run.
package main

import (
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/internal/app"
	"github.com/kubegrove/grove/webhooks/authorizer"
	"github.com/kubegrove/grove/webhooks/podcliqueset"
	"github.com/kubegrove/grove/webhooks/trainingchildren"
	"github.com/kubegrove/grove/webhooks/trainjob"
)

func main() {
	app.Main(app.Options{Name: "grove-webhook", WebhookServer: true, Setup: setup})
}

func setup(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	if err := podcliqueset.SetupWithManager(mgr, cfg); err != nil {
		return err
	}
	if err := trainjob.SetupWithManager(mgr, cfg); err != nil {
		return err
	}
	if err := trainingchildren.SetupWithManager(mgr, cfg); err != nil {
		return err
	}
	return authorizer.SetupWithManager(mgr, cfg)
}
