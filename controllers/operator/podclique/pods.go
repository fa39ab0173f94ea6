package podclique

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
)

// PodTemplateHash identifies a PodClique's pod template; pods carry it so a template change can
// tell old pods from new ones.
func PodTemplateHash(pclq *grovev1alpha1.PodClique) string {
	labels := templateLabels(pclq)
	if _, ok := labels[grovev1alpha1.LabelBasePodGang]; ok {
		// Added after pods of scaled gangs existed: a label they lack is no reason to replace them.
		labels = maps.Clone(labels)
		delete(labels, grovev1alpha1.LabelBasePodGang)
	}
	if _, ok := labels[grovev1alpha1.LabelPodGang]; ok && pclq.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy {
		// Under Coherent a pod's gang is where the PodGangMap puts it, not part of its template:
		// a gang renamed (a clique's PodCliques adopted) replaces no pod.
		labels = maps.Clone(labels)
		delete(labels, grovev1alpha1.LabelPodGang)
	}
	return children.Hash(pclq.Spec.PodSpec, labels, children.UserAnnotations(pclq.Annotations))
}

// templateLabels are the PodClique's own labels that pods inherit.
func templateLabels(pclq *grovev1alpha1.PodClique) map[string]string {
	return pclq.Labels
}

// missingIndices returns the indices in [0, replicas) no pod holds, lowest first, so holes left by
// deleted pods are refilled before the clique grows.
func missingIndices(pods []*corev1.Pod, replicas int) []int {
	used := make(map[int]bool, len(pods))
	for _, p := range pods {
		if i, ok := podIndex(p); ok {
			used[i] = true
		}
	}
	var missing []int
	for i := 0; i < replicas; i++ {
		if !used[i] {
			missing = append(missing, i)
		}
	}
	return missing
}

func podIndex(p *corev1.Pod) (int, bool) {
	i, err := strconv.Atoi(p.Labels[grovev1alpha1.LabelPodIndex])
	return i, err == nil
}

// surplusPods returns pods whose index is at or above replicas, highest first.
func surplusPods(pods []*corev1.Pod, replicas int) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if i, ok := podIndex(p); !ok || i >= replicas {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		ia, _ := podIndex(out[a])
		ib, _ := podIndex(out[b])
		return ia > ib
	})
	return out
}

