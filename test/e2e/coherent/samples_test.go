package coherent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// applySample creates the objects of testdata/file unchanged but for the namespace, and returns
// the name of its PodCliqueSet (each sample has one).
func applySample(t *testing.T, ns, file string) string {
	t.Helper()
	objs, err := apiserver.ReadManifests(filepath.Join("testdata", file))
	require.NoError(t, err)
	name := ""
	for _, o := range objs {
		o.SetNamespace(ns)
		require.NoError(t, k8s().Create(context.Background(), o), "creating %s %s of %s", o.GetKind(), o.GetName(), file)
		if o.GetKind() == "PodCliqueSet" {
			name = o.GetName()
		}
	}
	require.NotEmpty(t, name, "%s holds a PodCliqueSet", file)
	return name
}

// TestUpstreamCoherentSamplesRunUnchangedAndUpdate applies upstream Grove's Coherent samples
// (testdata, vendored unchanged), each in a namespace of its own. Each runs, every pod Ready, its
// replica's PodGangMap and PodGangs laid out by epoch. The three update cases then get the change
// their header describes, and the update ends with every budget kept at every pod event, the
// changed components in proportion, the unchanged components' pods kept (by UID) and every pod at
// its newest template. Upstream's two e2e workloads (kai-scheduler, upstream's node label) only
// run: their headers state no update.
func TestUpstreamCoherentSamplesRunUnchangedAndUpdate(t *testing.T) {
	for _, tc := range []struct {
		file string
		// changed are the cliques whose template the case's header says the update changes; none
		// for a workload that only runs.
		changed []string
	}{
		// "Case 1: All PCLQs (frontend, prefill, decode) are updated."
		{"coherent-update-case1.yaml", []string{"frontend", "pleader", "pworker", "dleader", "dworker"}},
		// "Case 2: Only Prefill and Decode PCSGs are updated."
		{"coherent-update-case2.yaml", []string{"pleader", "pworker", "dleader", "dworker"}},
		// "Case 3: Only standalone PodClique(s) are updated."
		{"coherent-update-case3.yaml", []string{"frontend"}},
		{"workload-mvu-test1.yaml", nil},
		{"workload-coherent.yaml", nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			ns := cluster.Current.NewNamespace(t)
			name := applySample(t, ns, tc.file)
			pcs := get(t, ns, name)
			waitAllReady(t, pcs, 4*time.Minute)
			assertGangLayout(t, pcs)
			if len(tc.changed) == 0 {
				return
			}
			u := startUpdate(t, get(t, ns, name), true, tc.changed...)
			u.finish(t, 6*time.Minute)
		})
	}
}
