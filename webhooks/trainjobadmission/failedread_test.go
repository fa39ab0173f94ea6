package trainjobadmission

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// unreachable fails every read, as an API server that cannot be reached.
type unreachable struct{ client.Client }

func (unreachable) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("connection refused")
}

// A read that fails decides nothing: the answer is an internal error (code 500, not allowed),
// which the client sees as "Internal error occurred" and grove_admission_requests_total counts
// as result=error,
// not a refusal of the TrainJob.
func TestAFailedReadIsAnInternalErrorNotAVerdict(t *testing.T) {
	s := runtime.NewScheme()
	require.NoError(t, trainerv1alpha1.AddToScheme(s))
	withRuntime := fake.NewClientBuilder().WithScheme(s).WithObjects(volcanoRuntime("", nil, "")).Build()
	cases := []struct {
		name string
		v    *TrainJobValidator
		want string
	}{
		{"reading the runtime", &TrainJobValidator{Client: unreachable{}}, `reading TrainingRuntime "rt"`},
		{"reading the Volcano queue", &TrainJobValidator{Client: withRuntime, Cluster: unreachable{}}, "connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.v.ValidateCreate(context.Background(), trainJob("ns"))

			require.Error(t, err)
			assert.True(t, apierrors.IsInternalError(err), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
