package podclique

import (
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/kubegrove/grove/internal/contract/kueuegang"
)

// SlimPod is the grove-operator's cache transform for pods: it keeps only what the operator's
// controllers read — metadata (labels, owner, deletion), the scheduling gates and group, the node,
// the phase and the conditions in keptConditions — and drops the rest (containers with Grove's
// environment, volumes, container statuses, managedFields), which is most of a pod's memory. The
// writes made from a cached pod are merge patches computed against this same slim copy (its gates,
// Kueue's finalizer, its labels and annotations), each of fields it keeps, so nothing dropped is
// ever written back.
//
// The strings it keeps are interned: a clique's pods repeat the same label keys and values, owner,
// node names and condition words, and one copy of each serves them all. With both, a cached pod
// takes 2,043 bytes of heap instead of 3,366 (BenchmarkSlimPodHeap); 1,280 of them are the Pod
// struct itself.
func SlimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	meta := pod.ObjectMeta
	meta.ManagedFields = nil
	meta.Namespace = intern(meta.Namespace)
	meta.GenerateName = intern(meta.GenerateName)
	meta.Labels = internMap(meta.Labels)
	meta.Annotations = internMap(meta.Annotations)
	if len(meta.OwnerReferences) > 0 {
		owners := make([]metav1.OwnerReference, len(meta.OwnerReferences))
		for i, o := range meta.OwnerReferences {
			o.APIVersion, o.Kind, o.Name, o.UID = intern(o.APIVersion), intern(o.Kind), intern(o.Name), internUID(o.UID)
			owners[i] = o
		}
		meta.OwnerReferences = owners
	}
	if len(meta.Finalizers) > 0 {
		finalizers := make([]string, len(meta.Finalizers))
		for i, f := range meta.Finalizers {
			finalizers[i] = intern(f)
		}
		meta.Finalizers = finalizers
	}
	var gates []corev1.PodSchedulingGate
	if len(pod.Spec.SchedulingGates) > 0 {
		gates = make([]corev1.PodSchedulingGate, len(pod.Spec.SchedulingGates))
		for i, g := range pod.Spec.SchedulingGates {
			gates[i] = corev1.PodSchedulingGate{Name: intern(g.Name)}
		}
	}
	var conds []corev1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !keptConditions.Has(c.Type) {
			continue
		}
		c.Type, c.Status = corev1.PodConditionType(intern(string(c.Type))), corev1.ConditionStatus(intern(string(c.Status)))
		c.Reason, c.Message = intern(c.Reason), intern(c.Message)
		conds = append(conds, c)
	}
	return &corev1.Pod{
		TypeMeta:   pod.TypeMeta,
		ObjectMeta: meta,
		Spec:       corev1.PodSpec{SchedulingGates: gates, SchedulingGroup: schedulingGroupOf(pod), NodeName: intern(pod.Spec.NodeName)},
		Status:     corev1.PodStatus{Phase: corev1.PodPhase(intern(string(pod.Status.Phase))), Conditions: conds},
	}, nil
}

// schedulingGroupOf is the pod's scheduling group, interned: a gated pod whose group is not the
// one its PodGang assigns is recreated (see liftGates), so a cache without it would recreate them all.
func schedulingGroupOf(pod *corev1.Pod) *corev1.PodSchedulingGroup {
	g := pod.Spec.SchedulingGroup
	if g == nil {
		return nil
	}
	out := g.DeepCopy()
	if out.PodGroupName != nil {
		out.PodGroupName = ptr.To(intern(*out.PodGroupName))
	}
	return out
}

// interned holds the strings SlimPod shares. A table of its own rather than Go's unique package:
// unique keeps a string only while a Handle to it lives, so after the next garbage collection an
// equal string would be copied again. Bounded: emptied when it reaches maxInterned strings (what is
// shared stays shared; later pods share new copies). A cluster's pods repeat a few thousand.
var interned = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

const maxInterned = 1 << 16

// keptConditions are the pod conditions the operator reads: readiness, the scheduler's word on
// placement (a PodGang's Scheduled condition quotes it), and the disruption a Kueue eviction or
// the API's eviction marks. A kubelet sets five or six; each kept costs 120 bytes a pod.
var keptConditions = sets.New(corev1.PodReady, corev1.PodScheduled, corev1.DisruptionTarget, kueuegang.PodConditionTerminationTarget)

func intern(s string) string {
	if s == "" {
		return s
	}
	interned.Lock()
	defer interned.Unlock()
	if c, ok := interned.m[s]; ok {
		return c
	}
	if len(interned.m) >= maxInterned {
		clear(interned.m)
	}
	s = strings.Clone(s) // never pin the buffer the string was decoded from
	interned.m[s] = s
	return s
}

func internUID(u types.UID) types.UID { return types.UID(intern(string(u))) }

func internMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}
