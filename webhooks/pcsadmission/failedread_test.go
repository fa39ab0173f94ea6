package pcsadmission

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// listFailing fails every list, as a cache that is not synced.
type listFailing struct{ client.Reader }

func (listFailing) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("the cache is not synced")
}

// A read that fails decides nothing: the answer is an internal error (code 500, not allowed),
// which the client sees as "Internal error occurred" and grove_admission_requests_total counts
// as result=error,
// not a refusal of the object.
func TestAFailedReadIsAnInternalErrorNotAVerdict(t *testing.T) {
	cases := []struct {
		name string
		v    *Validator
		pcs  func() *grovev1alpha1.PodCliqueSet
		want string
	}{
		{"listing the namespace's PodCliqueSets", &Validator{Backends: kubeOnly, PodCliqueSets: listFailing{}}, valid,
			"listing the namespace's PodCliqueSets"},
		{"the backend's read of its queue", &Validator{Backends: volcanoEnabled, SchedulerObjects: failingReader{}}, func() *grovev1alpha1.PodCliqueSet { return onVolcano("gpu") },
			"connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.v.ValidateCreate(context.Background(), tc.pcs())

			require.Error(t, err)
			assert.True(t, apierrors.IsInternalError(err), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
