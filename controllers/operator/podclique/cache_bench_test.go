package podclique

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubegrove/grove/test/builders"
)

// BenchmarkSlimPodHeap reports the heap a cached pod takes with SlimPod and with a plain slim copy:
// 20,000 pods shaped like make bench's fill, decoded from protobuf as the informer does, with a
// garbage collection every 1,000 (go test -run=^$ -bench=SlimPodHeap ./controllers/operator/podclique/).
func BenchmarkSlimPodHeap(b *testing.B) {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	info, _ := apiruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), apiruntime.ContentTypeProtobuf)
	enc := codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	dec := codecs.UniversalDeserializer()
	now := metav1.NewTime(time.Now())
	var raws [][]byte
	for i := 0; i < 20000; i++ {
		clique := fmt.Sprintf("fill-%d-0-worker", i/100)
		owner := builders.PodClique("bench-memory-abcde", clique).UID("0f8e2c4a-1111-2222-3333-444455556667").Obj()
		p := builders.Pod("bench-memory-abcde", fmt.Sprintf("%s-%d", clique, i%100)).
			UID("0f8e2c4a-1111-2222-3333-"+fmt.Sprintf("%012d", i)).ResourceVersion(fmt.Sprint(1000000+i)).Created(now.Time).
			Label("app.kubernetes.io/managed-by", "grove-operator").Label("app.kubernetes.io/part-of", fmt.Sprintf("fill-%d", i/100)).
			Label("grove.io/podclique", clique).Label("grove.io/podgang", fmt.Sprintf("fill-%d-0", i/100)).
			Label("grove.io/podcliqueset-replica-index", "0").Label("grove.io/podclique-pod-index", fmt.Sprint(i%100)).
			Label("grove.io/pod-template-hash", "5d8f7c9b6f").
			ControlledBy(owner, "PodClique").NodeName(fmt.Sprintf("kwok-node-%d", i%20)).Container("w", "x").Phase(corev1.PodRunning)
		for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"} {
			p.Condition(corev1.PodCondition{Type: c, Status: "True", LastTransitionTime: now})
		}
		raw, err := apiruntime.Encode(enc, p.Obj())
		if err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	measure := func(slim func(any) (any, error)) float64 {
		keep := make([]any, len(raws))
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for i, raw := range raws {
			obj, _, err := dec.Decode(raw, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			keep[i], _ = slim(obj)
			if i%1000 == 0 {
				runtime.GC()
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(keep)
		return float64(m1.HeapAlloc-m0.HeapAlloc) / float64(len(raws))
	}
	plain := func(obj any) (any, error) { // the transform without interning
		pod := obj.(*corev1.Pod)
		s := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta,
			Spec:   corev1.PodSpec{SchedulingGates: pod.Spec.SchedulingGates, NodeName: pod.Spec.NodeName},
			Status: corev1.PodStatus{Phase: pod.Status.Phase, Conditions: pod.Status.Conditions}}
		s.ManagedFields = nil
		return s, nil
	}
	for b.Loop() {
		b.ReportMetric(measure(plain), "bytes/pod-before")
		b.ReportMetric(measure(SlimPod), "bytes/pod")
	}
}
