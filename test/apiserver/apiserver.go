// Package apiserver starts a real kube-apiserver and etcd (controller-runtime envtest, with the
// binaries `make tools` built) with every CRD the project serves or talks to installed: the
// project's own, JobSet's and KAI's. Integration tests use it to prove what only a real API
// server decides: schema validation, CEL rules, defaulting, strict field validation.
package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2 "github.com/kubegrove/grove/apis/kai/v2"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/toolpath"
)

// Scheme knows every kind the project reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(grovev1alpha1.AddToScheme(s))
	utilruntime.Must(schedulerv1alpha1.AddToScheme(s))
	utilruntime.Must(trainerv1alpha1.AddToScheme(s))
	utilruntime.Must(kaiv2alpha2.AddToScheme(s))
	utilruntime.Must(kaiv2.AddToScheme(s))
	utilruntime.Must(kaiv1alpha1.AddToScheme(s))
	utilruntime.Must(jobsetv1alpha2.AddToScheme(s))
	utilruntime.Must(schedv1alpha1.AddToScheme(s))
	utilruntime.Must(volcanov1beta1.AddToScheme(s))
	return s
}

// VolcanoVersion is the Volcano release whose PodGroup and Queue CRDs tests install (its module
// is read for them, never built).
const VolcanoVersion = "v1.14.1"

// CRDDirs returns the directories (and single files) of every CRD to install: the project's
// generated CRDs, JobSet's and scheduler-plugins' from the module cache, Volcano's PodGroup and
// Queue from its release's module and KAI's generated from the project's local types
// (config/thirdparty/kai). NVIDIA's ComputeDomain (config/thirdparty/nvidia) is left out, so
// tests see how the operator behaves where it is not served; a test that needs it installs it.
func CRDDirs() ([]string, error) {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return nil, err
	}
	jobset, err := ModuleDir("sigs.k8s.io/jobset", "")
	if err != nil {
		return nil, err
	}
	plugins, err := ModuleDir("sigs.k8s.io/scheduler-plugins", "")
	if err != nil {
		return nil, err
	}
	volcano, err := ModuleDir("volcano.sh/volcano", VolcanoVersion)
	if err != nil {
		return nil, err
	}
	volcanoCRDs := filepath.Join(volcano, "config", "crd", "volcano", "bases")
	return []string{
		filepath.Join(root, "config", "crd", "bases"),
		filepath.Join(jobset, "config", "components", "crd", "bases"),
		filepath.Join(root, "config", "thirdparty", "kai"),
		filepath.Join(plugins, "config", "crd", "bases"),
		filepath.Join(volcanoCRDs, "scheduling.volcano.sh_podgroups.yaml"),
		filepath.Join(volcanoCRDs, "scheduling.volcano.sh_queues.yaml"),
	}, nil
}

// ModuleDir returns where a module lives in the module cache. With an empty version it is the
// version go.mod requires; otherwise that exact version is downloaded if needed, which lets tests
// read files of modules the project does not import (Kubeflow Trainer's shipped runtimes).
func ModuleDir(path, version string) (string, error) {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return "", err
	}
	var cmd *exec.Cmd
	if version == "" {
		cmd = exec.Command("go", "list", "-m", "-json", path)
	} else {
		cmd = exec.Command("go", "mod", "download", "-json", path+"@"+version)
	}
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s %s: %v: %s", path, version, err, strings.TrimSpace(stderr.String()))
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("locating module %s %s: no directory in %q", path, version, out)
	}
	return mod.Dir, nil
}

// Env is a running API server with the project's CRDs installed.
type Env struct {
	env    *envtest.Environment
	Config *rest.Config
	Client client.Client
}

// Start starts etcd and kube-apiserver and installs every CRD.
func Start() (*Env, error) {
	binDir, err := toolpath.BinDir()
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := toolpath.Bin(name); err != nil {
			return nil, err
		}
	}
	dirs, err := CRDDirs()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     dirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
	}
	cfg, err := env.Start()
	if err != nil {
		// envtest leaves etcd and kube-apiserver running when installing CRDs fails.
		_ = env.Stop()
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{env: env, Config: cfg, Client: c}, nil
}

// AdminKubeconfig returns a kubeconfig of a system:masters user, for processes the test starts.
func (e *Env) AdminKubeconfig() ([]byte, error) {
	user, err := e.env.AddUser(envtest.User{Name: "test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return user.KubeConfig()
}

// KubeconfigFor returns a kubeconfig of user with groups, for a process that must run with only
// the permissions RBAC grants that user.
func (e *Env) KubeconfigFor(user string, groups ...string) ([]byte, error) {
	u, err := e.env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return nil, err
	}
	return u.KubeConfig()
}

// ClientFor returns a client authenticated as user with groups (system:masters gives every
// permission, so only admission can refuse it).
func (e *Env) ClientFor(user string, groups ...string) (client.Client, error) {
	u, err := e.env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return nil, err
	}
	return client.New(u.Config(), client.Options{Scheme: e.env.Scheme})
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }
