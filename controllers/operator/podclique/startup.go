package podclique

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/internal/slowstart"
)

// Startup ordering on a backend that places a gang whole (docs/startup-ordering.md). A gang is
// placed only once all its pods may be scheduled, so a pod cannot be held back from scheduling
// until its parents are up, as it is on a backend that places pods one by one: it is placed with
// its gang and held at start instead, by an init container that waits until the operator
// releases it. The init container reads the pod's grove.io/startup-gate annotation through the
// downward API (the kubelet refreshes it), so it needs no API access; the operator, which
// already watches the parents, decides.
const (
	startupGateVolume = "grove-startup-gate"
	startupGateDir    = "/etc/grove/startup"
	startupGateFile   = "gate"
)

// startupWaitScript ends once the gate file says released.
var startupWaitScript = fmt.Sprintf(`until [ "$(cat %s/%s)" = %s ]; do sleep 1; done`, startupGateDir, startupGateFile, grovev1alpha1.StartupGateReleased)

// waitsAtStart reports whether the clique's pods are placed with their gang and held at start
// until their parents are up.
func waitsAtStart(pclq *grovev1alpha1.PodClique, gang bool) bool {
	return gang && len(pclq.Spec.StartsAfter) > 0
}

// addStartupWait gives a pod the init container that holds it until its gate is released, and
// the gate: released at once when the parents are already up (a pod recreated later), saving
// the write that would release it.
func addStartupWait(pod *corev1.Pod, image string, parentsUp bool) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[grovev1alpha1.AnnotationStartupGate] = grovev1alpha1.StartupGateWaiting
	if parentsUp {
		pod.Annotations[grovev1alpha1.AnnotationStartupGate] = grovev1alpha1.StartupGateReleased
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: startupGateVolume,
		VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
			Path:     startupGateFile,
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.annotations['%s']", grovev1alpha1.AnnotationStartupGate)},
		}}}},
	})
	// Small, bounded and unprivileged, so quotas that require limits and the restricted Pod
	// Security Standard admit it; an init container's request counts only where it exceeds the
	// containers'.
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:            grovev1alpha1.StartupWaitContainer,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", startupWaitScript},
		Resources:       corev1.ResourceRequirements{Requests: small, Limits: small},
		VolumeMounts:    []corev1.VolumeMount{{Name: startupGateVolume, MountPath: startupGateDir, ReadOnly: true}},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](65534),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	})
}

// startupWaiting reports whether a pod is held at start by its gate.
func startupWaiting(p *corev1.Pod) bool {
	return p.Annotations[grovev1alpha1.AnnotationStartupGate] == grovev1alpha1.StartupGateWaiting
}

// releaseStartup releases the gates of the clique's waiting pods once its parents are up.
func (r *Reconciler) releaseStartup(ctx context.Context, active []*corev1.Pod, s schedulable) error {
	if !s.parents {
		return nil
	}
	var waiting []*corev1.Pod
	for _, p := range active {
		if startupWaiting(p) {
			waiting = append(waiting, p)
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	patch := client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, grovev1alpha1.AnnotationStartupGate, grovev1alpha1.StartupGateReleased))
	released, err := slowstart.Run(ctx, len(waiting), func(ctx context.Context, i int) error {
		return client.IgnoreNotFound(r.Client.Patch(ctx, waiting[i].DeepCopy(), patch))
	})
	log.FromContext(ctx).Info("released pods held at start: the cliques they start after are up", "pods", released, "startsAfter", s.parentNames)
	return err
}
