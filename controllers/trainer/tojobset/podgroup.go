package tojobset

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
)

// DefaultScheduleTimeoutSeconds is the coscheduling timeout when the runtime leaves it unset
// (the API defaults it to the same value).
const DefaultScheduleTimeoutSeconds int32 = 60

// podGroup gang-schedules the JobSet as the runtime's podGroupPolicy asks, with a PodGroup
// named after the TrainJob whose minMember is the pod count of all replicated jobs and whose
// minResources are each job's pod requests times its pod count (a job's pod count is its
// parallelism, as in Kubeflow Trainer v2.3):
//   - coscheduling: a scheduler-plugins PodGroup with the schedule timeout; every pod template
//     is labelled with it;
//   - volcano: a Volcano PodGroup in the queue the template's annotation
//     scheduling.volcano.sh/queue-name names (runtime patches included; Volcano's default queue
//     without one), with the last pod template's priority class and the policy's network
//     topology; every pod template is annotated scheduling.k8s.io/group-name.
//
// It returns nil, changing nothing, without a podGroupPolicy.
func podGroup(tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, p *plan.Plan) client.Object {
	policy := rt.Spec.PodGroupPolicy
	spec := &p.Template.Spec
	switch {
	case policy == nil:
		return nil
	case policy.Coscheduling != nil:
		members, total := gang(spec, func(pod *corev1.PodTemplateSpec) {
			pod.Labels = setKey(pod.Labels, schedv1alpha1.PodGroupLabel, tj.Name)
		})
		return &schedv1alpha1.PodGroup{
			TypeMeta:   metav1.TypeMeta{APIVersion: schedv1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
			ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace},
			Spec: schedv1alpha1.PodGroupSpec{
				MinMember:              members,
				MinResources:           total,
				ScheduleTimeoutSeconds: ptr.To(ptr.Deref(policy.Coscheduling.ScheduleTimeoutSeconds, DefaultScheduleTimeoutSeconds)),
			},
		}
	case policy.Volcano != nil:
		members, total := gang(spec, func(pod *corev1.PodTemplateSpec) {
			pod.Annotations = setKey(pod.Annotations, volcanov1beta1.KubeGroupNameAnnotationKey, tj.Name)
		})
		pg := &volcanov1beta1.PodGroup{
			TypeMeta:   metav1.TypeMeta{APIVersion: volcanov1beta1.SchemeGroupVersion.String(), Kind: "PodGroup"},
			ObjectMeta: metav1.ObjectMeta{Name: tj.Name, Namespace: tj.Namespace},
			Spec: volcanov1beta1.PodGroupSpec{
				MinMember:         members,
				Queue:             p.Template.Annotations[volcanov1beta1.QueueNameAnnotationKey],
				PriorityClassName: lastPriorityClass(spec),
			},
		}
		if total != nil {
			pg.Spec.MinResources = &total
		}
		if nt := policy.Volcano.NetworkTopology; nt != nil {
			pg.Spec.NetworkTopology = &volcanov1beta1.NetworkTopologySpec{
				Mode: volcanov1beta1.NetworkTopologyMode(nt.Mode), HighestTierAllowed: nt.HighestTierAllowed,
			}
		}
		return pg
	}
	return nil
}

// gang marks every pod template with mark and returns the pod count of all replicated jobs and
// what they request together, nil when nothing.
func gang(spec *jobsetv1alpha2.JobSetSpec, mark func(*corev1.PodTemplateSpec)) (int32, corev1.ResourceList) {
	var members int32
	total := corev1.ResourceList{}
	for i := range spec.ReplicatedJobs {
		pod := &spec.ReplicatedJobs[i].Template.Spec.Template
		mark(pod)
		count := ptr.Deref(spec.ReplicatedJobs[i].Template.Spec.Parallelism, 1)
		members += count
		for name, q := range resourcehelper.PodRequests(&corev1.Pod{Spec: pod.Spec}, resourcehelper.PodResourcesOptions{}) {
			q.Mul(int64(count))
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	if len(total) == 0 {
		return members, nil
	}
	return members, total
}

// lastPriorityClass is the priority class of the last pod template that names one: Kubeflow
// Trainer v2.3 gives the Volcano PodGroup that one.
func lastPriorityClass(spec *jobsetv1alpha2.JobSetSpec) string {
	var out string
	for _, rj := range spec.ReplicatedJobs {
		if pc := rj.Template.Spec.Template.Spec.PriorityClassName; pc != "" {
			out = pc
		}
	}
	return out
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
