package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/kubegrove/grove/test/cluster"
)

// configTemplate is the OperatorConfiguration of the local run; the *_PORT placeholders get a
// free port per binary.
const configTemplate = `apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logFormat: text
leaderElection:
  resourceNamespace: grove-system
server:
  metrics: {bindAddress: 127.0.0.1, port: METRICS_PORT}
  healthProbes: {bindAddress: 127.0.0.1, port: HEALTH_PORT}
  webhooks: {bindAddress: 127.0.0.1, port: WEBHOOK_PORT, serverCertDir: %s}
  # Kubeflow Trainer's status server (the trainer-controller), as deployed.
  trainerStatus: {enabled: true, bindAddress: 127.0.0.1, port: STATUS_PORT, serverCertDir: %s}
certManagement:
  mode: manual
`

// writeConfig returns the configuration template with the webhook's certificate written (signed
// by the cluster CA) and enough free ports for the four binaries.
func writeConfig(c *cluster.Cluster, dir string, withKueue, plain bool, kueueExtra string) (string, []int, error) {
	certDir := filepath.Join(dir, "webhook-certs")
	serving, err := c.CA().Serving("127.0.0.1", "localhost")
	if err != nil {
		return "", nil, err
	}
	if err := serving.WriteTLS(certDir); err != nil {
		return "", nil, err
	}
	statusDir := filepath.Join(dir, "trainer-status-certs")
	status, err := c.CA().Serving(cluster.TrainerStatusDNSName, "127.0.0.1")
	if err != nil {
		return "", nil, err
	}
	if err := status.WriteTLS(statusDir); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(statusDir, "ca.crt"), c.CAPEM(), 0o600); err != nil {
		return "", nil, err
	}
	// Three listeners per binary, then one status server port per binary.
	ports := make([]int, 16)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		defer l.Close()
	}
	config := fmt.Sprintf(configTemplate, certDir, statusDir)
	if withKueue {
		config += "kueue:\n  enabled: true\n" + kueueExtra
	}
	if !plain {
		// As deploy/overlays/kube-scheduler-gang deploys it: each PodGang placed as one gang.
		config += cluster.GangSchedulerConfig
	}
	return config, ports, nil
}

func waitReady(ctx context.Context, name string, port int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
