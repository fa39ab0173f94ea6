// Package backends is the scheduler backend framework (GREP-375): one subpackage per scheduler —
// kube (kube-scheduler, plain or Workload API gangs), kai (KAI), plugins (scheduler-plugins
// coscheduling), volcano, passthrough (upstream's lpx-scheduler and External profiles) — each
// implementing one interface per binary that calls it (backend.go), and a registry of each
// binary's share built from the OperatorConfiguration's scheduler profiles (registry.go).
// What is not a scheduler lives elsewhere: internal/contract/kueuegang (a queued gang on Kueue),
// internal/contract/topologyconstraints (what a PodCliqueSet asks of a scheduler's topology),
// internal/app/servedapis and internal/contract/volcanoqueue.
package backends
