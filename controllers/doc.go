// Package controllers is the root of the reconcilers, one folder per binary that runs them; a
// binary's packages never import another binary's (layout_test checks it, with the rules for
// webhooks/, backends/ and internal/).
//
//   - operator/ (grove-operator): the reconcilers podcliqueset, podclique and
//     podcliquescalinggroup; what they share — children (the objects derived from a PodCliqueSet),
//     coherent (the plan of a Coherent update), gangtermination, fieldindex (its cache indexes);
//     statemetrics (gauges read from the cache at scrape); internal/ (cache expectations, status
//     pacing, batched creates, resource claims).
//   - backend/ (backend-controller): podgang (a backend's objects and SchedulerBackendReady),
//     topologybinding (a backend's own topology objects), kueueworkload (queued gangs' Kueue
//     Workloads), fieldindex.
//   - trainer/ (trainer-controller): trainjob (the reconciler), plan (runtime → pod templates),
//     tojobset and topodcliqueset (the two workloads a TrainJob becomes), statusserver (training
//     progress posted by trainer pods), fieldindex.
package controllers
