package podcliqueset

import (
	"context"
	"errors"
	"maps"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/log"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/expand"
	"github.com/kubegrove/grove/internal/terminating"
)

// syncReplica converges one PodCliqueSet replica: Service, standalone PodCliques, scaling groups
// and PodGangs. Each child is written only when it is missing or differs from what is wanted.
//
// allowUpdate is false while a rolling update has not reached this replica: existing children
// then keep their template, and only missing ones are created.
func (r *Reconciler) syncReplica(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, replica int, obs *observed, allowUpdate bool) error {
	// The children are independent: written in parallel, a new replica costs one round trip to the
	// API server instead of one per child. The PodGangs are among them so the backend-controller
	// can acknowledge them while the pods are being created, and the pods be born schedulable.
	steps := []func() error{
		func() error { return r.syncPodGangs(ctx, pcs, replica, obs) },
		func() error { return r.syncService(ctx, pcs, replica, obs) },
	}
	for _, tmpl := range standaloneCliques(pcs) {
		steps = append(steps, func() error {
			want := expand.PodClique(pcs, replica, tmpl, nil, grovev1alpha1.BasePodGangName(pcs.Name, replica))
			return r.syncPodClique(ctx, pcs, want, tmpl.Spec.ScaleConfig != nil, allowUpdate, obs)
		})
	}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		steps = append(steps, func() error {
			return r.syncGroup(ctx, pcs, replica, &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i], allowUpdate, obs)
		})
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Go(func() { errs[i] = step() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// wantService is a replica's headless Service: one DNS name per pod of the replica.
func wantService(pcs *grovev1alpha1.PodCliqueSet, replica int) *corev1.Service {
	publish := true
	if c := pcs.Spec.Template.HeadlessServiceConfig; c != nil {
		publish = c.PublishNotReadyAddresses
	}
	labels := expand.ReplicaLabels(pcs.Name, replica)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: grovev1alpha1.HeadlessServiceName(pcs.Name, replica), Namespace: pcs.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 maps.Clone(labels),
			PublishNotReadyAddresses: publish,
		},
	}
}

func standaloneCliques(pcs *grovev1alpha1.PodCliqueSet) []*grovev1alpha1.PodCliqueTemplateSpec {
	var out []*grovev1alpha1.PodCliqueTemplateSpec
	for _, c := range pcs.Spec.Template.Cliques {
		if expand.GroupOf(pcs, c.Name) == nil {
			out = append(out, c)
		}
	}
	return out
}

func (r *Reconciler) syncService(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, replica int, obs *observed) error {
	want := wantService(pcs, replica)
	publish, labels := want.Spec.PublishNotReadyAddresses, want.Spec.Selector
	have := obs.services[want.Name]
	if have == nil {
		setOwner(pcs, want)
		return r.create(ctx, pcs, want, obs)
	}
	if have.Spec.PublishNotReadyAddresses == publish && equality.Semantic.DeepEqual(have.Spec.Selector, labels) {
		return nil
	}
	updated := have.DeepCopy()
	updated.Spec.PublishNotReadyAddresses, updated.Spec.Selector = publish, labels
	return r.update(ctx, updated)
}

// syncPodClique creates or updates a standalone PodClique. An autoscaled clique's replicas
// belong to its autoscaler once created.
func (r *Reconciler) syncPodClique(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, want *grovev1alpha1.PodClique, autoscaled, allowUpdate bool, obs *observed) error {
	have := obs.cliques[want.Name]
	if have == nil {
		if n, ok := scaledReplicasFor(pcs, want); ok {
			want.Spec.Replicas = n // recreated after gang termination at the count it was scaled to
		}
		setOwner(pcs, want)
		return r.create(ctx, pcs, want, obs)
	}
	if !allowUpdate {
		return nil
	}
	want.Spec.Replicas = keepScaledReplicas(want.Spec.Replicas, have.Spec.Replicas, have.Spec.TemplateReplicas, autoscaled)
	if updated, changed := expand.Updated(have, want, func(d, s *grovev1alpha1.PodClique) { d.Spec = s.Spec }); changed {
		return r.update(ctx, updated)
	}
	return nil
}

