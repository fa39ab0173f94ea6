// Package topodcliqueset builds the Training PodCliqueSet a TrainJob becomes when its runtime's
// workloadKind is PodCliqueSet: one clique per replicated job of the runtime template, started
// in the template's dependsOn order, gang-scheduled through the PodCliqueSet's backend (the
// volcano backend for a runtime whose podGroupPolicy is volcano).
package topodcliqueset

import (
	"fmt"
	"maps"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
)

// replica is the only PodCliqueSet replica: a TrainJob is one gang.
const replica = 0

// Build returns the PodCliqueSet of a TrainJob and the objects that must exist before it (MPI's
// Secret and hostfile, Flux's, the status server's CA ConfigMap), all without owner references.
func Build(tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, opts plan.Options) (*grovev1alpha1.PodCliqueSet, []client.Object, error) {
	p, err := plan.NewPlan(tj, rt)
	if err != nil {
		return nil, nil, err
	}
	extra, err := plan.ApplyFramework(tj, rt, p, Network(tj))
	if err != nil {
		return nil, nil, err
	}
	if cm := plan.ApplyStatusServer(tj, p, opts.StatusServer); cm != nil {
		extra = append(extra, cm)
	}
	cliques, priorityClass := cliquesOf(tj, p)
	pcs := &grovev1alpha1.PodCliqueSet{
		TypeMeta: metav1.TypeMeta{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: "PodCliqueSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        tj.Name,
			Namespace:   tj.Namespace,
			Labels:      pcsLabels(tj, p),
			Annotations: p.Template.Annotations,
		},
		Spec: grovev1alpha1.PodCliqueSetSpec{
			Replicas:       1,
			WorkloadType:   grovev1alpha1.WorkloadTypeTraining,
			TrainingSpec:   trainingSpec(tj, p),
			QueueAdmission: queueAdmission(tj),
			Template: grovev1alpha1.PodCliqueSetTemplateSpec{
				Cliques:               cliques,
				StartupType:           ptr.To(grovev1alpha1.CliqueStartupTypeExplicit),
				PriorityClassName:     priorityClass,
				HeadlessServiceConfig: &grovev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: publishNotReady(p)},
			},
		},
	}
	gangOnVolcano(rt, p, pcs)
	if err := gangOnCoscheduling(rt, pcs, opts.Coscheduling); err != nil {
		return nil, nil, err
	}
	for _, o := range extra {
		o.SetNamespace(tj.Namespace)
	}
	return pcs, extra, nil
}

// gangOnVolcano sends the gang to the volcano scheduler backend when the runtime's
// podGroupPolicy is volcano: every clique's pods name Volcano's scheduler (unless the template
// names one) and the queue of the template's scheduling.volcano.sh/queue-name annotation becomes
// the PodCliqueSet's scheduling.grove.io/volcano-queue. The backend then keeps one Volcano
// PodGroup per PodGang, as the JobSet path keeps one per TrainJob.
func gangOnVolcano(rt *plan.Runtime, p *plan.Plan, pcs *grovev1alpha1.PodCliqueSet) {
	if pgp := rt.Spec.PodGroupPolicy; pgp == nil || pgp.Volcano == nil {
		return
	}
	for _, c := range pcs.Spec.Template.Cliques {
		if c.Spec.PodSpec.SchedulerName == "" {
			c.Spec.PodSpec.SchedulerName = configv1alpha1.VolcanoPodSchedulerName
		}
	}
	if q, ok := p.Template.Annotations[volcanov1beta1.QueueNameAnnotationKey]; ok {
		pcs.Annotations = maps.Clone(pcs.Annotations)
		if pcs.Annotations == nil {
			pcs.Annotations = map[string]string{}
		}
		pcs.Annotations[grovev1alpha1.AnnotationVolcanoQueue] = q
	}
}

