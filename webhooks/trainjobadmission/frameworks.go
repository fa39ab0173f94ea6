package trainjobadmission

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// validateRuntimeFramework refuses what an ML policy cannot build: a Flux runtime whose node
// job already has an init container named flux-installer.
func validateRuntimeFramework(spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.MLPolicy == nil || spec.MLPolicy.Flux == nil {
		return nil
	}
	jobs := field.NewPath("spec", "template", "spec", "replicatedJobs")
	for i, rj := range spec.Template.Spec.ReplicatedJobs {
		if rj.Name != trainerv1alpha1.NodeName {
			continue
		}
		for j, c := range rj.Template.Spec.Template.Spec.InitContainers {
			if c.Name == trainerv1alpha1.FluxInstallerContainer {
				errs = append(errs, field.Forbidden(jobs.Index(i).Child("template", "spec", "template", "spec", "initContainers").Index(j).Child("name"),
					"flux-installer is reserved for the init container that installs Flux"))
			}
		}
	}
	return errs
}

// validateAgainstFramework checks a TrainJob against its runtime's ML policy. JAX runs one
// process per node and XGBoost one worker per GPU of a node (one on a node without GPUs), so a
// numProcPerNode asking for another count could never hold; XGBoost's collective variables are
// the runtime's to set.
func validateAgainstFramework(tj *trainerv1alpha1.TrainJob, spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	tr := tj.Spec.Trainer
	if tr == nil || spec.MLPolicy == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "trainer")
	switch mp := spec.MLPolicy; {
	case mp.JAX != nil:
		if tr.NumProcPerNode != nil && *tr.NumProcPerNode != 1 {
			errs = append(errs, field.Invalid(p.Child("numProcPerNode"), *tr.NumProcPerNode,
				"the JAX runtime runs one process per node (JAX_NUM_PROCESSES is numNodes); scale with numNodes"))
		}
	case mp.XGBoost != nil:
		res := trainerv1alpha1.NodeResources(&spec.Template.Spec)
		if tr.ResourcesPerNode != nil {
			res = *tr.ResourcesPerNode
		}
		workers := max(trainerv1alpha1.GPUsPerNode(res), 1)
		if tr.NumProcPerNode != nil && int(*tr.NumProcPerNode) != workers {
			errs = append(errs, field.Invalid(p.Child("numProcPerNode"), *tr.NumProcPerNode,
				fmt.Sprintf("the XGBoost runtime runs one worker per GPU of a node, one on a node without GPUs: %d here", workers)))
		}
		for i, e := range tr.Env {
			if slices.Contains(trainerv1alpha1.XGBoostReservedEnv, e.Name) {
				errs = append(errs, field.Forbidden(p.Child("env").Index(i).Child("name"), e.Name+" is set by the XGBoost runtime"))
			}
		}
	}
	return errs
}

// jobSetOnlyFields refuses the JobSet settings a PodCliqueSet cannot honour, each naming what
// to use instead; successPolicy, startupPolicy, failurePolicy.maxRestarts and
// network.publishNotReadyAddresses are mapped (docs/trainjob.md).
func jobSetOnlyFields(spec *jobsetv1alpha2.JobSetSpec, js *field.Path) field.ErrorList {
	var errs field.ErrorList
	useJobSet := "; use workloadKind JobSet"
	if spec.Coordinator != nil {
		errs = append(errs, field.Forbidden(js.Child("coordinator"), "PodCliqueSet pods get no coordinator label or annotation"+useJobSet))
	}
	if spec.ManagedBy != nil {
		errs = append(errs, field.Forbidden(js.Child("managedBy"), "the PodCliqueSet path is run by the grove-operator only"+useJobSet))
	}
	if fp := spec.FailurePolicy; fp != nil {
		if len(fp.Rules) > 0 {
			errs = append(errs, field.Forbidden(js.Child("failurePolicy", "rules"), "a PodCliqueSet restarts its gang on any failure, within maxRestarts"+useJobSet))
		}
		if fp.RestartStrategy != "" && fp.RestartStrategy != jobsetv1alpha2.Recreate {
			errs = append(errs, field.NotSupported(js.Child("failurePolicy", "restartStrategy"), fp.RestartStrategy, []jobsetv1alpha2.JobSetRestartStrategy{jobsetv1alpha2.Recreate}))
		}
	}
	if n := spec.Network; n != nil {
		if n.EnableDNSHostnames != nil && !*n.EnableDNSHostnames {
			errs = append(errs, field.Invalid(js.Child("network", "enableDNSHostnames"), false, "PodCliqueSet pods always have DNS names, and the frameworks' addresses use them"+useJobSet))
		}
		if n.Subdomain != "" {
			errs = append(errs, field.Forbidden(js.Child("network", "subdomain"), "PodCliqueSet pods are addressed through the PodCliqueSet's own headless Service"+useJobSet))
		}
	}
	for i, rj := range spec.ReplicatedJobs {
		errs = append(errs, jobOnlyFields(&rj.Template.Spec, js.Child("replicatedJobs").Index(i).Child("template", "spec"))...)
	}
	if sp := spec.SuccessPolicy; sp != nil && sp.Operator == jobsetv1alpha2.OperatorAny {
		// One clique holds every Job of a replicated job: it succeeds when all of them did, not one.
		for i, rj := range spec.ReplicatedJobs {
			if rj.Replicas > 1 && (len(sp.TargetReplicatedJobs) == 0 || slices.Contains(sp.TargetReplicatedJobs, rj.Name)) {
				errs = append(errs, field.Invalid(js.Child("replicatedJobs").Index(i).Child("replicas"), rj.Replicas,
					"successPolicy Any over a replicated job of several Jobs: its PodClique succeeds only when all of them did"+useJobSet))
			}
		}
	}
	return errs
}

