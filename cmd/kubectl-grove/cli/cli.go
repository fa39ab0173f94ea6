// Package cli holds kubectl grove's commands, so tests run them as a user would.
package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// New is the root command writing to out and errOut.
func New(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-grove",
		Short:         "See what a PodCliqueSet or TrainJob becomes, and why it waits",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(newRenderCommand(), newStatusCommand(), newWhyCommand())
	return root
}
