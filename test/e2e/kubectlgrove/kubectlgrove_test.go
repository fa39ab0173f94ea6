package kubectlgrovee2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/render"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
)

func k8s() client.Client { return cluster.Current.Client() }

// plugin runs the kubectl-grove binary as an administrator of the local cluster.
func plugin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return pluginAs(t, cluster.Current.AdminKubeconfig(), args...)
}

func pluginAs(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	if args[0] != "render" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	cmd := exec.Command(filepath.Join(binDir, "kubectl-grove"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func namespace(t *testing.T, name string) string {
	t.Helper()
	require.NoError(t, k8s().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func samplePath(t *testing.T, name string) string {
	t.Helper()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	return filepath.Join(root, "config", "samples", name)
}

// apply creates every object of the files in ns, runtimes first.
func apply(t *testing.T, ns string, files ...string) {
	t.Helper()
	in := &render.Input{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, render.Decode(in, bytes.NewReader(data), f, ns))
	}
	var objs []client.Object
	for _, o := range in.Runtimes {
		objs = append(objs, o)
	}
	for _, o := range in.PodCliqueSets {
		objs = append(objs, o)
	}
	for _, o := range in.TrainJobs {
		objs = append(objs, o)
	}
	for _, o := range objs {
		require.NoError(t, k8s().Create(context.Background(), o), "creating %s", o.GetName())
	}
}

// rendered parses render -o yaml into objects by "Kind/name".
func rendered(t *testing.T, ns string, files ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	args := []string{"render", "-o", "yaml", "-n", ns, "--config", trainerConfig}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	out, err := plugin(t, args...)
	require.NoError(t, err, out)
	objs := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(out, "---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := utilyaml.ToJSON([]byte(doc))
		require.NoError(t, err)
		// Decoded as the API client decodes (integers stay int64), so values compare equal.
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(js))
		objs[u.GetKind()+"/"+u.GetName()] = u
	}
	require.NotEmpty(t, objs)
	return objs
}

// compared are, per kind, the fields render must agree on with the live object: the binaries'
// decisions, not what the API server or other controllers add.
var compared = map[string][][]string{
	"PodCliqueSet":            {{"spec"}},
	"Service":                 {{"spec", "selector"}, {"spec", "publishNotReadyAddresses"}, {"spec", "clusterIP"}},
	"PodCliqueScalingGroup":   {{"spec"}},
	"PodClique":               {{"spec"}, {"metadata", "labels"}},
	"PodGang":                 {{"spec"}, {"metadata", "labels"}},
	"HorizontalPodAutoscaler": {{"spec"}},
	"Pod": {{"metadata", "labels"}, {"spec", "hostname"}, {"spec", "subdomain"}, {"spec", "schedulerName"},
		{"spec", "containers"}},
}

var kinds = map[string]schema.GroupVersionKind{
	"PodCliqueSet":            grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"),
	"Service":                 {Version: "v1", Kind: "Service"},
	"PodCliqueScalingGroup":   grovev1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup"),
	"PodClique":               grovev1alpha1.GroupVersion.WithKind("PodClique"),
	"PodGang":                 {Group: "scheduler.grove.io", Version: "v1alpha1", Kind: "PodGang"},
	"HorizontalPodAutoscaler": {Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
	"Pod":                     {Version: "v1", Kind: "Pod"},
}

// diff returns how the live objects differ from the rendered ones, "" once they agree.
func diff(ctx context.Context, ns string, want map[string]*unstructured.Unstructured) string {
	var out []string
	for key, w := range want {
		fields, ok := compared[w.GetKind()]
		if !ok {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(kinds[w.GetKind()])
		if err := k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: w.GetName()}, live); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		for _, path := range fields {
			wv, _, _ := unstructured.NestedFieldNoCopy(w.Object, path...)
			lv, _, _ := unstructured.NestedFieldNoCopy(live.Object, path...)
			switch path[len(path)-1] {
			case "containers":
				wv, lv = envOnly(wv), envOnly(lv)
			case "labels":
				lv = ownLabels(wv, lv)
			}
			if d := cmp.Diff(wv, lv); d != "" {
				out = append(out, fmt.Sprintf("%s .%s (-rendered +live):\n%s", key, strings.Join(path, "."), d))
			}
		}
	}
	return strings.Join(out, "\n")
}

// ownLabels keeps the live labels render speaks for: those it rendered and every grove.io one;
// others (a zone label the local cluster's kwok stage adds on binding) are not the binaries'.
func ownLabels(rendered, live any) any {
	r, _ := rendered.(map[string]any)
	l, _ := live.(map[string]any)
	out := map[string]any{}
	for k, v := range l {
		if _, ok := r[k]; ok || strings.HasPrefix(k, "grove.io/") {
			out[k] = v
		}
	}
	return out
}

// envOnly keeps each container's name and environment: the rest of a live pod's containers is
// defaulted by the API server, which also fills a fieldRef's apiVersion (Kubernetes' own pod
// defaulting, which render does not repeat).
func envOnly(v any) any {
	list, _ := v.([]any)
	var out []any
	for _, c := range list {
		m, _ := c.(map[string]any)
		env, _ := m["env"].([]any)
		for _, e := range env {
			if ref, ok, _ := unstructured.NestedMap(e.(map[string]any), "valueFrom", "fieldRef"); ok && ref["apiVersion"] == "v1" {
				unstructured.RemoveNestedField(e.(map[string]any), "valueFrom", "fieldRef", "apiVersion")
			}
		}
		out = append(out, map[string]any{"name": m["name"], "env": env})
	}
	return out
}

func TestRenderPrintsWhatTheBinariesCreateFromEverySample(t *testing.T) {
	cases := []struct {
		name  string
		files []string
	}{
		{"inference", []string{"grove_v1alpha1_podcliqueset.yaml"}},
		{"training", []string{"grove_v1alpha1_podcliqueset_training.yaml"}},
		{"trainjob", []string{"trainer_v1alpha1_trainingruntime.yaml", "trainer_v1alpha1_trainjob.yaml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t, "render-"+tc.name)
			var files []string
			for _, f := range tc.files {
				files = append(files, samplePath(t, f))
			}
			want := rendered(t, ns, files...)
			apply(t, ns, files...)
			var last string
			ok := assert.Eventually(t, func() bool {
				last = diff(context.Background(), ns, want)
				return last == ""
			}, 90*time.Second, time.Second)
			if !ok {
				t.Fatalf("the cluster never matched the render:\n%s", last)
			}
			// Nothing beyond what was rendered: no PodClique, PodGang or pod of its own.
			for _, kind := range []string{"PodClique", "PodGang", "Pod"} {
				list := &unstructured.UnstructuredList{}
				list.SetGroupVersionKind(kinds[kind].GroupVersion().WithKind(kind + "List"))
				require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.HasLabels{grovev1alpha1.LabelPartOf}))
				for _, item := range list.Items {
					assert.Contains(t, want, kind+"/"+item.GetName(), "created but not rendered")
				}
			}
		})
	}
}

// held is two cliques: "a" asks for more CPU than any node has, "b" starts after it.
func held(ns string) *grovev1alpha1.PodCliqueSet {
	container := func(cpu string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}
	}
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			StartupType: ptr.To(grovev1alpha1.CliqueStartupTypeExplicit),
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
				{Name: "a", Spec: grovev1alpha1.PodCliqueSpec{RoleName: "a", Replicas: 1, PodSpec: container("5000")}},
				{Name: "b", Spec: grovev1alpha1.PodCliqueSpec{RoleName: "b", Replicas: 2, StartsAfter: []string{"a"}, PodSpec: container("100m")}},
			},
		}},
	}
}

