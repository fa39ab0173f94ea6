package pcsadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

func queued(mutate func(*grovev1alpha1.PodCliqueSet)) *grovev1alpha1.PodCliqueSet {
	p := valid()
	p.Labels = map[string]string{grovev1alpha1.LabelKueueQueueName: "team-a"}
	mutate(p)
	return p
}

func queueLabel(c *grovev1alpha1.PodCliqueTemplateSpec, q string) {
	c.Labels = map[string]string{grovev1alpha1.LabelKueueQueueName: q}
}

func TestQueuedPodCliqueSetsAreRefusedWithTheLabelsPath(t *testing.T) {
	gangMode := registryOf(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{
		{Name: configv1alpha1.SchedulerNameKube, Config: &runtime.RawExtension{Raw: []byte(`{"gangScheduling":true}`)}},
	}})
	const pcsLabel = "metadata.labels[kueue.x-k8s.io/queue-name]"
	none := func(*grovev1alpha1.PodCliqueSet) {}
	cases := []struct {
		name     string
		pcs      *grovev1alpha1.PodCliqueSet
		enabled  bool
		registry *backends.Registry[backends.Admitter]
		want     []string
	}{
		{"not queued, integration off", valid(), false, kubeOnly, nil},
		{"queued on the PodCliqueSet", queued(none), true, kubeOnly, nil},
		{"queued on the clique templates alike", func() *grovev1alpha1.PodCliqueSet {
			p := valid()
			for _, c := range p.Spec.Template.Cliques {
				queueLabel(c, "team-a")
			}
			return p
		}(), true, kubeOnly, nil},
		{"the integration is off", queued(none), false, kubeOnly, []string{pcsLabel}},
		{"a clique naming another queue", queued(func(p *grovev1alpha1.PodCliqueSet) { queueLabel(p.Spec.Template.Cliques[2], "team-b") }), true, kubeOnly,
			[]string{"spec.template.cliques[2].labels[kueue.x-k8s.io/queue-name]"}},
		{"an empty queue", queued(func(p *grovev1alpha1.PodCliqueSet) { p.Labels[grovev1alpha1.LabelKueueQueueName] = "" }), true, kubeOnly, []string{pcsLabel}},
		{"a queue name that is no LocalQueue name", queued(func(p *grovev1alpha1.PodCliqueSet) { p.Labels[grovev1alpha1.LabelKueueQueueName] = "Team_A" }), true, kubeOnly, []string{pcsLabel}},
		{"kube-scheduler in gang mode", queued(none), true, gangMode, []string{pcsLabel}},
		{"the KAI backend", queued(none), true, kaiDefault(), []string{pcsLabel}},
		{"a base gang of more than eight pod groups", queued(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](4) // 1 router + 4 × 2
		}), true, kubeOnly, []string{pcsLabel}},
		{"scaled gangs beyond minAvailable queue on their own", queued(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](10)
		}), true, kubeOnly, nil},
		{"admitted through its owning TrainJob: no per-gang rule applies", queued(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.QueueAdmission = grovev1alpha1.QueueAdmissionOwner
			p.OwnerReferences = trainJobOwner
		}), false, gangMode, nil},
		{"admitted through an owner but not queued", withOwnerAdmission(valid(), trainJobOwner), true, kubeOnly, []string{queueAdmissionPath}},
		{"admitted through an owner it does not have", queued(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.QueueAdmission = grovev1alpha1.QueueAdmissionOwner
		}), true, kubeOnly, []string{queueAdmissionPath}},
		{"admitted through an owner with a bad queue name", queued(func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.QueueAdmission = grovev1alpha1.QueueAdmissionOwner
			p.OwnerReferences = trainJobOwner
			p.Labels[grovev1alpha1.LabelKueueQueueName] = "Team_A"
		}), true, kubeOnly, []string{pcsLabel}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range validateQueueCreate(tc.pcs, tc.enabled, tc.registry) {
				got = append(got, e.Field)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

const queueAdmissionPath = "spec.queueAdmission"

var trainJobOwner = []metav1.OwnerReference{{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: "tj", UID: "u1", Controller: ptr.To(true)}}

func withOwnerAdmission(p *grovev1alpha1.PodCliqueSet, owners []metav1.OwnerReference) *grovev1alpha1.PodCliqueSet {
	p.Spec.QueueAdmission = grovev1alpha1.QueueAdmissionOwner
	p.OwnerReferences = owners
	return p
}

func TestWhoHoldsTheQueuesAdmissionIsImmutable(t *testing.T) {
	old := queued(func(p *grovev1alpha1.PodCliqueSet) { withOwnerAdmission(p, trainJobOwner) })
	perGang := old.DeepCopy()
	perGang.Spec.QueueAdmission = grovev1alpha1.QueueAdmissionPerGang
	errs := validateQueueUpdate(old, perGang)
	if assert.Len(t, errs, 1) {
		assert.Equal(t, queueAdmissionPath, errs[0].Field)
		assert.Contains(t, errs[0].Detail, "immutable")
	}
	same := old.DeepCopy()
	same.Spec.Replicas = 2
	assert.Empty(t, validateQueueUpdate(old, same))
}

func TestTheQueueIsImmutable(t *testing.T) {
	old := queued(func(*grovev1alpha1.PodCliqueSet) {})
	same := old.DeepCopy()
	same.Spec.Replicas = 3
	assert.Empty(t, validateQueueUpdate(old, same), "other changes pass")

	moved := old.DeepCopy()
	moved.Labels[grovev1alpha1.LabelKueueQueueName] = "team-b"
	errs := validateQueueUpdate(old, moved)
	if assert.Len(t, errs, 1) {
		assert.Equal(t, "metadata.labels[kueue.x-k8s.io/queue-name]", errs[0].Field)
		assert.Contains(t, errs[0].Detail, "immutable")
	}

	dropped := old.DeepCopy()
	delete(dropped.Labels, grovev1alpha1.LabelKueueQueueName)
	assert.Len(t, validateQueueUpdate(old, dropped), 1, "leaving the queue is a change too")
}
