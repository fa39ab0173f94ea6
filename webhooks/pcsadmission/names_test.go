package pcsadmission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestNewPodCliqueSetWhoseChildrenWouldShareNamesIsRefusedOrWarned(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	withGroup := func(name string, groupReplicas int32) *grovev1alpha1.PodCliqueSet {
		return builders.PodCliqueSet("ns", name).Clique("x", 1).ScalingGroup("g", groupReplicas, 1, "x").Obj()
	}
	standalone := func(name string, replicas int32, clique string) *grovev1alpha1.PodCliqueSet {
		return builders.PodCliqueSet("ns", name).Replicas(replicas).Clique(clique, 1).Obj()
	}
	for _, tc := range []struct {
		name        string
		existing    *grovev1alpha1.PodCliqueSet
		created     *grovev1alpha1.PodCliqueSet
		wantErr     []string
		wantWarning string
	}{
		{"a's scaling group and a-0-g's cliques share names: refused", withGroup("a", 3), standalone("a-0-g", 2, "x"),
			[]string{"metadata.name", "PodCliqueSet a already gives its own", "PodClique a-0-g-0-x", "PodGang a-0-g-0"}, ""},
		{"the same two, the other way round: refused", standalone("a-0-g", 2, "x"), withGroup("a", 3),
			[]string{"PodCliqueSet a-0-g already gives its own", "PodClique a-0-g-1-x"}, ""},
		{"names that only scaling could share: a warning", withGroup("a", 1), standalone("a-0-g", 1, "y"), nil, "can be given the same names once either is scaled"},
		{"unrelated names: nothing", withGroup("a", 3), standalone("b-0-g", 2, "x"), nil, ""},
		{"too many names to list at admission: a warning, not a listing of billions", withGroup("a", 3),
			builders.PodCliqueSet("ns", "a-0-g").Replicas(10000).Clique("x", 1).Clique("y", 1).ScalingGroup("h", 10000, 1, "x", "y").Obj(),
			nil, "too many to compare at admission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Validator{Backends: kaiTeamA, PodCliqueSets: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.existing).Build()}
			errs, warnings, err := v.nameOverlap(context.Background(), tc.created)
			require.NoError(t, err)
			if tc.wantErr == nil {
				assert.Empty(t, errs)
			} else if assert.Len(t, errs, 1) {
				for _, want := range tc.wantErr {
					assert.Contains(t, errs[0].Error(), want)
				}
			}
			if tc.wantWarning == "" {
				assert.Empty(t, warnings)
			} else if assert.Len(t, warnings, 1) {
				assert.Contains(t, warnings[0], tc.wantWarning)
			}
		})
	}
}
