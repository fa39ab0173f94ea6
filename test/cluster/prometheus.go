package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubegrove/grove/test/toolpath"
)

// MonitoringDir is the shipped monitoring component: the PrometheusRule whose groups the local
// Prometheus evaluates and the Grafana dashboard whose queries the monitoring e2e runs.
const MonitoringDir = "deploy/components/monitoring"

// PrometheusTarget is one binary the local Prometheus scrapes: the job name the shipped
// ServiceMonitor gives it (the binary's name; backend-controller-<backend> for a backend) and its
// plain loopback /metrics URL.
type PrometheusTarget struct {
	Job        string
	MetricsURL string
}

// PrometheusOptions says what the local Prometheus scrapes and how fast.
type PrometheusOptions struct {
	Targets []PrometheusTarget
	// Interval is the scrape and rule evaluation interval (default 15s).
	Interval time.Duration
	// AlertFor, when set, replaces every alert's `for` of the shipped rules, so a test sees an
	// alert fire within seconds of its cause; the shipped durations are what promtool's rule
	// tests check.
	AlertFor time.Duration
}

// Prometheus is the pinned Prometheus (make tools builds it) running beside the cluster.
type Prometheus struct {
	// URL is its HTTP address (API and UI).
	URL string
	// RulesPath is the rule file it evaluates: the shipped PrometheusRule's spec.groups.
	RulesPath string
	// API queries it.
	API promv1.API
}

// StartPrometheus runs the pinned Prometheus against opts.Targets with the shipped alerting rules
// and waits until it is ready. It stops with the cluster; its data lives in the cluster's folder.
func (c *Cluster) StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	if opts.Interval == 0 {
		opts.Interval = 15 * time.Second
	}
	rulesPath, err := WritePrometheusRules(filepath.Join(c.dir, "prometheus-rules.yaml"), opts.AlertFor)
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(c.dir, "prometheus.yaml")
	config, err := prometheusConfig(opts, rulesPath)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return nil, err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	address := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	p, err := c.start("prometheus", "prometheus",
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(c.dir, "prometheus-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", ports[0]))
	if err != nil {
		return nil, err
	}
	p.ready = func(ctx context.Context) (bool, error) {
		resp, err := http.Get(address + "/-/ready") //nolint:gosec // loopback probe
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	if err := waitUntil(ctx, "prometheus /-/ready", time.Minute, []*process{p}, p.ready); err != nil {
		return nil, err
	}
	client, err := promapi.NewClient(promapi.Config{Address: address})
	if err != nil {
		return nil, err
	}
	return &Prometheus{URL: address, RulesPath: rulesPath, API: promv1.NewAPI(client)}, nil
}

// WritePrometheusRules writes the shipped PrometheusRule's spec.groups to path as a Prometheus
// rule file, every alert's `for` replaced by alertFor when it is not 0, and returns path.
func WritePrometheusRules(path string, alertFor time.Duration) (string, error) {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, MonitoringDir, "prometheusrule.yaml"))
	if err != nil {
		return "", err
	}
	var rule struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		return "", fmt.Errorf("reading the shipped PrometheusRule: %w", err)
	}
	if len(rule.Spec.Groups) == 0 {
		return "", fmt.Errorf("the shipped PrometheusRule has no spec.groups")
	}
	if alertFor > 0 {
		for _, g := range rule.Spec.Groups {
			rules, _ := g["rules"].([]any)
			for _, r := range rules {
				if m, ok := r.(map[string]any); ok && m["alert"] != nil {
					m["for"] = alertFor.String()
				}
			}
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, out, 0o600)
}

// prometheusConfig scrapes each target as its own job, as the ServiceMonitor labels them.
func prometheusConfig(opts PrometheusOptions, rulesPath string) ([]byte, error) {
	var jobs []map[string]any
	for _, t := range opts.Targets {
		u, err := url.Parse(t.MetricsURL)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Job, err)
		}
		jobs = append(jobs, map[string]any{
			"job_name":       t.Job,
			"scheme":         u.Scheme,
			"metrics_path":   u.Path,
			"static_configs": []any{map[string]any{"targets": []string{u.Host}}},
		})
	}
	return yaml.Marshal(map[string]any{
		"global": map[string]any{
			"scrape_interval":     opts.Interval.String(),
			"evaluation_interval": opts.Interval.String(),
		},
		"rule_files":     []string{rulesPath},
		"scrape_configs": jobs,
	})
}

// WaitTargetsUp waits until Prometheus has scraped every one of its targets successfully.
func (p *Prometheus) WaitTargetsUp(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var down []string
	for {
		targets, err := p.API.Targets(ctx)
		if err == nil {
			down = down[:0]
			for _, t := range targets.Active {
				if t.Health != "up" {
					down = append(down, fmt.Sprintf("%s (%s)", t.ScrapeURL, t.LastError))
				}
			}
			if len(targets.Active) > 0 && len(down) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("prometheus: targets not up within %s: %v", timeout, down)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