// gangOnCoscheduling sends the gang to the scheduler-plugins backend when the runtime's
// podGroupPolicy is coscheduling: every clique's pods name that backend's scheduler (unless the
// template names one), and the backend keeps one scheduler-plugins PodGroup per PodGang, as the
// JobSet path keeps one per TrainJob. The PodGroup's timeout is the backend's
// (scheduleTimeoutSeconds of its profile); admission refuses a runtime asking for another.
func gangOnCoscheduling(rt *plan.Runtime, pcs *grovev1alpha1.PodCliqueSet, cfg *configv1alpha1.SchedulerPluginsConfig) error {
	if pgp := rt.Spec.PodGroupPolicy; pgp == nil || pgp.Coscheduling == nil {
		return nil
	}
	if cfg == nil {
		return fmt.Errorf("%s %s: spec.podGroupPolicy.coscheduling needs the scheduler-plugins scheduler backend on the PodCliqueSet path, and it is not enabled", rt.Kind, rt.Name)
	}
	for _, c := range pcs.Spec.Template.Cliques {
		if c.Spec.PodSpec.SchedulerName == "" {
			c.Spec.PodSpec.SchedulerName = cfg.SchedulerName
		}
	}
	return nil
}

// Network addresses the pods of a TrainJob's PodCliqueSet: `<pclq>-<index>.<headless service>`,
// with a node's rank taken from its stable pod index.
func Network(tj *trainerv1alpha1.TrainJob) plan.Network {
	service := fmt.Sprintf("%s-%d", tj.Name, replica)
	return plan.Network{
		Hostname: func(job string, index int) string {
			return grovev1alpha1.PodHostname(grovev1alpha1.PodCliqueName(tj.Name, replica, job), index)
		},
		Subdomain:     service,
		RankFieldPath: fmt.Sprintf("metadata.labels['%s']", grovev1alpha1.LabelPodIndex),
	}
}

// pcsLabels carries the runtime template's and the TrainJob's labels, so queue and priority
// labels reach the PodCliqueSet's scheduler backend — but not MultiKueue's origin label of a
// worker's TrainJob copy: the PodCliqueSet is the trainer-controller's, not a copy MultiKueue
// made (MultiKueue would look for its Workload, and the operator would treat it as one).
func pcsLabels(tj *trainerv1alpha1.TrainJob, p *plan.Plan) map[string]string {
	labels := maps.Clone(p.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, tj.Labels)
	delete(labels, grovev1alpha1.LabelMultiKueueOrigin)
	labels[trainerv1alpha1.LabelTrainJobName] = tj.Name
	return labels
}

// queueAdmission says who holds Kueue's admission for the PodCliqueSet: a TrainJob that Kueue's
// TrainJob integration admits as a whole keeps it (its Workload holds the quota for every pod and
// this controller creates the PodCliqueSet only while Kueue lets the TrainJob run), so the gangs
// carry the queue without queueing again. A queued TrainJob that Kueue's TrainJob integration
// does not handle (no Kueue runtime patch) has its gangs queued one by one instead.
func queueAdmission(tj *trainerv1alpha1.TrainJob) grovev1alpha1.QueueAdmission {
	if tj.AdmittedByKueue() {
		return grovev1alpha1.QueueAdmissionOwner
	}
	return ""
}

// trainingSpec maps activeDeadlineSeconds to maxRuntime and the JobSet failure policy's
// maxRestarts to the gang's restart budget.
func trainingSpec(tj *trainerv1alpha1.TrainJob, p *plan.Plan) *grovev1alpha1.TrainingSpec {
	ts := &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](0)}
	if fp := p.Template.Spec.FailurePolicy; fp != nil {
		ts.MaxRestarts = ptr.To(fp.MaxRestarts)
	}
	if ads := tj.Spec.ActiveDeadlineSeconds; ads != nil {
		ts.MaxRuntime = &metav1.Duration{Duration: time.Duration(*ads) * time.Second}
	}
	if sp := p.Template.Spec.SuccessPolicy; sp != nil {
		// One clique per replicated job, named after it: JobSet's policy over replicated jobs
		// is the same policy over cliques (DeepSpeed and MLX succeed when the launcher does).
		ts.SuccessPolicy = &grovev1alpha1.TrainingSuccessPolicy{
			Operator:      grovev1alpha1.TrainingSuccessOperator(sp.Operator),
			TargetCliques: slices.Clone(sp.TargetReplicatedJobs),
		}
	}
	return ts
}

