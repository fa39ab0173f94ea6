// Command grove-webhook serves defaulting and validation for the grove.io and
// trainer.kubeflow.org kinds. It holds no state, so any number of replicas may run.
package main

import (
	"github.com/kubegrove/grove/internal/app"
	"github.com/kubegrove/grove/webhooks/podcliqueset"
)

func main() {
	app.Main(app.Options{Name: "grove-webhook", WebhookServer: true, Setup: podcliqueset.SetupWithManager})
}
