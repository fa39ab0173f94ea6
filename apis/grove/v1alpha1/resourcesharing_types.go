package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
)

// ResourceSharingScope says how many ResourceClaims one resourceSharing entry makes (upstream
// Grove's GREP-390, hierarchical resource sharing).
// +kubebuilder:validation:Enum=AllReplicas;PerReplica
type ResourceSharingScope string

const (
	// ResourceSharingScopeAllReplicas makes one ResourceClaim per instance of the owner
	// (PodCliqueSet, scaling group replica's group, PodClique), shared by all its pods.
	ResourceSharingScopeAllReplicas ResourceSharingScope = "AllReplicas"
	// ResourceSharingScopePerReplica makes one ResourceClaim per replica of the owner, shared by
	// the pods of that replica (for a PodClique: one per pod index).
	ResourceSharingScopePerReplica ResourceSharingScope = "PerReplica"
)

// ResourceClaimTemplateConfig is a named ResourceClaim template that resourceSharing entries at
// any level can name.
type ResourceClaimTemplateConfig struct {
	// Name identifies the template within the PodCliqueSet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// TemplateSpec is the spec of the ResourceClaims made from it.
	TemplateSpec resourcev1.ResourceClaimTemplateSpec `json:"templateSpec"`
}

// ResourceSharingSpec names a template and how widely its claims are shared. A PodClique's
// entries use it as is (a clique has no children to filter).
type ResourceSharingSpec struct {
	// Name of the template: one of spec.template.resourceClaimTemplates (which shadow others of
	// the same name), else a ResourceClaimTemplate object in Namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Namespace of an external ResourceClaimTemplate; empty means the PodCliqueSet's.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// Scope is AllReplicas (one claim for the owner) or PerReplica (one per owner replica).
	Scope ResourceSharingScope `json:"scope"`
}

// PCSResourceSharingSpec is a PodCliqueSet-level entry; its filter picks the cliques and scaling
// groups whose pods get the claims.
type PCSResourceSharingSpec struct {
	ResourceSharingSpec `json:",inline"`
	// Filter limits the claims to some children; absent means all.
	// +optional
	Filter *PCSResourceSharingFilter `json:"filter,omitempty"`
}

// PCSResourceSharingFilter names the children of a PodCliqueSet that get its claims.
type PCSResourceSharingFilter struct {
	// ChildCliqueNames are cliques of the template.
	// +optional
	// +listType=set
	ChildCliqueNames []string `json:"childCliqueNames,omitempty"`
	// ChildScalingGroupNames are scaling groups of the template.
	// +optional
	// +listType=set
	ChildScalingGroupNames []string `json:"childScalingGroupNames,omitempty"`
}

// PCSGResourceSharingSpec is a scaling-group-level entry; its filter picks member cliques.
type PCSGResourceSharingSpec struct {
	ResourceSharingSpec `json:",inline"`
	// Filter limits the claims to some member cliques; absent means all.
	// +optional
	Filter *PCSGResourceSharingFilter `json:"filter,omitempty"`
}

// PCSGResourceSharingFilter names the member cliques of a scaling group that get its claims.
type PCSGResourceSharingFilter struct {
	// ChildCliqueNames are member cliques of the scaling group.
	// +optional
	// +listType=set
	ChildCliqueNames []string `json:"childCliqueNames,omitempty"`
}

// Matches tells whether a PodCliqueSet-level entry reaches a clique (in scaling group group, ""
// when standalone): no filter reaches all; otherwise either name in either list, as upstream.
func (s *PCSResourceSharingSpec) Matches(clique, group string) bool {
	if s.Filter == nil {
		return true
	}
	for _, n := range []string{clique, group} {
		if n != "" && (slices.Contains(s.Filter.ChildCliqueNames, n) || slices.Contains(s.Filter.ChildScalingGroupNames, n)) {
			return true
		}
	}
	return false
}

// Matches tells whether a scaling-group entry reaches a member clique.
func (s *PCSGResourceSharingSpec) Matches(clique string) bool {
	return s.Filter == nil || slices.Contains(s.Filter.ChildCliqueNames, clique)
}

// ResourceClaimName is the name of the ResourceClaim an entry makes for owner (the PodCliqueSet,
// PodCliqueScalingGroup or PodClique name): <owner>-all-<template> for AllReplicas,
// <owner>-<replica>-<template> for PerReplica, as upstream Grove names them.
func ResourceClaimName(owner string, s ResourceSharingSpec, replica int) string {
	if s.Scope == ResourceSharingScopePerReplica {
		return fmt.Sprintf("%s-%d-%s", owner, replica, s.Name)
	}
	return fmt.Sprintf("%s-all-%s", owner, s.Name)
}

// PodResourceClaimName is the name a pod gives a claim in spec.resourceClaims (and its
// containers in resources.claims): the claim's own name when it is a DNS label, otherwise a
// shortened name with a hash of the full one, since pod claim names are limited to 63 characters.
func PodResourceClaimName(claim string) string {
	if len(claim) <= 63 {
		return claim
	}
	sum := sha256.Sum256([]byte(claim))
	return claim[:54] + "-" + hex.EncodeToString(sum[:])[:8]
}
