// Package servedapis tells whether the API server serves the kinds a binary needs, so the binary
// refuses to start with a message saying what to install or enable (a scheduler's API for a
// backend-controller, NVIDIA's ComputeDomain for MNNVL, Kueue's Workload) instead of failing on
// every object.
package servedapis

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Check returns an error naming the first kind the mapper does not know, followed by help.
func Check(mapper meta.RESTMapper, help string, kinds ...schema.GroupVersionKind) error {
	for _, gvk := range kinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				return fmt.Errorf("%s is not served: %s", gvk, help)
			}
			return fmt.Errorf("looking up %s: %w", gvk, err)
		}
	}
	return nil
}
