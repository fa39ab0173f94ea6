// Command kubectl-grove is the kubectl plugin of this project (`kubectl grove …`): render shows
// what a PodCliqueSet or TrainJob becomes before it is applied, with the binaries' own code.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-grove",
		Short:         "See what a PodCliqueSet or TrainJob becomes, and why it waits",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRenderCommand())
	return root
}
