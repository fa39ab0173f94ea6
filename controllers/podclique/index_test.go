package podclique

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/children"
)

// withIndexes gives a fake client (its scheme set) the indexes the manager's cache has.
func withIndexes(b *fake.ClientBuilder) *fake.ClientBuilder {
	for _, i := range indexes {
		b = b.WithIndex(i.obj, i.field, i.extract)
	}
	return b
}

func TestDependentsAreTheCliquesThatStartAfterTheUpdatedOne(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	clique := func(name, startsAfter string) *grovev1alpha1.PodClique {
		c := &grovev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		if startsAfter != "" {
			c.Annotations = map[string]string{children.AnnotationStartsAfter: startsAfter}
		}
		return c
	}
	other := clique("w-0-b", "w-0-a")
	other.Namespace = "elsewhere"
	c := withIndexes(fake.NewClientBuilder().WithScheme(scheme)).WithObjects(
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
