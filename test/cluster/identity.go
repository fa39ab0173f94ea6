package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigFor writes a kubeconfig for a user authenticated by a client certificate that the
// cluster's CA signs; the API server takes the user name from it and the groups as given. Each
// project binary runs with its own identity this way, so RBAC is exercised for real.
func (c *Cluster) KubeconfigFor(user string, groups ...string) (string, error) {
	kp, err := c.ca.Client(user, groups...)
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.apiURL, CertificateAuthorityData: c.ca.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	// Written to a temporary file and renamed: binaries of one identity (the backend-controller
	// of each backend) start concurrently, and one must never read the file while another
	// rewrites it (an empty kubeconfig stopped the volcano backend-controller at start).
	path := filepath.Join(c.dir, "kubeconfig-"+sanitize(user))
	tmp, err := os.CreateTemp(c.dir, ".kubeconfig-*")
	if err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*cfg, tmp.Name()); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// RESTConfigFor returns a client configuration for a user, like KubeconfigFor.
func (c *Cluster) RESTConfigFor(user string, groups ...string) (*rest.Config, error) {
	path, err := c.KubeconfigFor(user, groups...)
	if err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

func sanitize(s string) string {
	out := []rune(s)
	for i, r := range out {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '.' {
			out[i] = '_'
		}
	}
	return string(out)
}

func writeFile(dir, name string, data []byte) (string, error) {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", name, err)
	}
	return path, nil
}
