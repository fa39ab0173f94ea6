package deployintegration

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/toolpath"
)

// Third-party CRDs the rendered manifests use, read from their pinned modules.
var thirdPartyCRDs = []struct {
	module, version string
	files           []string
}{
	{"github.com/cert-manager/cert-manager", "v1.21.2", []string{"deploy/crds/cert-manager.io_certificates.yaml", "deploy/crds/cert-manager.io_issuers.yaml"}},
	{"github.com/argoproj/argo-cd/v2", "v2.14.21", []string{"manifests/crds/application-crd.yaml", "manifests/crds/applicationset-crd.yaml", "manifests/crds/appproject-crd.yaml"}},
	// The Prometheus Operator's, for the monitoring component (v0.95 is not served; v0.94.0's
	// ServiceMonitor and PrometheusRule have the same fields the component uses).
	{"github.com/prometheus-operator/prometheus-operator", "v0.94.0", []string{"example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml", "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"}},
}

// render builds a kustomization of the repository with the pinned kustomize.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	kustomize, err := toolpath.Bin("kustomize")
	require.NoError(t, err)
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	out, err := exec.Command(kustomize, "build", filepath.Join(root, dir)).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("kustomize build %s: %s", dir, ee.Stderr)
	}
	require.NoError(t, err)
	objs, err := apiserver.DecodeManifests(out)
	require.NoError(t, err)
	require.NotEmpty(t, objs, dir)
	return objs
}

// kustomizations lists the directories under dir that hold a kustomization.
func kustomizations(t *testing.T, dir string) []string {
	t.Helper()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(root, dir))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, dir, e.Name(), "kustomization.yaml")); err == nil {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	require.NotEmpty(t, out, dir)
	return out
}

// installThirdPartyCRDs installs cert-manager's and Argo CD's CRDs for real, once.
func installThirdPartyCRDs(t *testing.T) {
	t.Helper()
	for _, m := range thirdPartyCRDs {
		dir, err := apiserver.ModuleDir(m.module, m.version)
		require.NoError(t, err)
		for _, f := range m.files {
			objs, err := apiserver.ReadManifests(filepath.Join(dir, f))
			require.NoError(t, err)
			for _, o := range objs {
				if o.GetKind() == "CustomResourceDefinition" {
					applyForReal(t, o)
				}
			}
		}
	}
}

func applyForReal(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	o = o.DeepCopy()
	require.NoError(t, env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("grove-deploy-test"), client.ForceOwnership),
		"%s %s", o.GetKind(), o.GetName())
	if o.GetKind() == "CustomResourceDefinition" {
		require.Eventually(t, func() bool {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(o.GroupVersionKind())
			if env.Client.Get(context.Background(), client.ObjectKey{Name: o.GetName()}, crd) != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				c := c.(map[string]any)
				if c["type"] == string(apiextensionsv1.Established) && c["status"] == string(apiextensionsv1.ConditionTrue) {
					return true
				}
			}
			return false
		}, 30*time.Second, 50*time.Millisecond, "CRD %s established", o.GetName())
	}
}

// dryRun submits everything else as a server-side apply dry-run: admission, schema and CEL all
// run, nothing is stored. CRDs and Namespaces are applied for real first, as a sync would.
func dryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
			applyForReal(t, o)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
			continue
		}
		o = o.DeepCopy()
		err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("grove-deploy-test"), client.ForceOwnership, client.DryRunAll)
		assert.NoError(t, err, "%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	}
}

func TestEveryOverlayRendersAndIsAcceptedByTheAPIServer(t *testing.T) {
	installThirdPartyCRDs(t)
	for _, dir := range kustomizations(t, "deploy/overlays") {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := render(t, dir)
			checkReferences(t, objs)
			dryRun(t, objs)
		})
	}
}

func TestArgoCDApplicationsRenderAndAreAccepted(t *testing.T) {
	installThirdPartyCRDs(t)
	objs := render(t, "deploy/argocd")
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() != "Application" {
			continue
		}
		path, _, _ := unstructured.NestedString(o.Object, "spec", "source", "path")
		_, err := os.Stat(filepath.Join(root, path, "kustomization.yaml"))
		assert.NoError(t, err, "Application %s points at a kustomization", o.GetName())
	}
	assert.Positive(t, kinds["Application"], "an Application per overlay")
	assert.Equal(t, 1, kinds["ApplicationSet"], "one ApplicationSet for the fleet")
	for _, o := range objs {
		if o.GetNamespace() != "" {
			applyForReal(t, namespace(o.GetNamespace()))
		}
	}
	dryRun(t, objs)
}

