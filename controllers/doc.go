// Package controllers is the root of the reconcilers, one folder per binary that runs them:
// operator/ (grove-operator: podcliqueset, podclique, podcliquescalinggroup), backend/
// (backend-controller: podgang, topologybinding) and trainer/ (trainer-controller: trainjob and
// the builders of its workloads). A binary's packages never import another binary's; layout_test
// checks it.
package controllers
