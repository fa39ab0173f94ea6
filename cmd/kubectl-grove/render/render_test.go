package render

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/test/golden"
)

const samples = "../../../config/samples/"

func renderFiles(t *testing.T, config string, files ...string) []*Workload {
	t.Helper()
	return renderFilesComposite(t, false, config, files...)
}

// renderFilesComposite renders as where CompositePodGroup is served, when composite is set.
func renderFilesComposite(t *testing.T, composite bool, config string, files ...string) []*Workload {
	t.Helper()
	cfg, err := configv1alpha1.Load(config)
	require.NoError(t, err)
	in := &Input{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, Decode(in, bytes.NewReader(data), f, "default"))
	}
	r, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, r.CompositePodGroups(composite))
	return r.Render(in)
}

func TestEverySampleRendersAsItsGoldenTree(t *testing.T) {
	cases := []struct {
		name, config string
		files        []string
		composite    bool
	}{
		{"inference", "", []string{samples + "grove_v1alpha1_podcliqueset.yaml"}, false},
		{"training", "", []string{samples + "grove_v1alpha1_podcliqueset_training.yaml"}, false},
		{"trainjob-podcliqueset", "", []string{samples + "trainer_v1alpha1_trainjob.yaml", samples + "trainer_v1alpha1_trainingruntime.yaml"}, false},
		{"trainjob-jobset", "", []string{"testdata/trainjob-jobset.yaml", samples + "trainer_v1alpha1_clustertrainingruntime.yaml"}, false},
		{"trainjob-progress", "../../../deploy/overlays/kube-scheduler/config.yaml", []string{"testdata/trainjob-jobset.yaml", samples + "trainer_v1alpha1_clustertrainingruntime.yaml"}, false},
		{"kai-topology", "testdata/kai-tas-config.yaml", []string{"testdata/kai-topology.yaml"}, false},
		{"gang-mode", "../../../deploy/overlays/kube-scheduler-gang/config.yaml", []string{samples + "grove_v1alpha1_podcliqueset.yaml"}, false},
		{"composite-gang-mode", "../../../deploy/overlays/kube-scheduler-gang/config.yaml", []string{samples + "grove_v1alpha1_podcliqueset.yaml"}, true},
		{"coscheduling", "../../../deploy/overlays/scheduler-plugins/config.yaml", []string{samples + "grove_v1alpha1_podcliqueset.yaml"}, false},
		{"volcano", "../../../deploy/overlays/volcano/config.yaml", []string{samples + "grove_v1alpha1_podcliqueset.yaml"}, false},
		{"idle", "", []string{"testdata/idle.yaml"}, false},
		{"rejected", "", []string{"testdata/rejected.yaml"}, false},
		{"schema-refused", "", []string{"testdata/schema-refused.yaml"}, false},
		{"runtime-missing", "", []string{"testdata/trainjob-jobset.yaml"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			PrintTree(&out, renderFilesComposite(t, tc.composite, tc.config, tc.files...))
			golden.Check(t, "golden/"+tc.name+".txt", out.Bytes())
		})
	}
}

func TestYAMLOutputIsEveryObjectWithItsKind(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, PrintYAML(&out, renderFiles(t, "", samples+"grove_v1alpha1_podcliqueset.yaml")))
	golden.Check(t, "golden/inference.yaml", out.Bytes())
	docs := strings.Split(out.String(), "---\n")
	kinds := map[string]int{}
	for _, d := range docs[1:] {
		for _, line := range strings.Split(d, "\n") {
			if k, ok := strings.CutPrefix(line, "kind: "); ok {
				kinds[k]++
			}
		}
	}
	assert.Equal(t, map[string]int{"Service": 1, "PodCliqueScalingGroup": 1, "PodClique": 5, "PodGang": 2, "HorizontalPodAutoscaler": 1, "Pod": 7}, kinds)
}

func TestARejectedWorkloadFailsYAMLOutputWithTheWebhooksWords(t *testing.T) {
	err := PrintYAML(&bytes.Buffer{}, renderFiles(t, "", "testdata/rejected.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `admission webhook "vpodcliqueset.grove.io" denied the request`)
	assert.Contains(t, err.Error(), "spec.template.cliques[0].spec.startsAfter[0]")
	assert.Contains(t, err.Error(), "spec.template.cliques[0].spec.podSpec.nodeName")
}

func TestDecodeRefusesUnknownFieldsAndKindsItDoesNotRender(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"a misspelt field", mustRead(t, "testdata/unknown-field.yaml"), `unknown field "spec.template.cliques[0].spec.replica"`},
		{"not YAML", "a: [", "document 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode(&Input{}, strings.NewReader(tc.doc), "in.yaml", "default")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "in.yaml")
		})
	}
}

func TestDecodeSkipsOtherKindsAndSaysSo(t *testing.T) {
	in := &Input{}
	docs := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\n"
	require.NoError(t, Decode(in, strings.NewReader(docs), "in.yaml", "default"))
	assert.Equal(t, []string{"in.yaml: document 1: ConfigMap x is not rendered", "in.yaml: document 2: Queue q is not rendered"}, in.Skipped)
}

func TestDecodeTakesEveryDocumentAndDefaultsTheNamespace(t *testing.T) {
	in := &Input{}
	require.NoError(t, Decode(in, strings.NewReader(mustRead(t, "testdata/kai-topology.yaml")+"\n---\n# only a comment\n"), "x", "ns"))
	require.Len(t, in.PodCliqueSets, 1)
	require.Len(t, in.Bindings, 1)
	assert.Equal(t, "team-a", in.PodCliqueSets[0].Namespace, "a namespace given is kept")
	assert.Empty(t, in.Bindings[0].Namespace, "cluster-scoped")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestABindingAdmissionRefusesIsSkippedAndSaidSo(t *testing.T) {
	cfg, err := configv1alpha1.Load("testdata/kai-tas-config.yaml")
	require.NoError(t, err)
	in := &Input{}
	// One node label for two levels: refused by grove-webhook's admission, named by its element.
	doc := strings.Replace(mustRead(t, "testdata/kai-topology.yaml"), "    - domain: host\n      key: kubernetes.io/hostname",
		"    - domain: host\n      key: topology.kubernetes.io/zone", 1)
	require.NoError(t, Decode(in, strings.NewReader(doc), "x", "default"))
	r, err := New(cfg)
	require.NoError(t, err)
	w := r.Render(in)
	require.Len(t, in.Skipped, 1)
	assert.Contains(t, in.Skipped[0], "ClusterTopologyBinding gb200 is refused by admission")
	assert.Contains(t, in.Skipped[0], "spec.levels[1].key: Duplicate value")
	require.Len(t, w, 1)
	assert.Contains(t, strings.Join(w[0].Warnings, "\n"), `ClusterTopologyBinding "gb200" does not exist yet`)
}
