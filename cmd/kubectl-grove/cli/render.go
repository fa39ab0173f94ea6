package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/render"
)

// errNotRendered makes the command fail when a workload was refused or could not be rendered;
// why is already printed.
var errNotRendered = errors.New("at least one workload was not rendered")

func newRenderCommand() *cobra.Command {
	var files []string
	var configPath, output, namespace string
	var composite bool
	cmd := &cobra.Command{
		Use:   "render -f FILE [-f FILE…]",
		Short: "Print what the binaries make of manifests, without a cluster",
		Long: `render applies grove-webhook's defaulting and validation to every PodCliqueSet and TrainJob in
the files, then prints what grove-operator, the backend-controller and the trainer-controller
would create: PodCliques, PodCliqueScalingGroups, PodGangs, headless Services, autoscalers,
pods (names, hostnames, environment, scheduling gates) and the scheduler backend's objects.
A TrainJob's runtime and a ClusterTopologyBinding are read from the files too. --config takes
the OperatorConfiguration the binaries run with (its scheduler profiles decide the backend).`,
		Example: `  kubectl grove render -f podcliqueset.yaml
  kubectl grove render -f trainjob.yaml -f runtime.yaml -o yaml
  kubectl grove render -f pcs.yaml --config operator-config.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.OutOrStdout(), cmd.ErrOrStderr(), files, configPath, output, namespace, composite)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file (YAML or JSON, several documents); - reads standard input")
	cmd.Flags().StringVar(&configPath, "config", "", "OperatorConfiguration file (default: the built-in defaults)")
	cmd.Flags().StringVarP(&output, "output", "o", "tree", "tree or yaml")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of objects that name none")
	cmd.Flags().BoolVar(&composite, "composite-pod-groups", false,
		"render kube-scheduler gangs as on a cluster serving CompositePodGroup (one PodGroup per pod group, each with its own minimum)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runRender(out, errOut io.Writer, files []string, configPath, output, namespace string, composite bool) error {
	if output != "tree" && output != "yaml" {
		return fmt.Errorf("--output %q: must be tree or yaml", output)
	}
	cfg, err := configv1alpha1.Load(configPath)
	if err != nil {
		return err
	}
	in := &render.Input{}
	for _, f := range files {
		if err := decodeFile(in, f, namespace); err != nil {
			return err
		}
	}
	if len(in.PodCliqueSets)+len(in.TrainJobs) == 0 {
		return errors.New("the files hold no PodCliqueSet and no TrainJob")
	}
	r, err := render.New(cfg)
	if err != nil {
		return err
	}
	if err := r.CompositePodGroups(composite); err != nil {
		return err
	}
	workloads := r.Render(in)
	for _, skipped := range in.Skipped {
		fmt.Fprintln(errOut, "skipped:", skipped)
	}
	if output == "yaml" {
		return render.PrintYAML(out, workloads)
	}
	render.PrintTree(out, workloads)
	for _, w := range workloads {
		if w.Failed() != nil {
			return errNotRendered
		}
	}
	return nil
}

func decodeFile(in *render.Input, path, namespace string) error {
	if path == "-" {
		return render.Decode(in, os.Stdin, "standard input", namespace)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // read only
	return render.Decode(in, f, path, namespace)
}