// buildPod makes the pod of one index: stable name and hostname, the headless Service as
// subdomain, Grove's environment, the gang gate, and the scheduler backend's preparation. podGang
// is the gang the pod joins ("": the clique's own label says): it is set before the backend
// prepares the pod, since every backend names the gang's scheduler object from it (a standalone
// clique under Coherent has no gang of its own: its pods are divided among the replica's anchors).
func buildPod(pclq *grovev1alpha1.PodClique, index int, hash string, backend backends.PodPreparer, pg *schedulerv1alpha1.PodGang, podGang string) *corev1.Pod {
	name := grovev1alpha1.PodHostname(pclq.Name, index)
	labels := map[string]string{}
	for k, v := range templateLabels(pclq) {
		labels[k] = v
	}
	if podGang != "" {
		labels[grovev1alpha1.LabelPodGang] = podGang
	}
	labels[grovev1alpha1.LabelPodClique] = pclq.Name
	labels[grovev1alpha1.LabelPodIndex] = strconv.Itoa(index)
	labels[grovev1alpha1.LabelPodTemplateHash] = hash
	annotations := maps.Clone(pclq.Annotations)
	spec := pclq.Spec.PodSpec.DeepCopy()
	pcs := pclq.Labels[grovev1alpha1.LabelPartOf]
	replica := pclq.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex]
	service := pcs + "-" + replica
	spec.Hostname = name
	spec.Subdomain = service
	env := []corev1.EnvVar{
		{Name: grovev1alpha1.EnvPCSName, Value: pcs},
		{Name: grovev1alpha1.EnvPCSIndex, Value: replica},
		{Name: grovev1alpha1.EnvPCLQName, Value: pclq.Name},
		{Name: grovev1alpha1.EnvHeadlessService, Value: fmt.Sprintf("%s.%s.svc.cluster.local", service, pclq.Namespace)},
		{Name: grovev1alpha1.EnvPCLQPodIndex, Value: strconv.Itoa(index)},
	}
	if group := pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup]; group != "" {
		labels[grovev1alpha1.LabelPodCliqueScalingGroupPodIndex] = strconv.Itoa(int(ptr.Deref(pclq.Spec.ScalingGroupPodIndexOffset, 0)) + index)
		env = append(env,
			corev1.EnvVar{Name: grovev1alpha1.EnvPCSGName, Value: group},
			corev1.EnvVar{Name: grovev1alpha1.EnvPCSGIndex, Value: pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]},
			corev1.EnvVar{Name: grovev1alpha1.EnvPCSGTemplateNumPods, Value: strconv.Itoa(int(ptr.Deref(pclq.Spec.ScalingGroupTemplateNumPods, 0)))},
			corev1.EnvVar{Name: grovev1alpha1.EnvPCSGPodIndex, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: fmt.Sprintf("metadata.labels['%s']", grovev1alpha1.LabelPodCliqueScalingGroupPodIndex)}}},
		)
	}
	// Grove's variables come first, as upstream Grove puts them, so $(GROVE_…) expands in the
	// user's own entries.
	for i := range spec.InitContainers {
		spec.InitContainers[i].Env = append(slices.Clone(env), spec.InitContainers[i].Env...)
	}
	addResourceClaims(spec, pclq, index)
	addComputeDomainClaim(spec, pclq.Spec.ComputeDomainClaimTemplate)
	for i := range spec.Containers {
		spec.Containers[i].Env = append(slices.Clone(env), spec.Containers[i].Env...)
	}
	spec.SchedulingGates = append(spec.SchedulingGates, corev1.PodSchedulingGate{Name: grovev1alpha1.SchedulingGatePodGangPendingCreation})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       pclq.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pclq, grovev1alpha1.GroupVersion.WithKind("PodClique"))},
		},
		Spec: *spec,
	}
	backend.PreparePod(pod)
	kueuegang.PreparePod(pod, pg)
	if group := schedulingGroup(pg, pclq.Name); group != "" {
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	}
	return pod
}

// schedulingGroup is the scheduler group the backend-controller assigned to the clique's pod
// group in the PodGang's status, "" when there is none (yet).
func schedulingGroup(pg *schedulerv1alpha1.PodGang, podGroup string) string {
	if pg == nil {
		return ""
	}
	return pg.SchedulingGroupOf(podGroup)
}

// Pods are the pods of a PodClique at its spec's size, as this reconciler creates them once the
// backend acknowledged their PodGang pg (its status naming their scheduling group) and before any
// parent clique is up: a pod that waits for a parent (spec.startsAfter) is born with the gang
// gate on a backend that places pods one by one, lifted once the parents are up, and on a backend
// that places gangs whole is born schedulable with the init container that holds it at start
// (the default image); the others are born schedulable. kubectl grove renders with it.
func Pods(pclq *grovev1alpha1.PodClique, backend backends.PodPreparer, pg *schedulerv1alpha1.PodGang) []*corev1.Pod {
	hash := PodTemplateHash(pclq)
	atStart := waitsAtStart(pclq, backend.GangScheduling())
	waitsForParents := !atStart && len(pclq.Spec.StartsAfter) > 0
	pods := make([]*corev1.Pod, 0, pclq.Spec.Replicas)
	for i := range int(pclq.Spec.Replicas) {
		pod := buildPod(pclq, i, hash, backend, pg, "")
		if atStart {
			addStartupWait(pod, configv1alpha1.DefaultStartupWaitImage, false)
		}
		if !waitsForParents {
			pod.Spec.SchedulingGates = withoutGate(pod.Spec.SchedulingGates)
		}
		pods = append(pods, pod)
	}
	return pods
}

