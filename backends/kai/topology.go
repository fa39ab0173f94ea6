package kai

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// TopologyReference is the KAI Topology a binding's schedulerTopologyBindings name for
// kai-scheduler: someone else's, which the backend only checks. Empty when there is none.
func TopologyReference(ct *grovev1alpha1.ClusterTopologyBinding) string {
	for _, s := range ct.Spec.SchedulerTopologyBindings {
		if s.SchedulerName == string(configv1alpha1.SchedulerNameKAI) {
			return s.TopologyReference
		}
	}
	return ""
}

// TopologyName is the KAI Topology that PodGroups of a binding name: the binding's reference
// for kai-scheduler when it has one, else the Topology the backend keeps, named after the binding.
func TopologyName(ct *grovev1alpha1.ClusterTopologyBinding) string {
	if ref := TopologyReference(ct); ref != "" {
		return ref
	}
	return ct.Name
}

// BuildTopology is the KAI Topology the backend keeps for a binding without a reference: named
// after it, one level per binding level in order, the node label its key and the alias its
// domain. An alias equal to any level's node label is left out: KAI forbids that collision.
func BuildTopology(ct *grovev1alpha1.ClusterTopologyBinding) *kaiv1alpha1.Topology {
	keys := bindingKeys(ct)
	t := &kaiv1alpha1.Topology{}
	t.Name = ct.Name
	t.Labels = map[string]string{grovev1alpha1.LabelManagedBy: "backend-controller"}
	for _, l := range ct.Spec.Levels {
		level := kaiv1alpha1.TopologyLevel{NodeLabel: l.Key}
		if alias := string(l.Domain); !slices.Contains(keys, alias) {
			level.Alias = alias
		}
		t.Spec.Levels = append(t.Spec.Levels, level)
	}
	return t
}

// SyncTopology keeps the binding's KAI Topology: without a kai-scheduler reference it creates
// the Topology named after the binding, owned by it, and replaces it when the node labels
// change (KAI forbids editing them; aliases are updated in place). With a reference it only
// compares that Topology's node labels with the binding's keys and never writes it, and deletes
// the Topology it kept for the binding before, if any.
func (b *Backend) SyncTopology(ctx context.Context, ct *grovev1alpha1.ClusterTopologyBinding) (grovev1alpha1.SchedulerTopologyStatus, error) {
	st := grovev1alpha1.SchedulerTopologyStatus{SchedulerName: string(b.Name())}
	if ref := TopologyReference(ct); ref != "" {
		return b.compareReferenced(ctx, ct, ref, st)
	}
	st.TopologyReference = ct.Name
	want := BuildTopology(ct)
	have := &kaiv1alpha1.Topology{}
	if err := b.client.Get(ctx, client.ObjectKey{Name: want.Name}, have); err != nil {
		if !apierrors.IsNotFound(err) {
			return st, fmt.Errorf("KAI Topology %s: %w", want.Name, err)
		}
		return b.createTopology(ctx, ct, want, st)
	}
	if orphanOf(have, ct) {
		// Kept for a deleted binding of the same name: replace it rather than wait for the
		// garbage collector.
		if err := b.client.Delete(ctx, have, client.Preconditions{UID: &have.UID}); err != nil && !apierrors.IsNotFound(err) {
			return st, fmt.Errorf("replacing KAI Topology %s of a deleted binding: %w", want.Name, err)
		}
		log.FromContext(ctx).Info("deleted KAI Topology of a deleted binding of the same name", "topology", have.Name)
		return b.createTopology(ctx, ct, want, st)
	}
	if !metav1.IsControlledBy(have, ct) {
		// Never touch a Topology no binding of this name owns.
		st.Message = fmt.Sprintf("KAI Topology %q exists and is not owned by this binding: name it for kai-scheduler in schedulerTopologyBindings, or delete it", want.Name)
		return st, nil
	}
	if !have.DeletionTimestamp.IsZero() {
		return st, fmt.Errorf("KAI Topology %s is being deleted; it is created anew once gone", want.Name)
	}
	if !slices.Equal(nodeLabels(have), nodeLabels(want)) {
		// KAI forbids editing the levels' node labels: replace the Topology, and only the one
		// that was read.
		if err := b.client.Delete(ctx, have, client.Preconditions{UID: &have.UID}); err != nil && !apierrors.IsNotFound(err) {
			return st, fmt.Errorf("replacing KAI Topology %s: %w", want.Name, err)
		}
		log.FromContext(ctx).Info("deleted KAI Topology to recreate it: KAI forbids editing its levels' node labels", "topology", have.Name)
		return b.createTopology(ctx, ct, want, st)
	}
	if !slices.Equal(have.Spec.Levels, want.Spec.Levels) {
		have.Spec.Levels = want.Spec.Levels
		if err := b.client.Update(ctx, have); err != nil {
			return st, fmt.Errorf("KAI Topology %s: %w", want.Name, err)
		}
		log.FromContext(ctx).Info("updated KAI Topology levels", "topology", have.Name)
	}
	st.SchedulerBackendTopologyObservedGeneration = have.Generation
	st.InSync, st.Message = compareLevels(have, bindingKeys(ct))
	return st, nil
}

