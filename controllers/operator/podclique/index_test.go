package podclique

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestDependentsAreTheCliquesThatStartAfterTheUpdatedOne(t *testing.T) {
	clique := func(name, startsAfter string) *grovev1alpha1.PodClique {
		b := builders.PodClique("ns", name)
		if startsAfter != "" {
			b.StartsAfter(strings.Split(startsAfter, ",")...)
		}
		return b.Obj()
	}
	other := clique("w-0-b", "w-0-a")
	other.Namespace = "elsewhere"
	c := fakeClient(t).WithObjects(
		clique("w-0-a", ""), clique("w-0-b", "w-0-a"), clique("w-0-c", "w-0-x,w-0-a"), clique("w-0-d", "w-0-b"), other,
	).Build()
	r := &Reconciler{Client: c}
	var got []string
	for _, req := range r.dependents(context.Background(), clique("w-0-a", "")) {
		got = append(got, req.Name)
	}
	assert.ElementsMatch(t, []string{"w-0-b", "w-0-c"}, got, "direct dependents in the namespace only")
	assert.Empty(t, r.dependents(context.Background(), clique("w-0-d", "")), "a clique nothing starts after")
}