// addResourceClaims wires the claims of resource sharing into a pod, as upstream Grove does: the
// PodCliqueSet's and scaling group's shared claims, then the clique's own (AllReplicas, then the
// pod index's PerReplica ones), each in spec.resourceClaims and in every container's and init
// container's resources.claims so all of them see the devices.
func addResourceClaims(spec *corev1.PodSpec, pclq *grovev1alpha1.PodClique, index int) {
	claims := slices.Clone(pclq.Spec.SharedResourceClaims)
	for _, scope := range []grovev1alpha1.ResourceSharingScope{grovev1alpha1.ResourceSharingScopeAllReplicas, grovev1alpha1.ResourceSharingScopePerReplica} {
		for _, e := range pclq.Spec.ResourceSharing {
			if e.Scope == scope {
				claims = append(claims, grovev1alpha1.ResourceClaimName(pclq.Name, e, index))
			}
		}
	}
	for _, claim := range claims {
		name := grovev1alpha1.PodResourceClaimName(claim)
		spec.ResourceClaims = append(spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: ptr.To(claim)})
		for i := range spec.Containers {
			spec.Containers[i].Resources.Claims = append(spec.Containers[i].Resources.Claims, corev1.ResourceClaim{Name: name})
		}
		for i := range spec.InitContainers {
			spec.InitContainers[i].Resources.Claims = append(spec.InitContainers[i].Resources.Claims, corev1.ResourceClaim{Name: name})
		}
	}
}

// addComputeDomainClaim gives the GPU containers of an MNNVL clique's pod a channel of its
// replica's ComputeDomain, as upstream Grove does: one pod claim from the ComputeDomain's
// ResourceClaimTemplate, referenced by every container that requests nvidia.com/gpu.
func addComputeDomainClaim(spec *corev1.PodSpec, template string) {
	if template == "" {
		return
	}
	claim := corev1.ResourceClaim{Name: grovev1alpha1.MNNVLClaimName}
	for _, containers := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range containers {
			if grovev1alpha1.RequestsNVIDIAGPU(&corev1.PodSpec{Containers: containers[i : i+1]}) {
				containers[i].Resources.Claims = append(containers[i].Resources.Claims, claim)
			}
		}
	}
	spec.ResourceClaims = append(spec.ResourceClaims, corev1.PodResourceClaim{Name: grovev1alpha1.MNNVLClaimName, ResourceClaimTemplateName: ptr.To(template)})
}

// releaseKueueFinalizers removes Kueue's finalizer from the clique's pods that are being deleted
// or have ended. Kueue's pod-group integration never removes it from a pod of a prebuilt group
// Workload that is replaced under the same name, so without this a pod Kueue evicted, or one
// this operator deletes, would keep its name — and its replacement out — forever. Kueue does the
// same for LeaderWorkerSet pods. Every pod is tried: one conflict (a kubelet's or kwok's write
// in between) leaves the others released, and the pass looks again for it.
func (r *Reconciler) releaseKueueFinalizers(ctx context.Context, pods []*corev1.Pod) error {
	var released, evicted []string
	var errs []error
	for _, p := range pods {
		if !kueueHolds(p) {
			continue
		}
		patched := p.DeepCopy()
		patched.Finalizers = slices.DeleteFunc(patched.Finalizers, func(f string) bool { return f == kueuegang.PodFinalizer })
		if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("releasing Kueue's finalizer of pod %s: %w", p.Name, err))
			continue
		}
		released = append(released, p.Name)
		if kueuegang.EvictedByKueue(p) {
			evicted = append(evicted, p.Name)
		}
	}
	if len(released) > 0 {
		log.FromContext(ctx).Info("released Kueue's finalizer of pods that are gone or ended", "pods", len(released), "evictedByKueue", len(evicted))
		log.FromContext(ctx).V(1).Info("released Kueue's finalizer", "pods", released, "evictedByKueue", evicted)
	}
	return errors.Join(errs...)
}

// podProgressed is the Prompt of the clique's pod watch: eventbatch.PodReadyOrGone, and a pod
// that Kueue's finalizer now holds (it began to be deleted, or ended, with the finalizer on).
// Such a pod never goes away by itself: its deletion event, otherwise the prompt one, comes only
// after a pass releases it, and a rolling step waits for its name.
func podProgressed(old, new client.Object) bool {
	if eventbatch.PodReadyOrGone(old, new) {
		return true
	}
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := new.(*corev1.Pod)
	return ok1 && ok2 && !kueueHolds(o) && kueueHolds(n)
}

// cliqueAllReady is the urgent Prompt of the clique's pod watch: a pod turned Ready and, as the
// cache shows them, every pod the clique wants is there and Ready — a rolling step's group whole
// again, whose status write the parent waits for. It waits for no burst (PromptWindow): no other
// pod of the clique has anything left to report. Measured in make bench's rolling update of 100
// groups, the window was a third of the hop from a group's last pod Ready to the next group's
// first write. The pods are read by name, without copies, from the highest index down (pods are
// created, and turn Ready, roughly in index order), and the scan stops at the first pod not
// Ready: a clique whose pods turn Ready one by one costs little before the last (pods turning
// Ready from the highest index down would cost a scan of those above each). It is a hint to hurry,
// not a decision: the pass that follows reads the pods and their templates itself.
func cliqueAllReady(reader client.Reader) eventbatch.Prompt {
	return func(old, new client.Object) bool {
		o, ok1 := old.(*corev1.Pod)
		n, ok2 := new.(*corev1.Pod)
		if !ok1 || !ok2 || podCondition(o, corev1.PodReady) || !podCondition(n, corev1.PodReady) || n.DeletionTimestamp != nil {
			return false
		}
		ctx := context.Background()
		name := n.Labels[grovev1alpha1.LabelPodClique]
		pclq := &grovev1alpha1.PodClique{}
		if name == "" || reader.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: name}, pclq, client.UnsafeDisableDeepCopy) != nil {
			return false
		}
		for i := int(pclq.Spec.Replicas) - 1; i >= 0; i-- {
			p := &corev1.Pod{}
			if err := reader.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: grovev1alpha1.PodHostname(name, i)}, p, client.UnsafeDisableDeepCopy); err != nil ||
				p.DeletionTimestamp != nil || !podCondition(p, corev1.PodReady) {
				return false
			}
		}
		return true
	}
}

// kueueHolds reports whether Kueue's finalizer holds a pod that is being deleted or has ended.
func kueueHolds(p *corev1.Pod) bool {
	ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	return (!p.DeletionTimestamp.IsZero() || ended) && slices.Contains(p.Finalizers, kueuegang.PodFinalizer)
}

// releasedFirst reports whether a pod's finalizer is released at the start of a pass, before
// anything else it does can fail or wait: a pod being deleted that Kueue did not evict. Nothing
// of the clique's status depends on it (a pod being deleted is counted nowhere), and a pass that
// ends early — its PodGang gone with its namespace, a create refused there, a status write held —
// would otherwise leave it, and its namespace, waiting. A pod Kueue evicted, or one that ended,
// of this clique is released after the status that recorded it (see finish); the pods of an
// earlier PodClique of the same name all at the start (see pass.releases).
func releasedFirst(p *corev1.Pod) bool {
	return !p.DeletionTimestamp.IsZero() && !kueuegang.EvictedByKueue(p)
}

// queueOf is the Kueue LocalQueue that admits a clique's gang as a Workload of its own, "" when
// it is not queued on its own (or unknown yet).
func queueOf(pg *schedulerv1alpha1.PodGang) string {
	if !pg.QueuedOnItsOwn() {
		return ""
	}
	return pg.Spec.QueueName
}
