package plan

import (
	"fmt"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// UnsupportedError says a runtime uses a policy this project does not implement. It is
// permanent: the TrainJob cannot run on that runtime until the runtime changes.
type UnsupportedError struct {
	// Kind and Name identify the runtime.
	Kind, Name string
	// Field is the path of the unsupported field in the runtime, e.g. spec.mlPolicy.jax.
	Field string
	// Detail says what is supported instead.
	Detail string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s %q: %s is not supported: %s", e.Kind, e.Name, e.Field, e.Detail)
}

// CheckSupported returns an *UnsupportedError for the first policy of the runtime that cannot be
// built: MPI implementations other than OpenMPI.
func CheckSupported(rt *Runtime) error {
	unsupported := func(field, detail string) error {
		return &UnsupportedError{Kind: rt.Kind, Name: rt.Name, Field: field, Detail: detail}
	}
	if p := rt.Spec.MLPolicy; p != nil {
		switch {
		case p.MPI != nil && p.MPI.MPIImplementation != nil && *p.MPI.MPIImplementation != trainerv1alpha1.MPIImplementationOpenMPI:
			return unsupported("spec.mlPolicy.mpi.mpiImplementation",
				fmt.Sprintf("%q is not implemented; the supported implementation is %s", *p.MPI.MPIImplementation, trainerv1alpha1.MPIImplementationOpenMPI))
		}
	}
	return nil
}
