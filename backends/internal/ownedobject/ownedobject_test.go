package ownedobject

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The tests keep a ConfigMap owned by another ConfigMap: any kind does, and these need no scheme
// of the project's.

func owner() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "owner-uid"}}
}

func wanted() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kept", Labels: map[string]string{"mine": "yes"}},
		Data: map[string]string{"owned": "1"}}
}

// ownsOwned: the backend owns labels and data["owned"]; data["theirs"] is the scheduler's.
var ownsOwned = Fields[*corev1.ConfigMap]{
	Same: func(have, want *corev1.ConfigMap) bool {
		return HasLabels(have, want) && have.Data["owned"] == want.Data["owned"]
	},
	Set: func(have, want *corev1.ConfigMap) {
		SetLabels(have, want)
		if have.Data == nil {
			have.Data = map[string]string{}
		}
		have.Data["owned"] = want.Data["owned"]
	},
}

// writes counts the writes a client makes.
type writes struct{ creates, updates, deletes int }

func clientWith(t *testing.T, w *writes, updateErr error, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(scheme))
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.creates++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.updates++
			if updateErr != nil {
				return updateErr
			}
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.deletes++
			return c.Delete(ctx, obj, opts...)
		},
	})
}

func stored(t *testing.T, c client.Client) *corev1.ConfigMap {
	t.Helper()
	got := &corev1.ConfigMap{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "kept"}, got))
	return got
}

func TestKeepCreatesAMissingObjectControlledByItsOwner(t *testing.T) {
	var w writes
	c := clientWith(t, &w, nil)

	done, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), ownsOwned)

	require.NoError(t, err)
	assert.Equal(t, Created, done)
	got := stored(t, c)
	assert.Equal(t, "1", got.Data["owned"])
	assert.True(t, metav1.IsControlledBy(got, owner()))
	assert.Equal(t, writes{creates: 1}, w)
}

func TestKeepWritesNothingWhenTheOwnedFieldsAreAsWanted(t *testing.T) {
	var w writes
	c := clientWith(t, &w, nil)
	_, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), ownsOwned)
	require.NoError(t, err)
	theirs := stored(t, c)
	theirs.Data["theirs"] = "scheduler's"
	theirs.Labels["their-label"] = "x"
	require.NoError(t, c.Update(context.Background(), theirs))
	w = writes{}

	done, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), ownsOwned)

	require.NoError(t, err)
	assert.Equal(t, Unchanged, done)
	assert.Equal(t, writes{}, w, "what others write on the object is no drift")
}

func TestKeepRepairsDriftInPlaceAndKeepsWhatOthersWrote(t *testing.T) {
	var w writes
	c := clientWith(t, &w, nil)
	_, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), ownsOwned)
	require.NoError(t, err)
	drifted := stored(t, c)
	drifted.Data["owned"], drifted.Data["theirs"] = "edited", "scheduler's"
	delete(drifted.Labels, "mine")
	require.NoError(t, c.Update(context.Background(), drifted))
	w = writes{}

	done, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), ownsOwned)

	require.NoError(t, err)
	assert.Equal(t, Repaired, done)
	got := stored(t, c)
	assert.Equal(t, "1", got.Data["owned"])
	assert.Equal(t, "scheduler's", got.Data["theirs"])
	assert.Equal(t, "yes", got.Labels["mine"])
	assert.Equal(t, writes{updates: 1}, w)
}

func TestKeepTakesBackAnObjectItDoesNotControl(t *testing.T) {
	var w writes
	c := clientWith(t, &w, nil, wanted())

	done, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), ownsOwned)

	require.NoError(t, err)
	assert.Equal(t, Repaired, done)
	assert.True(t, metav1.IsControlledBy(stored(t, c), owner()))
}

func TestKeepRecreatesWhatTheAPIServerRefusesToChangeOnlyWhenAsked(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "kept", field.ErrorList{field.Forbidden(field.NewPath("data"), "immutable")})
	for _, tc := range []struct {
		name     string
		recreate bool
		want     Result
		wantErr  bool
		writes   writes
	}{
		{name: "recreated", recreate: true, want: Recreated, writes: writes{updates: 1, deletes: 1, creates: 1}},
		{name: "the refusal is the error", recreate: false, wantErr: true, writes: writes{updates: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			old := wanted()
			old.Data["owned"] = "old"
			c := clientWith(t, &w, invalid, old)
			fields := ownsOwned
			fields.Recreate = tc.recreate

			done, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), fields)

			assert.Equal(t, tc.writes, w)
			if tc.wantErr {
				require.Error(t, err)
				assert.True(t, apierrors.IsInvalid(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, done)
			assert.Equal(t, "1", stored(t, c).Data["owned"])
		})
	}
}

func TestKeepWaitsForAnObjectBeingDeleted(t *testing.T) {
	var w writes
	going := wanted()
	going.Finalizers = []string{"example.com/hold"}
	now := metav1.Now()
	going.DeletionTimestamp = &now
	c := clientWith(t, &w, nil, going)

	_, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), ownsOwned)

	require.Error(t, err)
	assert.Contains(t, err.Error(), "is being deleted")
	assert.Equal(t, writes{}, w)
}

func TestKeepReportsAWriteTheAPIServerDidNotStoreAsWanted(t *testing.T) {
	var w writes
	c := clientWith(t, &w, nil)
	dropped := errors.New("dropped")
	fields := ownsOwned
	var seen *corev1.ConfigMap
	fields.Verify = func(stored, _ *corev1.ConfigMap) error {
		seen = stored
		return dropped
	}

	_, err := Keep(context.Background(), c, owner(), &corev1.ConfigMap{}, wanted(), fields)

	assert.ErrorIs(t, err, dropped)
	require.NotNil(t, seen)
	assert.NotEmpty(t, seen.ResourceVersion, "Verify sees the object as the API server stored it")
}
