// Command grove-operator reconciles PodCliqueSets, PodCliques and PodCliqueScalingGroups into
// pods, Services and PodGangs.
package main

import "github.com/kubegrove/grove/internal/app"

func main() {
	app.Main(app.Options{Name: "grove-operator", LeaderElection: true})
}
