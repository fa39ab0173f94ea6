package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNamesFollowTheDesignContract(t *testing.T) {
	cases := []struct{ got, want string }{
		{PodCliqueName("inference", 0, "router"), "inference-0-router"},
		{PodCliqueScalingGroupName("inference", 1, "prefill"), "inference-1-prefill"},
		{ScalingGroupPodCliqueName(PodCliqueScalingGroupName("inference", 1, "prefill"), 2, "worker"), "inference-1-prefill-2-worker"},
		{HeadlessServiceName("inference", 3), "inference-3"},
		{BasePodGangName("inference", 0), "inference-0"},
		{ScaledPodGangName(PodCliqueScalingGroupName("inference", 0, "prefill"), 3, 2), "inference-0-prefill-1"},
		{PodHostname("inference-0-router", 4), "inference-0-router-4"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.got)
	}
}