// jobOnlyFields refuses the Job settings a PodClique cannot honour: its pods run once each (a
// failure restarts the gang, within maxRestarts, instead of the pod), all to completion.
func jobOnlyFields(job *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	gang := "; a PodCliqueSet restarts its gang on a failure (failurePolicy.maxRestarts) instead; use workloadKind JobSet"
	if job.BackoffLimit != nil && *job.BackoffLimit > 0 {
		errs = append(errs, field.Invalid(path.Child("backoffLimit"), *job.BackoffLimit, "PodClique pods are not retried one by one"+gang))
	}
	for name, set := range map[string]bool{
		"backoffLimitPerIndex": job.BackoffLimitPerIndex != nil, "maxFailedIndexes": job.MaxFailedIndexes != nil,
		"podFailurePolicy": job.PodFailurePolicy != nil, "podReplacementPolicy": job.PodReplacementPolicy != nil,
	} {
		if set {
			errs = append(errs, field.Forbidden(path.Child(name), "PodClique pods are not retried or replaced one by one"+gang))
		}
	}
	if job.SuccessPolicy != nil {
		errs = append(errs, field.Forbidden(path.Child("successPolicy"), "a clique succeeds when all its pods do; use the JobSet's successPolicy over replicated jobs, or workloadKind JobSet"))
	}
	if job.Completions != nil && job.Parallelism != nil && *job.Completions != *job.Parallelism {
		errs = append(errs, field.Invalid(path.Child("completions"), *job.Completions, fmt.Sprintf("must equal parallelism (%d) on the PodCliqueSet path: a clique runs its pods once each, all at once; use workloadKind JobSet", *job.Parallelism)))
	}
	sort.Slice(errs, func(a, b int) bool { return errs[a].Field < errs[b].Field })
	return errs
}

// jobMetadataPrefixes are the label and annotation prefixes only JobSet and Job pods carry.
var jobMetadataPrefixes = []string{"metadata.labels['jobset.sigs.k8s.io/", "metadata.annotations['jobset.sigs.k8s.io/",
	"metadata.labels['batch.kubernetes.io/", "metadata.annotations['batch.kubernetes.io/"}

// validatePodCliqueSetPath refuses what the PodCliqueSet path cannot build faithfully: JobSet's
// volumeClaimPolicies (a PodCliqueSet has no per-workload PersistentVolumeClaim templates) and a
// container reading a JobSet or Job label or annotation through the downward API (PodClique pods
// carry neither; the variable would be empty).
func validatePodCliqueSetPath(spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	if spec.WorkloadKind != trainerv1alpha1.WorkloadKindPodCliqueSet {
		return nil
	}
	var errs field.ErrorList
	js := field.NewPath("spec", "template", "spec")
	if len(spec.Template.Spec.VolumeClaimPolicies) > 0 {
		errs = append(errs, field.Forbidden(js.Child("volumeClaimPolicies"),
			"JobSet's volume claim templates have no PodCliqueSet equivalent; use workloadKind JobSet or pre-created PersistentVolumeClaims"))
	}
	errs = append(errs, jobSetOnlyFields(&spec.Template.Spec, js)...)
	for i, rj := range spec.Template.Spec.ReplicatedJobs {
		pod := js.Child("replicatedJobs").Index(i).Child("template", "spec", "template", "spec")
		for _, list := range []struct {
			name       string
			containers []corev1.Container
		}{{"initContainers", rj.Template.Spec.Template.Spec.InitContainers}, {"containers", rj.Template.Spec.Template.Spec.Containers}} {
			for j, c := range list.containers {
				for k, e := range c.Env {
					if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
						continue
					}
					for _, prefix := range jobMetadataPrefixes {
						if strings.HasPrefix(e.ValueFrom.FieldRef.FieldPath, prefix) {
							errs = append(errs, field.Invalid(pod.Child(list.name).Index(j).Child("env").Index(k).Child("valueFrom", "fieldRef", "fieldPath"),
								e.ValueFrom.FieldRef.FieldPath, "PodCliqueSet pods carry no JobSet or Job labels and annotations; use workloadKind JobSet"))
						}
					}
				}
			}
		}
	}
	return errs
}
