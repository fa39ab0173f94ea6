// Package backends is the scheduler backend framework: one subpackage per scheduler
// (kube-scheduler, kai-scheduler, scheduler-plugins) behind one interface, and a registry built
// from the OperatorConfiguration's scheduler profiles.
package backends
