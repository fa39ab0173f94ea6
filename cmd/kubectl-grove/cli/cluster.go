package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/cmd/kubectl-grove/render"
	"github.com/kubegrove/grove/cmd/kubectl-grove/status"
)

// clusterFlags are kubectl's own: --kubeconfig, --context, -n and the rest.
type clusterFlags struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
}

func addClusterFlags(cmd *cobra.Command) *clusterFlags {
	f := &clusterFlags{loading: clientcmd.NewDefaultClientConfigLoadingRules(), overrides: &clientcmd.ConfigOverrides{}}
	cmd.Flags().StringVar(&f.loading.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file")
	clientcmd.BindOverrideFlags(f.overrides, cmd.Flags(), clientcmd.RecommendedConfigOverrideFlags(""))
	return f
}

// client connects as kubectl would and returns the namespace to use.
func (f *clusterFlags) client() (client.Client, string, error) {
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.loading, f.overrides)
	ns, _, err := cfg.Namespace()
	if err != nil {
		return nil, "", err
	}
	rest, err := cfg.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("no cluster to talk to: %w", err)
	}
	c, err := client.New(rest, client.Options{Scheme: render.Scheme()})
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// parseRef splits kind/name; kinds are spelt as kubectl spells them.
func parseRef(arg string, kinds map[string]string) (kind, name string, err error) {
	k, n, ok := strings.Cut(arg, "/")
	if !ok || n == "" {
		return "", "", fmt.Errorf("%q: give KIND/NAME, e.g. pcs/inference", arg)
	}
	kind, known := kinds[strings.ToLower(k)]
	if !known {
		return "", "", fmt.Errorf("%q: kind %q is not one of %s", arg, k, strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
	return kind, n, nil
}

var statusKinds = map[string]string{
	"pcs": "PodCliqueSet", "podcliqueset": "PodCliqueSet", "podcliquesets": "PodCliqueSet", "podcliqueset.grove.io": "PodCliqueSet",
	"trainjob": "TrainJob", "trainjobs": "TrainJob", "trainjob.trainer.kubeflow.org": "TrainJob",
}

func newStatusCommand() *cobra.Command {
	var watch bool
	var interval time.Duration
	var flags *clusterFlags
	cmd := &cobra.Command{
		Use:   "status pcs/NAME | trainjob/NAME",
		Short: "Draw a workload's replicas, scaling groups, PodCliques, pods and PodGangs, and why anything waits",
		Example: `  kubectl grove status pcs/inference
  kubectl grove status trainjob/mnist -n team-a --watch`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseRef(args[0], statusKinds)
			if err != nil {
				return err
			}
			c, ns, err := flags.client()
			if err != nil {
				return err
			}
			draw := func(w io.Writer) error {
				return drawStatus(cmd.Context(), c, w, kind, client.ObjectKey{Namespace: ns, Name: name})
			}
			if !watch {
				return draw(cmd.OutOrStdout())
			}
			return redraw(cmd.Context(), cmd.OutOrStdout(), interval, draw)
		},
	}
	flags = addClusterFlags(cmd)
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "redraw until interrupted")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often --watch redraws")
	return cmd
}

func drawStatus(ctx context.Context, c client.Reader, w io.Writer, kind string, key client.ObjectKey) error {
	if kind == "TrainJob" {
		v, err := status.ReadTrainJob(ctx, c, key)
		if err != nil {
			return err
		}
		status.PrintTrainJob(w, v)
		return nil
	}
	v, err := status.ReadPodCliqueSet(ctx, c, key)
	if err != nil {
		return err
	}
	status.PrintPodCliqueSet(w, v)
	return nil
}

// redraw clears the terminal and draws again every interval until the context ends; a read that
// fails is shown in place of the tree and retried.
func redraw(ctx context.Context, w io.Writer, interval time.Duration, draw func(io.Writer) error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		var b strings.Builder
		if err := draw(&b); err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
		fmt.Fprintf(w, "\033[H\033[2J%s\n(every %s, %s; Ctrl-C stops)\n", b.String(), interval, time.Now().Format("15:04:05"))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func newWhyCommand() *cobra.Command {
	var flags *clusterFlags
	cmd := &cobra.Command{
		Use:     "why pod/NAME",
		Short:   "Follow a pod to what holds it: its gate, parent cliques, PodGang, backend and PodCliqueSet",
		Example: `  kubectl grove why pod/inference-0-prefill-0-worker-1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, name, err := parseRef(args[0], map[string]string{"pod": "Pod", "pods": "Pod", "po": "Pod"})
			if err != nil {
				return err
			}
			c, ns, err := flags.client()
			if err != nil {
				return err
			}
			return status.Why(cmd.Context(), c, cmd.OutOrStdout(), client.ObjectKey{Namespace: ns, Name: name})
		},
	}
	flags = addClusterFlags(cmd)
	return cmd
}