func TestStatusAndWhyExplainAHeldWorkloadAndShowARunningOne(t *testing.T) {
	ns := namespace(t, "status")
	require.NoError(t, k8s().Create(context.Background(), held(ns)))
	var out string
	require.Eventually(t, func() bool {
		out, _ = plugin(t, "status", "pcs/held", "-n", ns)
		return strings.Contains(out, "pod held-0-a-0: Pending, not ready, 0 restarts — unschedulable by default-scheduler:") &&
			strings.Contains(out, "pod held-0-b-1: Pending, not ready, 0 restarts — gated: starts after held-0-a (0/1 ready)") &&
			strings.Contains(out, "PodGang held-0: phase Pending, backend kube-scheduler: acknowledged")
	}, time.Minute, time.Second, "status never said why:\n%s", out)
	assert.Contains(t, out, "Insufficient cpu")

	why, err := plugin(t, "why", "pod/held-0-b-0", "-n", ns)
	require.NoError(t, err, why)
	assert.Contains(t, why, "held: gated: starts after held-0-a (0/1 ready)")
	assert.Contains(t, why, "starts after PodClique held-0-a: 0/1 ready (minAvailable 1)")
	assert.Contains(t, why, "pod held-0-a-0: Pending, not ready, 0 restarts — unschedulable by default-scheduler")

	// The same workload once it fits: every pod Running and ready, nothing waits.
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "held"}, pcs))
	require.NoError(t, k8s().Delete(context.Background(), pcs))
	fits := held(ns)
	fits.Name = "fits"
	fits.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
	require.NoError(t, k8s().Create(context.Background(), fits))
	require.Eventually(t, func() bool {
		out, _ = plugin(t, "status", "pcs/fits", "-n", ns)
		return strings.Count(out, "Running, ready") == 3 && !strings.Contains(out, " — ") &&
			strings.Contains(out, "PodCliqueSet "+ns+"/fits: 1/1 replicas available")
	}, time.Minute, time.Second, "never all running:\n%s", out)
}

func TestPluginErrorsSayWhatToDo(t *testing.T) {
	out, err := plugin(t, "status", "pcs/nope", "-n", "default")
	require.Error(t, err)
	assert.Contains(t, out, "PodCliqueSet default/nope does not exist")

	kubeconfig, err := cluster.Current.KubeconfigFor("someone-without-rbac")
	require.NoError(t, err)
	out, err = pluginAs(t, kubeconfig, "status", "pcs/inference", "-n", "default")
	require.Error(t, err)
	assert.Contains(t, out, "you may not list or get PodCliqueSets in namespace default: ask for read access to it (RBAC)")

	out, err = plugin(t, "status", "deployment/x")
	require.Error(t, err)
	assert.Contains(t, out, `kind "deployment" is not one of`)
}
