// Package controllers is the root of the reconcilers. Each binary owns its own subpackages
// (podcliqueset, podclique, podcliquescalinggroup for grove-operator; podgang for
// backend-controller; trainjob for trainer-controller) and never imports another binary's.
package controllers
