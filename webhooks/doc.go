// Package webhooks is the root of the admission handlers served by grove-webhook: defaulting and
// validation of the grove.io and trainer.kubeflow.org kinds, stateless so any replica answers.
package webhooks
