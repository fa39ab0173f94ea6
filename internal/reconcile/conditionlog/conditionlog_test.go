package conditionlog

import (
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTransitionsLogsChangedConditionsOnly(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	before := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Waiting", Message: "a"},
		{Type: "Stable", Status: metav1.ConditionTrue, Reason: "Fine", Message: "same"},
		{Type: "Worded", Status: metav1.ConditionTrue, Reason: "Fine", Message: "old words"},
	}
	after := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "AllReady", Message: "b"},
		{Type: "Stable", Status: metav1.ConditionTrue, Reason: "Fine", Message: "same"},
		{Type: "Worded", Status: metav1.ConditionTrue, Reason: "Fine", Message: "new words"},
		{Type: "New", Status: metav1.ConditionFalse, Reason: "Appeared", Message: "c"},
	}
	Transitions(log, before, after)
	if assert.Len(t, lines, 3) {
		assert.Contains(t, lines[0], `"type"="Ready" "status"="True" "reason"="AllReady"`)
		assert.Contains(t, lines[1], `"msg"="condition message changed" "type"="Worded"`)
		assert.Contains(t, lines[2], `"type"="New"`)
	}
}
