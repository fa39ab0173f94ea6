package builders

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// EnvOf is a container's env as tests compare it: a plain value by name, a downward-API
// variable as "fieldRef:<path>", any other valueFrom as "valueFrom:<source>".
func EnvOf(c corev1.Container) map[string]string {
	out := make(map[string]string, len(c.Env))
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			out[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom != nil:
			out[e.Name] = fmt.Sprintf("valueFrom:%v", e.ValueFrom)
		default:
			out[e.Name] = e.Value
		}
	}
	return out
}
