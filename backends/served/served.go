// Package served tells whether the API server serves the kinds a backend writes, so a
// backend-controller refuses to start with a message saying what to install or enable instead of
// failing on every PodGang.
package served

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
