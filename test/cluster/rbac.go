package cluster

import (
	"context"

	"github.com/kubegrove/grove/test/apiserver"
)

// Namespace is where the binaries keep their leases and the webhook its certificate, as in
// the deployment.
const Namespace = apiserver.BinaryNamespace

// GrantRBAC gives identity the roles generated for binary (see apiserver.GrantRBAC).
func (c *Cluster) GrantRBAC(ctx context.Context, binary, identity string) error {
	return apiserver.GrantRBAC(ctx, c.client, binary, identity)
}
