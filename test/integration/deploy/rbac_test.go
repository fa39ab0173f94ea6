package deployintegration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kubegrove/grove/test/apiserver"
)

// access is one request a binary's ServiceAccount makes, or must never be able to make.
type access struct {
	verb, group, resource, namespace string
}

func (a access) String() string {
	return a.verb + " " + a.resource + "." + a.group + " in " + a.namespace
}

// allowed asks the API server whether the binary's ServiceAccount may do a.
func allowed(t *testing.T, binary string, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + apiserver.BinaryNamespace + ":" + binary,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + apiserver.BinaryNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Namespace: a.namespace,
		},
	}}
	require.NoError(t, env.Client.Create(context.Background(), sar))
	return sar.Status.Allowed
}

// TestEachBinaryGetsWhatItNeedsAndIsRefusedWhatItMustNotDo checks the roles generated from each
// binary's markers. What a binary needs is proven by the e2e suites, which run every binary
// with only these roles; this table pins the refusals (and a few grants as a sanity check).
func TestEachBinaryGetsWhatItNeedsAndIsRefusedWhatItMustNotDo(t *testing.T) {
	const ns = "team-a"
	cases := map[string]struct{ grants, refusals []access }{
		"grove-operator": {
			grants: []access{{"create", "", "pods", ns}, {"update", "scheduler.grove.io", "podgangs/status", ns}, {"create", "autoscaling", "horizontalpodautoscalers", ns},
				{"update", "coordination.k8s.io", "leases", apiserver.BinaryNamespace}},
			refusals: []access{{"get", "", "secrets", ns}, {"create", "jobset.x-k8s.io", "jobsets", ns}, {"update", "trainer.kubeflow.org", "trainjobs", ns},
				{"create", "scheduling.run.ai", "podgroups", ns}, {"update", "coordination.k8s.io", "leases", ns}, {"delete", "grove.io", "podcliquesets", ns}},
		},
		"grove-webhook": {
			grants: []access{{"get", "grove.io", "podcliquesets", ns}, {"list", "trainer.kubeflow.org", "clustertrainingruntimes", ""},
				{"update", "", "secrets", apiserver.BinaryNamespace}, {"update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", ""},
				{"get", "scheduling.volcano.sh", "queues", ""}, {"get", "scheduling.k8s.io", "priorityclasses", ""}},
			refusals: []access{{"list", "", "pods", ns}, {"create", "scheduling.volcano.sh", "queues", ""}, {"create", "", "pods", ns}, {"update", "grove.io", "podcliquesets", ns},
				{"get", "", "secrets", ns}, {"delete", "admissionregistration.k8s.io", "validatingwebhookconfigurations", ""}, {"update", "coordination.k8s.io", "leases", apiserver.BinaryNamespace}},
		},
		"backend-controller": {
			grants: []access{{"create", "scheduling.run.ai", "podgroups", ns}, {"create", "scheduling.k8s.io", "workloads", ns},
				{"update", "scheduler.grove.io", "podgangs/status", ns}, {"create", "kai.scheduler", "topologies", ""},
				{"create", "scheduling.volcano.sh", "podgroups", ns}, {"watch", "scheduling.volcano.sh", "queues", ""}},
			refusals: []access{{"create", "", "pods", ns}, {"update", "scheduling.volcano.sh", "queues", ""},
				// It reads only Volcano's PodGroup CRD, to check its schema.
				{"list", "apiextensions.k8s.io", "customresourcedefinitions", ""}, {"update", "", "pods", ns}, {"delete", "grove.io", "podcliquesets", ns},
				{"update", "grove.io", "podcliques", ns}, {"update", "scheduler.grove.io", "podgangs", ns}, {"get", "", "secrets", ns},
				// It learns everything from the PodGang (docs/binaries.md): no PodClique is read.
				{"get", "grove.io", "podcliques", ns}, {"list", "grove.io", "podcliques", ns}},
		},
		"trainer-controller": {
			grants: []access{{"create", "jobset.x-k8s.io", "jobsets", ns}, {"create", "grove.io", "podcliquesets", ns}, {"delete", "trainer.kubeflow.org", "trainjobs", ns},
				{"create", "", "secrets", ns}, {"patch", "scheduling.volcano.sh", "podgroups", ns}},
			refusals: []access{{"create", "", "pods", ns}, {"delete", "", "pods", ns}, {"get", "", "secrets", ns}, {"create", "batch", "jobs", ns},
				{"update", "grove.io", "podcliques", ns}, {"update", "trainer.kubeflow.org", "trainjobs", ns}, {"update", "grove.io", "podcliquesets/status", ns},
				// It reads the PodCliqueSet alone: its status counts the cliques' pods (docs/binaries.md).
				{"get", "grove.io", "podcliques", ns}, {"list", "grove.io", "podcliques", ns}},
		},
	}
	// Every binary may check a metrics scraper's token and permission (secure metrics, as
	// deployed), and none may act as or make itself someone more powerful.
	everyBinary := struct{ grants, refusals []access }{
		grants: []access{{"create", "authentication.k8s.io", "tokenreviews", ""}, {"create", "authorization.k8s.io", "subjectaccessreviews", ""}},
		refusals: []access{{"*", "*", "*", ""}, {"*", "*", "*", ns},
			{"impersonate", "", "users", ""}, {"impersonate", "", "groups", ""}, {"impersonate", "", "serviceaccounts", ns},
			{"escalate", "rbac.authorization.k8s.io", "clusterroles", ""}, {"bind", "rbac.authorization.k8s.io", "clusterroles", ""},
			{"escalate", "rbac.authorization.k8s.io", "roles", ns}, {"create", "rbac.authorization.k8s.io", "clusterrolebindings", ""},
			{"update", "rbac.authorization.k8s.io", "clusterroles", ""}, {"create", "", "serviceaccounts/token", apiserver.BinaryNamespace},
			{"create", "certificates.k8s.io", "certificatesigningrequests", ""}, {"list", "", "secrets", ""}, {"create", "", "pods/exec", ns}},
	}
	for binary, tc := range cases {
		require.NoError(t, apiserver.GrantRBAC(context.Background(), env.Client, binary, binary))
		tc.grants = append(tc.grants, everyBinary.grants...)
		tc.refusals = append(tc.refusals, everyBinary.refusals...)
		t.Run(binary, func(t *testing.T) {
			// The API server's RBAC authorizer learns of new bindings from its informers: the
			// grants show once it has; the refusals are asserted only after that.
			for _, a := range tc.grants {
				assert.Eventually(t, func() bool { return allowed(t, binary, a) }, 10*time.Second, 100*time.Millisecond, "%s may %s", binary, a)
			}
			for _, a := range tc.refusals {
				assert.False(t, allowed(t, binary, a), "%s must not %s", binary, a)
			}
		})
	}
}
