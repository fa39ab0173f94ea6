package podclique

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

func TestDependentsAreTheCliquesThatStartAfterTheUpdatedOne(t *testing.T) {
	clique := func(name, startsAfter string) *grovev1alpha1.PodClique {
		c := &grovev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		if startsAfter != "" {
			c.Spec.StartsAfter = strings.Split(startsAfter, ",")
		}
		return c
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