func (r *Reconciler) syncGroup(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, replica int, g *grovev1alpha1.PodCliqueScalingGroupConfig, allowUpdate bool, obs *observed) error {
	want := wantGroup(pcs, replica, g)
	have := obs.groups[want.Name]
	if have == nil {
		setOwner(pcs, want)
		return r.create(ctx, pcs, want, obs)
	}
	if !allowUpdate {
		return nil
	}
	want.Spec.Replicas = keepScaledReplicas(want.Spec.Replicas, have.Spec.Replicas, have.Spec.TemplateReplicas, g.ScaleConfig != nil)
	if updated, changed := expand.Updated(have, want, func(d, s *grovev1alpha1.PodCliqueScalingGroup) { d.Spec = s.Spec }); changed {
		return r.update(ctx, updated)
	}
	return nil
}

// wantGroup is a replica's PodCliqueScalingGroup for the scaling group g at its template's size.
func wantGroup(pcs *grovev1alpha1.PodCliqueSet, replica int, g *grovev1alpha1.PodCliqueScalingGroupConfig) *grovev1alpha1.PodCliqueScalingGroup {
	labels := expand.ReplicaLabels(pcs.Name, replica)
	labels[grovev1alpha1.LabelPodCliqueScalingGroup] = grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replica, g.Name)
	want := &grovev1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Name: labels[grovev1alpha1.LabelPodCliqueScalingGroup], Namespace: pcs.Namespace, Labels: labels, Annotations: maps.Clone(g.Annotations)},
		Spec: grovev1alpha1.PodCliqueScalingGroupSpec{
			Replicas:         expand.GroupReplicas(g),
			MinAvailable:     ptr.To(expand.GroupMinAvailable(g)),
			CliqueNames:      g.CliqueNames,
			TerminationDelay: g.TerminationDelay,
			// The PodCliqueScalingGroup reconciler applies the template to its PodCliques only once
			// the rollout has moved the generation hash onto the group.
			InheritedSpec: expand.Inherited(pcs, expand.GroupReplicas(g)),
		},
	}
	want.Spec.RollingUpdate = g.RollingUpdate.DeepCopy()
	if want.Spec.TerminationDelay == nil {
		want.Spec.TerminationDelay = pcs.Spec.Template.TerminationDelay
	}
	return want
}

// create creates a child; one that already exists is fine (the cache was behind). obs, when
// given, counts the creations: their events bring another pass.
func (r *Reconciler) create(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obj client.Object, obs *observed) error {
	key := kindOf(obj) + "/" + obj.GetName()
	if obs != nil && obs.collided[key] {
		return nil // another owner holds the name: reported in status, never taken over
	}
	if obs != nil && obs.unseen.Has(key) {
		return nil // created by an earlier pass; the cache does not show it yet
	}
	if terminating.Namespace(ctx, r.Client, obj.GetNamespace()) {
		return nil // the namespace controller is removing everything here; a create is refused
	}
	err := r.Client.Create(ctx, obj)
	if terminating.Refused(err) {
		log.FromContext(ctx).V(1).Info("namespace is being deleted: not created", "kind", kindOf(obj), "name", obj.GetName())
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		// Not in this pass's view: either the cache is behind on our own creation, or another
		// owner took the name since; the next pass's findCollisions tells which.
		log.FromContext(ctx).V(1).Info("already exists", "kind", kindOf(obj), "name", obj.GetName())
		return nil
	}
	if err == nil {
		log.FromContext(ctx).Info("created", "kind", kindOf(obj), "name", obj.GetName())
		if obs != nil {
			obs.created.Add(1)
			r.expectations.Expect(pcs.UID, key)
		}
	}
	if err != nil {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "CreateFailed", "Create", "creating %T %s: %v", obj, obj.GetName(), err)
	}
	return err
}

// keepScaledReplicas decides a child's replicas: an autoscaled child keeps what its autoscaler
// chose; otherwise the template wins only when the template's value changed since it was last
// applied (the child's spec.templateReplicas), so `kubectl scale` on the child sticks until the
// template is edited.
func keepScaledReplicas(template, current int32, applied *int32, autoscaled bool) int32 {
	if autoscaled || (applied != nil && *applied == template) {
		return current
	}
	return template
}

// update writes a child brought back to what the PodCliqueSet wants.
func (r *Reconciler) update(ctx context.Context, obj client.Object) error {
	if err := r.Client.Update(ctx, obj); err != nil {
		return err
	}
	log.FromContext(ctx).Info("updated to the template", "kind", kindOf(obj), "name", obj.GetName())
	return nil
}