// publishNotReady is the template's network.publishNotReadyAddresses, JobSet's default (true)
// when unset: frameworks resolve their peers before those are ready.
func publishNotReady(p *plan.Plan) bool {
	if n := p.Template.Spec.Network; n != nil && n.PublishNotReadyAddresses != nil {
		return *n.PublishNotReadyAddresses
	}
	return true
}

// podsOf is the pod count of a replicated job: replicas × the Job's parallelism.
func podsOf(replicas int32, job *batchv1.JobSpec) int32 {
	parallelism := int32(1)
	if job.Parallelism != nil {
		parallelism = *job.Parallelism
	}
	return max(replicas, 1) * parallelism
}

// initializerJobs are the replicated jobs that prepare data or models for the trainer.
func initializerJobs(jobs []jobsetv1alpha2.ReplicatedJob) []string {
	var out []string
	for _, rj := range jobs {
		if slices.Contains([]string{plan.DatasetInitializer, plan.ModelInitializer}, rj.Name) {
			out = append(out, rj.Name)
		}
	}
	return out
}

// startsAfter maps a replicated job's dependsOn to startup order: status Ready waits for the
// parent's pods to be ready, status Complete for them to exit 0. The trainer node also waits for
// every initializer to complete, whether or not the runtime says so.
func startsAfter(rj *jobsetv1alpha2.ReplicatedJob, initializers []string) (ready, succeeded []string) {
	for _, d := range rj.DependsOn {
		if d.Status == jobsetv1alpha2.DependencyReady {
			ready = append(ready, d.Name)
		} else {
			succeeded = append(succeeded, d.Name)
		}
	}
	if rj.Name == plan.Node {
		for _, name := range initializers {
			if !slices.Contains(succeeded, name) && !slices.Contains(ready, name) {
				succeeded = append(succeeded, name)
			}
		}
	}
	return ready, succeeded
}

// cliquesOf makes one Training clique per replicated job of the plan (its pods never restart in
// place: a failure must reach the gang), waiting for the initializers it depends on, and returns
// them with the first priority class a pod names.
func cliquesOf(tj *trainerv1alpha1.TrainJob, p *plan.Plan) ([]*grovev1alpha1.PodCliqueTemplateSpec, string) {
	js := p.Template.Spec
	cliques := make([]*grovev1alpha1.PodCliqueTemplateSpec, 0, len(js.ReplicatedJobs))
	initializers := initializerJobs(js.ReplicatedJobs)
	var priorityClass string
	inOrder := js.StartupPolicy != nil && js.StartupPolicy.StartupPolicyOrder == jobsetv1alpha2.InOrder
	for i := range js.ReplicatedJobs {
		rj := &js.ReplicatedJobs[i]
		if inOrder && i > 0 {
			// JobSet's InOrder startup: each replicated job starts once the one listed before it
			// is ready (JobSet refuses InOrder beside dependsOn, so nothing is overridden).
			rj = rj.DeepCopy()
			rj.DependsOn = append(rj.DependsOn, jobsetv1alpha2.DependsOn{Name: js.ReplicatedJobs[i-1].Name, Status: jobsetv1alpha2.DependencyReady})
		}
		ready, succeeded := startsAfter(rj, initializers)
		pod := rj.Template.Spec.Template
		spec := *pod.Spec.DeepCopy()
		// A failed pod must surface as a failure so the gang restarts within the budget; an
		// in-place container restart (OnFailure) would hide it.
		spec.RestartPolicy = corev1.RestartPolicyNever
		if priorityClass == "" {
			priorityClass = spec.PriorityClassName
		}
		size := podsOf(rj.Replicas, &rj.Template.Spec)
		labels := maps.Clone(pod.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[trainerv1alpha1.LabelTrainJobName] = tj.Name
		cliques = append(cliques, &grovev1alpha1.PodCliqueTemplateSpec{
			Name:        rj.Name,
			Labels:      labels,
			Annotations: pod.Annotations,
			Spec: grovev1alpha1.PodCliqueSpec{
				RoleName:             rj.Name,
				Replicas:             size,
				MinAvailable:         ptr.To(size),
				StartsAfter:          ready,
				StartsAfterSucceeded: succeeded,
				PodSpec:              spec,
			},
		})
	}
	return cliques, priorityClass
}
