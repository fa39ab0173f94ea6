// Package trainer runs the trainer-controller's TrainJob reconciler, one pass at a time on a
// fake clock, against a real kube-apiserver with no garbage collector: what the reconciler leaves
// to the collector stays, so each test sees exactly what the API server did with its requests.
package trainerintegration

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubegrove/grove/test/apiserver"
)

var env *apiserver.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = apiserver.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}
