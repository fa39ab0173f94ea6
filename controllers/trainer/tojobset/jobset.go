// Package tojobset builds the JobSet a TrainJob becomes on the JobSet path, as Kubeflow Trainer
// v2.3 builds it: the runtime's JobSet template with the TrainJob's overrides and ML framework
// applied (package template), addressed by JobSet's DNS hostnames, plus the coscheduling or
// Volcano PodGroup when the runtime asks for gang scheduling.
package tojobset

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
)

// Build returns the JobSet of a TrainJob and the objects to apply before it (the MPI Secret and
// hostfile ConfigMap, Flux's, the coscheduling or Volcano PodGroup, the status server's CA
// ConfigMap when opts has a status server), without owner references.
//
// The JobSet is named after the TrainJob and carries the runtime template's labels and
// annotations (with the runtime patches'); its replicated jobs are the plan's. Its network
// keeps the template's settings, with DNS hostnames on and the subdomain defaulting to the
// TrainJob's name, which is what the framework's addresses assume.
func Build(tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, suspend bool, opts plan.Options) (*jobsetv1alpha2.JobSet, []client.Object, error) {
	p, err := plan.NewPlan(tj, rt)
	if err != nil {
		return nil, nil, err
	}
	spec := &p.Template.Spec
	if spec.Network == nil {
		spec.Network = &jobsetv1alpha2.Network{}
	}
	if spec.Network.EnableDNSHostnames == nil {
		spec.Network.EnableDNSHostnames = ptr.To(true)
	}
	spec.Network.Subdomain = subdomain(tj, spec)

	objs, err := plan.ApplyFramework(tj, rt, p, Network(tj, spec))
	if err != nil {
		return nil, nil, err
	}
	if cm := plan.ApplyStatusServer(tj, p, opts.StatusServer); cm != nil {
		objs = append(objs, cm)
	}
	if pg := podGroup(tj, rt, p); pg != nil {
		objs = append(objs, pg)
	}
	spec.Suspend = ptr.To(suspend)

	js := &jobsetv1alpha2.JobSet{
		TypeMeta: metav1.TypeMeta{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        tj.Name,
			Namespace:   tj.Namespace,
			Labels:      p.Template.Labels,
			Annotations: p.Template.Annotations,
		},
		Spec: *spec,
	}
	return js, objs, nil
}

// Network addresses the pods of a TrainJob's JobSet by their DNS hostnames,
// `<trainjob>-<job>-<jobIndex>-<podIndex>.<subdomain>` (the job index is 0 unless the replicated
// job has several replicas), and gives a node its rank from its Job completion index.
func Network(tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSetSpec) plan.Network {
	sub := subdomain(tj, js)
	perJob := map[string]int{}
	for _, rj := range js.ReplicatedJobs {
		perJob[rj.Name] = int(max(ptr.Deref(rj.Template.Spec.Parallelism, 1), 1))
	}
	return plan.Network{
		Hostname: func(job string, index int) string {
			pods := max(perJob[job], 1)
			return fmt.Sprintf("%s-%s-%d-%d", tj.Name, job, index/pods, index%pods)
		},
		Subdomain:     sub,
		RankFieldPath: plan.JobCompletionIndexFieldPath,
	}
}

// subdomain is the template's network subdomain, else the TrainJob's name.
func subdomain(tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSetSpec) string {
	if js.Network != nil && js.Network.Subdomain != "" {
		return js.Network.Subdomain
	}
	return tj.Name
}