// compareReferenced reports whether the KAI Topology the binding names for kai-scheduler matches
// its levels, never writing it; the backend's own Topology for the binding goes when the binding
// names another.
func (b *Backend) compareReferenced(ctx context.Context, ct *grovev1alpha1.ClusterTopologyBinding, ref string, st grovev1alpha1.SchedulerTopologyStatus) (grovev1alpha1.SchedulerTopologyStatus, error) {
	st.TopologyReference = ref
	if ref != ct.Name {
		if err := b.deleteOwnTopology(ctx, ct); err != nil {
			return st, err
		}
	}
	have := &kaiv1alpha1.Topology{}
	if err := b.client.Get(ctx, client.ObjectKey{Name: ref}, have); err != nil {
		if apierrors.IsNotFound(err) {
			st.Message = fmt.Sprintf("KAI Topology %q named in schedulerTopologyBindings does not exist", ref)
			return st, nil
		}
		return st, fmt.Errorf("KAI Topology %s: %w", ref, err)
	}
	st.SchedulerBackendTopologyObservedGeneration = have.Generation
	st.InSync, st.Message = compareLevels(have, bindingKeys(ct))
	return st, nil
}

// createTopology creates the binding's Topology. One KAI's schema rejects (kubernetes.io/hostname
// above another level) is reported, not retried: only a change of the binding can fix it.
func (b *Backend) createTopology(ctx context.Context, ct *grovev1alpha1.ClusterTopologyBinding, want *kaiv1alpha1.Topology, st grovev1alpha1.SchedulerTopologyStatus) (grovev1alpha1.SchedulerTopologyStatus, error) {
	if err := controllerutil.SetControllerReference(ct, want, b.client.Scheme()); err != nil {
		return st, err
	}
	if err := b.client.Create(ctx, want); err != nil {
		if apierrors.IsInvalid(err) {
			st.Message = fmt.Sprintf("KAI rejects Topology %q: %v", want.Name, err)
			return st, nil
		}
		return st, fmt.Errorf("creating KAI Topology %s: %w", want.Name, err)
	}
	log.FromContext(ctx).Info("created KAI Topology", "topology", want.Name)
	st.SchedulerBackendTopologyObservedGeneration = want.Generation
	st.InSync, st.Message = compareLevels(want, bindingKeys(ct))
	return st, nil
}

// deleteOwnTopology deletes the Topology the backend kept for the binding before the binding
// named another one for kai-scheduler; nothing refers to it any more.
func (b *Backend) deleteOwnTopology(ctx context.Context, ct *grovev1alpha1.ClusterTopologyBinding) error {
	own := &kaiv1alpha1.Topology{}
	if err := b.client.Get(ctx, client.ObjectKey{Name: ct.Name}, own); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(own, ct) && !orphanOf(own, ct) || !own.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := b.client.Delete(ctx, own, client.Preconditions{UID: &own.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting KAI Topology %s, replaced by the reference: %w", ct.Name, err)
	}
	return nil
}

// TopologyTypes is KAI's Topology, which SyncTopology creates owned by the binding.
func (b *Backend) TopologyTypes() []client.Object { return []client.Object{&kaiv1alpha1.Topology{}} }

// topologyName resolves the KAI Topology a PodGang's constraints refer to: the PodGang names
// its ClusterTopologyBinding (annotation grove.io/topology-name), and the binding may point
// kai-scheduler at a Topology of another name. A binding that is gone leaves its name.
func (b *Backend) topologyName(ctx context.Context, pg *schedulerv1alpha1.PodGang) (string, error) {
	name := pg.Annotations[schedulerv1alpha1.AnnotationTopologyName]
	if name == "" {
		return "", nil
	}
	ct := &grovev1alpha1.ClusterTopologyBinding{}
	if err := b.client.Get(ctx, client.ObjectKey{Name: name}, ct); err != nil {
		if apierrors.IsNotFound(err) {
			return name, nil
		}
		return "", fmt.Errorf("ClusterTopologyBinding %s: %w", name, err)
	}
	return TopologyName(ct), nil
}

// orphanOf reports whether a Topology is controlled by a ClusterTopologyBinding of ct's name
// but another UID: a binding deleted since, as names are unique.
func orphanOf(t *kaiv1alpha1.Topology, ct *grovev1alpha1.ClusterTopologyBinding) bool {
	ref := metav1.GetControllerOf(t)
	if ref == nil || ref.UID == ct.UID || ref.Name != ct.Name || ref.Kind != "ClusterTopologyBinding" {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == grovev1alpha1.GroupVersion.Group
}

// compareLevels reports whether a Topology's node labels are the binding's keys in order, and
// says how they differ when they are not.
func compareLevels(t *kaiv1alpha1.Topology, keys []string) (bool, string) {
	have := nodeLabels(t)
	if slices.Equal(have, keys) {
		return true, fmt.Sprintf("KAI Topology %q has the binding's levels %v", t.Name, keys)
	}
	return false, fmt.Sprintf("KAI Topology %q has levels %v, the binding %v: %s", t.Name, have, keys, firstDifference(have, keys))
}

// firstDifference names the first level where a Topology's node labels and the keys differ.
func firstDifference(have, keys []string) string {
	for i := 0; i < max(len(have), len(keys)); i++ {
		switch {
		case i >= len(have):
			return fmt.Sprintf("it lacks level %d (%s)", i+1, keys[i])
		case i >= len(keys):
			return fmt.Sprintf("its level %d (%s) is not in the binding", i+1, have[i])
		case have[i] != keys[i]:
			return fmt.Sprintf("its level %d is %s, the binding's is %s", i+1, have[i], keys[i])
		}
	}
	return ""
}

func bindingKeys(ct *grovev1alpha1.ClusterTopologyBinding) []string {
	keys := make([]string, 0, len(ct.Spec.Levels))
	for _, l := range ct.Spec.Levels {
		keys = append(keys, l.Key)
	}
	return keys
}

func nodeLabels(t *kaiv1alpha1.Topology) []string {
	out := make([]string, 0, len(t.Spec.Levels))
	for _, l := range t.Spec.Levels {
		out = append(out, l.NodeLabel)
	}
	return out
}
