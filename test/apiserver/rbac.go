package apiserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/toolpath"
)

// BinaryNamespace is where the binaries keep their leases and the webhook its certificate, as in
// the deployment (the namespaced Roles of config/rbac live there).
const BinaryNamespace = "grove-system"

// GrantRBAC gives the ServiceAccount identity (in BinaryNamespace) exactly the roles `make
// manifests` generates for binary in config/rbac/<binary>/role.yaml — the ClusterRole and the Role
// — bound as the deployment binds them, so a verb missing from the markers fails a test. It also
// applies the deployment's FlowSchema (config/flowcontrol), which gives the binaries' leases the
// leader-election priority.
func GrantRBAC(ctx context.Context, c client.Client, binary, identity string) error {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", binary, "role.yaml"))
	if err != nil {
		return fmt.Errorf("reading the RBAC of %s (run `make manifests`): %w", binary, err)
	}
	roles, err := DecodeManifests(data)
	if err != nil {
		return err
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: BinaryNamespace}})); err != nil {
		return err
	}
	// The binaries' leases are renewed at the leader-election priority, as deployed: a test that
	// loads the API server must not take a binary's lease away where a cluster would not.
	schemas, err := ReadManifests(filepath.Join(root, "config", "flowcontrol", "flowschema.yaml"))
	if err != nil {
		return fmt.Errorf("reading the binaries' FlowSchema: %w", err)
	}
	for _, fs := range schemas {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(fs), client.FieldOwner("grove-test"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying FlowSchema %s: %w", fs.GetName(), err)
		}
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: identity, Namespace: BinaryNamespace}
	for _, role := range roles {
		// Server-side apply, so a binary restarted by a test re-grants cleanly.
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(role), client.FieldOwner("grove-test"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", role.GetKind(), role.GetName(), err)
		}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: role.GetKind(), Name: role.GetName()}
		var binding client.Object
		switch role.GetKind() {
		case "ClusterRole":
			binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: identity}, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
		case "Role":
			binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: identity, Namespace: role.GetNamespace()}, RoleRef: ref, Subjects: []rbacv1.Subject{subject}}
		default:
			return fmt.Errorf("%s/role.yaml: unexpected %s", binary, role.GetKind())
		}
		if err := c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