// assertSoftMemoryLimitWithinRequest checks that a binary's container sets the Go heap's soft
// limit (GOMEMLIMIT) below its memory request, so an overlay that changes the one cannot leave the
// other behind: a limit above the request lets the binary's garbage outgrow what it asked for.
func assertSoftMemoryLimitWithinRequest(t *testing.T, deployment string, env []corev1.EnvVar, res corev1.ResourceRequirements) {
	t.Helper()
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
	if !assert.GreaterOrEqual(t, i, 0, "Deployment %s sets GOMEMLIMIT", deployment) {
		return
	}
	limit, err := goMemLimitBytes(env[i].Value)
	require.NoError(t, err, "Deployment %s: GOMEMLIMIT", deployment)
	request, ok := res.Requests[corev1.ResourceMemory]
	require.True(t, ok, "Deployment %s requests memory", deployment)
	assert.Less(t, limit, request.Value(), "Deployment %s: GOMEMLIMIT %s below the memory request %s", deployment, env[i].Value, request.String())
}

// goMemLimitBytes parses a GOMEMLIMIT value as the Go runtime does: a number of bytes with an
// optional unit B, KiB, MiB, GiB or TiB.
func goMemLimitBytes(v string) (int64, error) {
	units := []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	factor := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, factor = n, u.factor
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number of bytes with a unit B, KiB, MiB, GiB or TiB: %w", v, err)
	}
	return n * factor, nil
}

func namespace(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	return u
}

// checkReferences proves the rendered objects fit together the way the binaries expect: what
// the API server cannot check because the objects only meet at run time.
func checkReferences(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	byKind := map[string]map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if byKind[o.GetKind()] == nil {
			byKind[o.GetKind()] = map[string]*unstructured.Unstructured{}
		}
		byKind[o.GetKind()][o.GetName()] = o
		if namespaced(o.GetKind()) {
			assert.Equal(t, apiserver.BinaryNamespace, o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}
	certSecrets := map[string]bool{}
	for _, c := range byKind["Certificate"] {
		name, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
		certSecrets[name] = true
	}

	var cfg *configv1alpha1.OperatorConfiguration
	for name, cm := range byKind["ConfigMap"] {
		data, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
		if data == "" {
			continue
		}
		path := filepath.Join(t.TempDir(), "config.yaml")
		require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
		loaded, err := configv1alpha1.Load(path)
		require.NoError(t, err, "ConfigMap %s holds a valid OperatorConfiguration", name)
		cfg = loaded
	}
	require.NotNil(t, cfg, "the OperatorConfiguration is rendered")

	require.NotEmpty(t, byKind["Deployment"])
	for name, d := range byKind["Deployment"] {
		var pod struct {
			ServiceAccountName string `json:"serviceAccountName"`
			SecurityContext    struct {
				RunAsNonRoot   *bool `json:"runAsNonRoot"`
				SeccompProfile struct {
					Type string `json:"type"`
				} `json:"seccompProfile"`
			} `json:"securityContext"`
			Volumes []struct {
				ConfigMap *struct {
					Name string `json:"name"`
				} `json:"configMap"`
				Secret *struct {
					SecretName string `json:"secretName"`
				} `json:"secret"`
			} `json:"volumes"`
			Containers []struct {
				Args            []string                    `json:"args"`
				Env             []corev1.EnvVar             `json:"env"`
				Resources       corev1.ResourceRequirements `json:"resources"`
				SecurityContext struct {
					ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
					AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
					RunAsNonRoot             *bool `json:"runAsNonRoot"`
				} `json:"securityContext"`
			} `json:"containers"`
		}
		spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &pod))
		assert.Contains(t, byKind["ServiceAccount"], pod.ServiceAccountName, "Deployment %s runs as a rendered ServiceAccount", name)
		assert.True(t, pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot, "Deployment %s: runAsNonRoot", name)
		assert.Equal(t, "RuntimeDefault", pod.SecurityContext.SeccompProfile.Type, "Deployment %s: seccomp", name)
		for _, v := range pod.Volumes {
			if v.ConfigMap != nil {
				assert.Contains(t, byKind["ConfigMap"], v.ConfigMap.Name, "Deployment %s mounts a rendered ConfigMap", name)
			}
			if v.Secret != nil {
				_, rendered := byKind["Secret"][v.Secret.SecretName]
				assert.True(t, rendered || certSecrets[v.Secret.SecretName], "Deployment %s mounts Secret %s that is rendered or issued", name, v.Secret.SecretName)
			}
		}
		for _, c := range pod.Containers {
			assert.True(t, c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem, "Deployment %s: read-only root", name)
			assert.True(t, c.SecurityContext.AllowPrivilegeEscalation != nil && !*c.SecurityContext.AllowPrivilegeEscalation, "Deployment %s: no privilege escalation", name)
			assertSoftMemoryLimitWithinRequest(t, name, c.Env, c.Resources)
			for _, a := range c.Args {
				if backend, ok := strings.CutPrefix(a, "--backend="); ok {
					assert.True(t, cfg.Scheduler.IsEnabled(configv1alpha1.SchedulerName(backend)), "Deployment %s runs backend %s, which the configuration enables", name, backend)
				}
			}
		}
	}

	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for name, b := range byKind[kind] {
			roleKind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
			roleName, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
			assert.Contains(t, byKind[roleKind], roleName, "%s %s binds a rendered %s", kind, name, roleKind)
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			for _, s := range subjects {
				sa, _ := s.(map[string]any)["name"].(string)
				assert.Contains(t, byKind["ServiceAccount"], sa, "%s %s binds a rendered ServiceAccount", kind, name)
			}
		}
	}

	// Every binary's lease is renewed at the API server's leader-election priority, not queued
	// behind its own work (config/flowcontrol).
	leases := cmp.Or(cfg.LeaderElection.ResourceNamespace, apiserver.BinaryNamespace)
	assert.True(t, leasesPrioritized(byKind["FlowSchema"], leases), "a FlowSchema puts the leases in %s of every ServiceAccount of %s at leader-election priority", leases, apiserver.BinaryNamespace)

	// The webhook's certificate management names what is rendered.
	cm := cfg.CertManagement
	assert.Contains(t, byKind["MutatingWebhookConfiguration"], cm.MutatingWebhookConfigurationName)
	assert.Contains(t, byKind["ValidatingWebhookConfiguration"], cm.ValidatingWebhookConfigurationName)
	assert.Contains(t, byKind["Service"], cm.ServiceName)
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for name, w := range byKind[kind] {
			hooks, _, _ := unstructured.NestedSlice(w.Object, "webhooks")
			for _, h := range hooks {
				svc, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "name")
				svcNS, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "namespace")
				assert.Equal(t, cm.ServiceName, svc, "%s %s calls the webhook Service", kind, name)
				assert.Equal(t, apiserver.BinaryNamespace, svcNS, "%s %s", kind, name)
			}
		}
	}
	if len(byKind["Certificate"]) > 0 {
		assert.Equal(t, configv1alpha1.CertManagementManual, cm.Mode, "with cert-manager the webhook reads the issued certificate")
	} else {
		assert.Equal(t, configv1alpha1.CertManagementAuto, cm.Mode)
		assert.Contains(t, byKind["Secret"], cm.SecretName, "the rotator fills a Secret the deployment creates")
	}
}

