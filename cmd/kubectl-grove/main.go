// Command kubectl-grove is the kubectl plugin of this project (`kubectl grove …`): render shows
// what a PodCliqueSet or TrainJob becomes before it is applied, with the binaries' own code;
// status and why show, against a cluster, what runs and what waits for what.
package main

import (
	"fmt"
	"os"

	"github.com/kubegrove/grove/cmd/kubectl-grove/cli"
)

func main() {
	if err := cli.New(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
