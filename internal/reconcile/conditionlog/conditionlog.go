// Package conditionlog logs the condition transitions a status write recorded, so the log of a
// binary tells, for every object it reconciles, when and why a condition changed.
package conditionlog

import (
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Transitions logs each condition of after whose status or reason differs from before (V(0)), and
// each one only reworded (V(1)).
func Transitions(log logr.Logger, before, after []metav1.Condition) {
	for _, c := range after {
		old := meta.FindStatusCondition(before, c.Type)
		switch {
		case old == nil || old.Status != c.Status || old.Reason != c.Reason:
			log.Info("condition changed", "type", c.Type, "status", c.Status, "reason", c.Reason, "message", c.Message)
		case old.Message != c.Message:
			log.V(1).Info("condition message changed", "type", c.Type, "status", c.Status, "reason", c.Reason, "message", c.Message)
		}
	}
}
