// Package deploy proves the deployment against a real kube-apiserver: every overlay renders with
// the pinned kustomize and is accepted by a server-side dry-run, and each binary's generated RBAC
// allows what it does and refuses what it must not do.
package deployintegration

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubegrove/grove/test/apiserver"
)

var env *apiserver.Env

func TestMain(m *testing.M) {
	var err error
	env, err = apiserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}
