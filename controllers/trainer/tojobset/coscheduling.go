package tojobset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/kubegrove/grove/controllers/trainer/plan"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// DefaultScheduleTimeoutSeconds is the coscheduling timeout when the runtime leaves it unset
// (the API defaults it to the same value).
const DefaultScheduleTimeoutSeconds int32 = 60

// podGroup gang-schedules the JobSet with scheduler-plugins' coscheduling when the runtime's
// podGroupPolicy asks for it: every pod template is labelled with the PodGroup, named after the
// TrainJob, whose minMember is the pod count of all replicated jobs and whose minResources are
// each job's pod requests times its pod count. A job's pod count is its parallelism, as in
// Kubeflow Trainer v2.3. It returns nil, changing nothing, without coscheduling.
func podGroup(tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, spec *jobsetv1alpha2.JobSetSpec) *schedv1alpha1.PodGroup {
	policy := rt.Spec.PodGroupPolicy
	if policy == nil || policy.Coscheduling == nil {
		return nil
	}
	var members int32
	total := corev1.ResourceList{}
	for i := range spec.ReplicatedJobs {
		pod := &spec.ReplicatedJobs[i].Template.Spec.Template
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[schedv1alpha1.PodGroupLabel] = tj.Name

		count := ptr.Deref(spec.ReplicatedJobs[i].Template.Spec.Parallelism, 1)
		members += count
		for name, q := range resourcehelper.PodRequests(&corev1.Pod{Spec: pod.Spec}, resourcehelper.PodResourcesOptions{}) {
			q.Mul(int64(count))
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	pg := &schedv1alpha1.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace},
		Spec: schedv1alpha1.PodGroupSpec{
			MinMember:              members,
			ScheduleTimeoutSeconds: ptr.To(ptr.Deref(policy.Coscheduling.ScheduleTimeoutSeconds, DefaultScheduleTimeoutSeconds)),
		},
	}
	if len(total) > 0 {
		pg.Spec.MinResources = total
	}
	return pg
}