// leasesPrioritized reports whether one of the FlowSchemas maps what client-go's lease lock does
// (get, create, update) in namespace, by every ServiceAccount of the binaries' namespace, to the
// leader-election priority level.
func leasesPrioritized(schemas map[string]*unstructured.Unstructured, namespace string) bool {
	for _, fs := range schemas {
		if level, _, _ := unstructured.NestedString(fs.Object, "spec", "priorityLevelConfiguration", "name"); level != "leader-election" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(fs.Object, "spec", "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			subjects, _, _ := unstructured.NestedSlice(rule, "subjects")
			resources, _, _ := unstructured.NestedSlice(rule, "resourceRules")
			if anyOf(subjects, func(m map[string]any) bool {
				ns, _, _ := unstructured.NestedString(m, "serviceAccount", "namespace")
				name, _, _ := unstructured.NestedString(m, "serviceAccount", "name")
				return ns == apiserver.BinaryNamespace && name == "*"
			}) && anyOf(resources, func(m map[string]any) bool {
				kinds, _, _ := unstructured.NestedStringSlice(m, "resources")
				namespaces, _, _ := unstructured.NestedStringSlice(m, "namespaces")
				verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
				return slices.Contains(kinds, "leases") && slices.Contains(namespaces, namespace) &&
					slices.Contains(verbs, "get") && slices.Contains(verbs, "create") && slices.Contains(verbs, "update")
			}) {
				return true
			}
		}
	}
	return false
}

func anyOf(list []any, pred func(map[string]any) bool) bool {
	return slices.ContainsFunc(list, func(v any) bool {
		m, ok := v.(map[string]any)
		return ok && pred(m)
	})
}

// namespaced reports whether a rendered kind lives in a namespace.
func namespaced(kind string) bool {
	switch kind {
	case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "PriorityClass", "ClusterIssuer", "FlowSchema":
		return false
	}
	return true
}
