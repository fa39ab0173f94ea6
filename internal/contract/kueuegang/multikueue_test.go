package kueuegang

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// On a manager cluster of MultiKueue a gang's Workload names the PodCliqueSet it belongs to —
// Kueue's owner annotations and a (non-controller) owner reference — so MultiKueue finds its
// adapter and sends the PodCliqueSet's other Workloads to the same worker. Nowhere else.
func TestWorkloadNamesItsPodCliqueSetAsOwnerOnlyForTheManagerRole(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "inf").Obj()
	trainJob := &metav1.ObjectMeta{Name: "tj", UID: "trainjob-tj"}
	cases := []struct {
		name      string
		pg        *schedulerv1alpha1.PodGang
		wantOwner bool
	}{
		{"MultiKueue takes no part", gang().ControlledBy(pcs, "PodCliqueSet").Obj(), false},
		{"the worker's gang: MultiKueue copied its Workload", gang().ControlledBy(pcs, "PodCliqueSet").MultiKueue(schedulerv1alpha1.MultiKueueWorker, "").Obj(), false},
		{"the manager's gang", gang().ControlledBy(pcs, "PodCliqueSet").MultiKueue(schedulerv1alpha1.MultiKueueManager, "").Obj(), true},
		{"the manager's later gang", gang().ControlledBy(pcs, "PodCliqueSet").MultiKueue(schedulerv1alpha1.MultiKueueManager, "inf-0").Obj(), true},
		{"the manager's gang without a controller", gang().MultiKueue(schedulerv1alpha1.MultiKueueManager, "").Obj(), false},
		{"the manager's gang controlled by another kind", gang().ControlledBy(trainJob, "TrainJob").MultiKueue(schedulerv1alpha1.MultiKueueManager, "").Obj(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wl := Workload(tc.pg, nil, false)

			require.NotEmpty(t, wl.OwnerReferences)
			gangRef := wl.OwnerReferences[0]
			assert.Equal(t, "PodGang", gangRef.Kind, "the gang's own reference stays first")
			assert.Equal(t, tc.pg.UID, gangRef.UID)
			assert.Equal(t, "true", wl.Annotations[AnnotationIsGroupWorkload])
			if !tc.wantOwner {
				assert.NotContains(t, wl.Annotations, AnnotationJobOwnerGVK)
				assert.NotContains(t, wl.Annotations, AnnotationJobOwnerName)
				assert.Len(t, wl.OwnerReferences, 1, "only the gang owns it")
				return
			}
			assert.Equal(t, "grove.io/v1alpha1, Kind=PodCliqueSet", wl.Annotations[AnnotationJobOwnerGVK])
			assert.Equal(t, "inf", wl.Annotations[AnnotationJobOwnerName])
			require.Len(t, wl.OwnerReferences, 2, "the gang's and the PodCliqueSet's")
			owner := wl.OwnerReferences[1]
			assert.Equal(t, metav1.OwnerReference{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: "PodCliqueSet", Name: "inf", UID: pcs.UID}, owner,
				"not as controller: Kueue ignores a prebuilt Workload controlled by another kind")
		})
	}
}
