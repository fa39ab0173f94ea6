package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// process is one component of the local cluster, logging to its own file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
	// binary, args and env are what the process was started with, so it can be started again.
	binary string
	args   []string
	env    []string
	// ready, if set, tells when the component serves again after a (re)start.
	ready func(context.Context) (bool, error)
	// retired is set when the process was stopped on purpose (Process.Stop): RestartExited and
	// Supervise start again only what exited on its own.
	retired atomic.Bool
}

// startProcess runs binary in its own process group (so Stop kills anything it forks) with a
// parent-death signal (so a killed test leaves no orphans), logging to <logDir>/<name>.log.
func startProcess(name, binary, logDir string, args []string, env ...string) (*process, error) {
	return launch(name, binary, filepath.Join(logDir, name+".log"), false, args, env)
}

// again starts a new process from the same binary, flags and environment, appending to the same
// log (one log per component tells its whole story across restarts).
func (p *process) again() (*process, error) {
	np, err := launch(p.name, p.binary, p.logPath, true, p.args, p.env)
	if err != nil {
		return nil, err
	}
	np.ready = p.ready
	return np, nil
}

func launch(name, binary, logPath string, appendLog bool, args, env []string) (*process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendLog {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(logPath, flags, 0o644)
	if err != nil {
		return nil, err
	}
	if appendLog {
		fmt.Fprintf(logFile, "=== restarted by the test at %s\n", time.Now().Format(time.RFC3339Nano))
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{}), binary: binary, args: args, env: env}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// kill sends SIGKILL to the process group, as a crash would, and waits for the end.
func (p *process) kill() {
	if done, _ := p.exited(); !done {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// exited reports whether the process has ended, with its error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after the grace period.
func (p *process) stop(grace time.Duration) {
	if done, _ := p.exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail returns the last lines of the process's log.
func (p *process) tail(lines int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// waitUntil polls ok until it returns true, the context ends, or one of the watched processes
// exits (a crashed component fails fast instead of timing out).
func waitUntil(ctx context.Context, what string, timeout time.Duration, procs []*process, ok func(context.Context) (bool, error)) error {
	var lastErr, exited error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if done, err := p.exited(); done {
				exited = fmt.Errorf("%s exited while waiting for %s: %v\n--- %s log tail ---\n%s", p.name, what, err, p.name, p.tail(30))
				return false, exited
			}
		}
		done, err := ok(ctx)
		if err != nil {
			lastErr = err
		}
		return done, nil
	})
	switch {
	case exited != nil:
		return exited
	case err != nil:
		return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
	}
	return nil
}

// Process is a process a test started on the cluster (an operator binary), stopped with the
// cluster unless stopped or killed first.
type Process struct {
	p *process
	// WebhookHostPort is where a project binary (StartBinary) serves admission, else "".
	WebhookHostPort string
	// ConfigPath is the OperatorConfiguration file of a project binary (StartBinary), else "".
	ConfigPath string
	// TrainerStatusHostPort is where the trainer-controller serves TrainJob progress reports
	// (server.trainerStatus, on in every StartBinary configuration), else "".
	TrainerStatusHostPort string
	// MetricsURL is the /metrics address of a project binary (StartBinary), else "".
	MetricsURL string
	// HealthzURL is the /healthz (liveness) address of a project binary (StartBinary), else "".
	HealthzURL string
	// readyURL is the /readyz address of a project binary (StartBinary), else "".
	readyURL string
}

// RestartBinary starts the project binary p ran again, after it exited (killed or crashed), as a
// Deployment's kubelet would: same identity, configuration file and ports — so a webhook
// registered by URL reaches the new process — logging to logName.
func (c *Cluster) RestartBinary(p *Process, logName string) (*Process, error) {
	if done, _ := p.Exited(); !done {
		return nil, fmt.Errorf("%s is still running: kill or stop it first", p.p.name)
	}
	if p.readyURL == "" {
		return nil, fmt.Errorf("%s was not started by StartBinary", p.p.name)
	}
	np, err := c.startProcessWithEnv(logName, p.p.binary, p.p.env, p.p.args...)
	if err != nil {
		return nil, err
	}
	np.WebhookHostPort, np.MetricsURL, np.readyURL = p.WebhookHostPort, p.MetricsURL, p.readyURL
	return np, nil
}

// WaitReady waits until a project binary reports ready on /readyz, or fails if it exits.
func (p *Process) WaitReady(timeout time.Duration) error {
	err := waitUntil(context.Background(), p.p.name+" to report ready", timeout, []*process{p.p}, func(context.Context) (bool, error) {
		resp, err := http.Get(p.readyURL) //nolint:gosec // loopback probe
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if done, _ := p.Exited(); err != nil && !done {
		return fmt.Errorf("%w\n%s", err, p.LogTail(20)) // an exit quoted its log already
	}
	return err
}

// StartProcess runs a binary next to the cluster, logging to <Dir>/<name>.log.
func (c *Cluster) StartProcess(name, binary string, args ...string) (*Process, error) {
	return c.startProcessWithEnv(name, binary, nil, args...)
}

// startProcessWithEnv is StartProcess with extra environment variables.
func (c *Cluster) startProcessWithEnv(name, binary string, env []string, args ...string) (*Process, error) {
	p, err := startProcess(name, binary, c.dir, args, env...)
	if err != nil {
		return nil, err
	}
	if err := c.addProc(p, false); err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// Stop sends SIGTERM and waits (SIGKILL after 10s). A process stopped so is not started again by
// RestartExited or Supervise: the caller meant it.
func (p *Process) Stop() {
	p.p.retired.Store(true)
	p.p.stop(10 * time.Second)
}

// Kill sends SIGKILL, as a crash would, and waits for the process to end.
func (p *Process) Kill() { p.p.kill() }

// Pid is the operating-system process id, for resource figures (/proc/<pid>).
func (p *Process) Pid() int { return p.p.cmd.Process.Pid }

// Exited reports whether the process ended, and how.
func (p *Process) Exited() (bool, error) { return p.p.exited() }

// LogTail returns the end of the process's log.
func (p *Process) LogTail(lines int) string { return p.p.tail(lines) }

// Log returns the process's whole log (every incarnation's, for a restarted process).
func (p *Process) Log() string {
	data, _ := os.ReadFile(p.p.logPath)
	return string(data)
}
