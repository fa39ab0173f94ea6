// Command trainer-controller turns TrainJobs into PodCliqueSets or JobSets and enforces their
// deadlines and TTLs.
package main

import (
	"k8s.io/apimachinery/pkg/runtime"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/kubegrove/grove/internal/app"
)

func main() {
	app.Main(app.Options{
		Name:           "trainer-controller",
		LeaderElection: true,
		AddToScheme:    []func(*runtime.Scheme) error{jobsetv1alpha2.AddToScheme},
	})
}
