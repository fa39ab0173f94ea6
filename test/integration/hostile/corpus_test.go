package hostileintegration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// basePCS is a valid inference PodCliqueSet with one clique; each case breaks one thing.
const basePCS = `apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: NAME}
spec:
  replicas: 1
  template:
    cliques:
      - name: a
        spec:
          roleName: a
          replicas: 1
          podSpec:
            containers: [{name: c, image: busybox}]
`

// baseTrainJob is a valid TrainJob whose ClusterTrainingRuntime does not exist.
const baseTrainJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: NAME}
spec:
  runtimeRef: {name: torch-missing}
  trainer: {numNodes: 2}
`

// baseRuntime is a valid namespaced TrainingRuntime.
const baseRuntime = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: NAME}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  containers: [{name: node, image: busybox}]
`

// hostileCase is one malformed or hostile object and what must become of it.
type hostileCase struct {
	name string
	// collection is the path format (namespace as %s) the object is POSTed to.
	collection string
	// base is the manifest the case starts from ("NAME" is replaced by the object's name).
	base string
	// objName is the object's name (default "obj-<case number>").
	objName string
	// mutate breaks the object.
	mutate func(obj map[string]any)
	// body, when set, is sent as it is instead of base+mutate: for what a JSON encoder refuses
	// to produce.
	body func(t *testing.T, name string) []byte
	// strict sends fieldValidation=Strict, as kubectl does.
	strict bool
	// rejected lists what the refusal must say: the field path and the rule. Empty means the
	// object must be stored.
	rejected []string
	// handled, for a stored object, waits until the binary responsible shows it dealt with it.
	handled func(t *testing.T, ns, name string, stored map[string]any)
}

func cliqueSpec(path ...any) []any {
	return append([]any{"spec", "template", "cliques", 0, "spec"}, path...)
}

func withCliques(obj map[string]any, names ...string) {
	var cliques []any
	for _, n := range names {
		cliques = append(cliques, map[string]any{"name": n, "spec": map[string]any{
			"roleName": n, "replicas": 1, "podSpec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}},
		}})
	}
	set(obj, cliques, "spec", "template", "cliques")
}

func explicit(obj map[string]any, startsAfter map[int][]any) {
	set(obj, "CliqueStartupTypeExplicit", "spec", "template", "cliqueStartupType")
	for i, parents := range startsAfter {
		set(obj, parents, "spec", "template", "cliques", i, "spec", "startsAfter")
	}
}

func podCliqueSetCorpus() []hostileCase {
	name254 := longName(254)
	return []hostileCase{
		// Names and labels: the API server's own metadata rules, then the webhook's for the names
		// the operator derives.
		{name: "name of 254 characters", objName: name254,
			rejected: []string{"metadata.name", "must be no more than 253 characters"}},
		{name: "name of 63 characters makes pod names too long", objName: longName(63),
			rejected: []string{"spec.template.cliques[0].name", "generated pod names would be 69 characters, over the 63 of a DNS label"}},
		{name: "unicode name", objName: "grövé",
			rejected: []string{"metadata.name", "a lowercase RFC 1123 subdomain"}},
		{name: "name that is not a DNS-1035 label breaks the headless Service", objName: "9lives",
			rejected: []string{"metadata.name", "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character"}},
		{name: "dotted name breaks pod hostnames", objName: "a.b",
			rejected: []string{"metadata.name", "a DNS-1035 label"}},
		{name: "label value of 64 characters",
			mutate:   func(o map[string]any) { set(o, map[string]any{"team": strings.Repeat("v", 64)}, "metadata", "labels") },
			rejected: []string{"metadata.labels", "must be no more than 63 bytes"}},
		{name: "annotations over 256 KiB",
			mutate: func(o map[string]any) {
				set(o, map[string]any{"blob": strings.Repeat("x", 256<<10)}, "metadata", "annotations")
			},
			rejected: []string{"metadata.annotations", "Too long: may not be more than 262144 bytes"}},
		{name: "unicode label value",
			mutate:   func(o map[string]any) { set(o, map[string]any{"team": "équipe"}, "metadata", "labels") },
			rejected: []string{"metadata.labels", "a valid label must be an empty string or consist of alphanumeric characters"}},
		{name: "clique template label value of 64 characters",
			mutate: func(o map[string]any) {
				set(o, map[string]any{"team": strings.Repeat("v", 64)}, "spec", "template", "cliques", 0, "labels")
			},
			rejected: []string{"spec.template.cliques[0].labels", "must be no more than 63 bytes"}},
		{name: "clique template unicode label key",
			mutate: func(o map[string]any) {
				set(o, map[string]any{"ü/team": "a"}, "spec", "template", "cliques", 0, "labels")
			},
			rejected: []string{"spec.template.cliques[0].labels", "prefix part a lowercase RFC 1123 subdomain"}},
		{name: "clique template annotation key with spaces",
			mutate: func(o map[string]any) {
				set(o, map[string]any{"not a key": "v"}, "spec", "template", "cliques", 0, "annotations")
			},
			rejected: []string{"spec.template.cliques[0].annotations", "name part must consist of alphanumeric characters"}},
		{name: "unicode clique name",
			mutate:   func(o map[string]any) { set(o, "clïque", "spec", "template", "cliques", 0, "name") },
			rejected: []string{"spec.template.cliques[0].name", "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"}},
		{name: "unicode in container args, env and annotations is stored and run",
			mutate: func(o map[string]any) {
				set(o, []any{"--prompt=日本語 ✓ \u202e"}, cliqueSpec("podSpec", "containers", 0, "args")...)
				set(o, []any{map[string]any{"name": "GREETING", "value": "grüß dich 👋"}}, cliqueSpec("podSpec", "containers", 0, "env")...)
				set(o, map[string]any{"description": "模型 🚀"}, "spec", "template", "cliques", 0, "annotations")
			},
			handled: operatorObserved},

		// Durations.
		{name: "maxRuntime that is not a duration",
			mutate: func(o map[string]any) {
				set(o, "Training", "spec", "workloadType")
				set(o, map[string]any{"maxRuntime": "abc"}, "spec", "trainingSpec")
			},
			rejected: []string{"spec.trainingSpec.maxRuntime", "must be a non-negative duration"}},
		{name: "negative maxRuntime",
			mutate: func(o map[string]any) {
				set(o, "Training", "spec", "workloadType")
				set(o, map[string]any{"maxRuntime": "-5m"}, "spec", "trainingSpec")
			},
			rejected: []string{"spec.trainingSpec.maxRuntime", "must be a non-negative duration"}},
		{name: "negative terminationDelay",
			mutate:   func(o map[string]any) { set(o, "-1s", "spec", "template", "terminationDelay") },
			rejected: []string{"spec.template.terminationDelay", "must be a non-negative duration"}},
		{name: "terminationDelay as a number",
			mutate:   func(o map[string]any) { set(o, 30, "spec", "template", "terminationDelay") },
			rejected: []string{"spec.template.terminationDelay", "must be of type string"}},

		// Counts.
		{name: "replicas -1",
			mutate:   func(o map[string]any) { set(o, -1, "spec", "replicas") },
			rejected: []string{"spec.replicas", "should be greater than or equal to 0"}},
		{name: "replicas 2^31 overflows int32",
			mutate:   func(o map[string]any) { set(o, raw("2147483648"), "spec", "replicas") },
			rejected: []string{"must be of type integer with format int32 in spec.replicas"}},
		{name: "clique replicas beyond int64",
			mutate:   func(o map[string]any) { set(o, raw("99999999999999999999"), cliqueSpec("replicas")...) },
			rejected: []string{"must be of type integer with format int32 in spec.template.cliques[0].spec.replicas"}},
		// 2^31-1 is a valid int32: without a bound the operator would allocate every missing pod
		// index of the clique (16 GiB) and crash, then crash again on every restart.
		{name: "clique replicas 2^31-1 would exhaust the operator's memory",
			mutate:   func(o map[string]any) { set(o, raw("2147483647"), cliqueSpec("replicas")...) },
			rejected: []string{"spec.template.cliques[0].spec.replicas", "should be less than or equal to 10000"}},
		{name: "PodCliqueSet replicas above the bound",
			mutate:   func(o map[string]any) { set(o, raw(itoa(grovev1alpha1.MaxReplicas+1)), "spec", "replicas") },
			rejected: []string{"spec.replicas", "should be less than or equal to 10000"}},
		{name: "scaling group replicas 2^31-1",
			mutate: func(o map[string]any) {
				set(o, []any{map[string]any{"name": "g", "cliqueNames": []any{"a"}, "replicas": raw("2147483647")}}, "spec", "template", "podCliqueScalingGroups")
			},
			rejected: []string{"spec.template.podCliqueScalingGroups[0].replicas", "should be less than or equal to 10000"}},
		{name: "autoscaling maxReplicas 2^31-1",
			mutate: func(o map[string]any) {
				set(o, map[string]any{"maxReplicas": raw("2147483647")}, cliqueSpec("autoScalingConfig")...)
			},
			rejected: []string{"spec.template.cliques[0].spec.autoScalingConfig.maxReplicas", "should be less than or equal to 10000"}},
		{name: "replicas as a string",
			mutate:   func(o map[string]any) { set(o, "3", "spec", "replicas") },
			rejected: []string{"spec.replicas", "must be of type integer"}},
		{name: "fractional replicas",
			mutate:   func(o map[string]any) { set(o, 1.5, "spec", "replicas") },
			rejected: []string{"spec.replicas", "must be of type integer"}},
		{name: "minAvailable greater than replicas",
			mutate:   func(o map[string]any) { set(o, 5, cliqueSpec("minAvailable")...) },
			rejected: []string{"spec.template.cliques[0].spec.minAvailable", "minAvailable must not exceed replicas"}},
		{name: "minAvailable 0",
			mutate:   func(o map[string]any) { set(o, 0, cliqueSpec("minAvailable")...) },
			rejected: []string{"spec.template.cliques[0].spec.minAvailable", "should be greater than or equal to 1"}},
		{name: "scaling group minAvailable greater than its replicas",
			mutate: func(o map[string]any) {
				set(o, []any{map[string]any{"name": "g", "cliqueNames": []any{"a"}, "replicas": 2, "minAvailable": 3}}, "spec", "template", "podCliqueScalingGroups")
			},
			rejected: []string{"spec.template.podCliqueScalingGroups[0].minAvailable", "minAvailable must not exceed replicas"}},
		{name: "autoscaling minReplicas above maxReplicas",
			mutate: func(o map[string]any) {
				set(o, map[string]any{"minReplicas": 5, "maxReplicas": 2}, cliqueSpec("autoScalingConfig")...)
			},
			rejected: []string{"spec.template.cliques[0].spec.autoScalingConfig.minReplicas", "minReplicas must not exceed maxReplicas"}},
		{name: "negative maxRestarts",
			mutate: func(o map[string]any) {
				set(o, "Training", "spec", "workloadType")
				set(o, map[string]any{"maxRestarts": -1}, "spec", "trainingSpec")
			},
			rejected: []string{"spec.trainingSpec.maxRestarts", "should be greater than or equal to 0"}},

		// Scheduling.
		{name: "unknown scheduler backend",
			mutate:   func(o map[string]any) { set(o, "yunikorn", cliqueSpec("podSpec", "schedulerName")...) },
			rejected: []string{"spec.template.cliques[0].spec.podSpec.schedulerName", `Unsupported value: "yunikorn"`, `supported values: "default-scheduler"`}},
		{name: "scheduler backend that is not enabled",
			mutate:   func(o map[string]any) { set(o, "kai-scheduler", cliqueSpec("podSpec", "schedulerName")...) },
			rejected: []string{"spec.template.cliques[0].spec.podSpec.schedulerName", `scheduler backend "kai-scheduler" is not enabled`}},
		{name: "nodeName bypasses the gang scheduler",
			mutate:   func(o map[string]any) { set(o, "node-1", cliqueSpec("podSpec", "nodeName")...) },
			rejected: []string{"spec.template.cliques[0].spec.podSpec.nodeName", "nodeName must not be set"}},
		{name: "topology constraint while topology-aware scheduling is off",
			mutate: func(o map[string]any) {
				set(o, map[string]any{"topologyName": "dc", "pack": map[string]any{"required": "rack"}}, "spec", "template", "topologyConstraint")
			},
			rejected: []string{"spec.template.topologyConstraint", "topology-aware scheduling is disabled"}},

		// Startup graphs.
		{name: "startsAfter cycle of three cliques",
			mutate: func(o map[string]any) {
				withCliques(o, "a", "b", "c")
				explicit(o, map[int][]any{0: {"c"}, 1: {"a"}, 2: {"b"}})
			},
			rejected: []string{"spec.template.cliques", "a -> c -> b -> a", "must not form a cycle"}},
		{name: "startsAfter itself",
			mutate:   func(o map[string]any) { explicit(o, map[int][]any{0: {"a"}}) },
			rejected: []string{"spec.template.cliques[0].spec.startsAfter[0]", "a clique cannot start after itself"}},
		{name: "startsAfter an unknown clique",
			mutate:   func(o map[string]any) { explicit(o, map[int][]any{0: {"ghost"}}) },
			rejected: []string{"spec.template.cliques[0].spec.startsAfter[0]", `Not found: "ghost"`}},
		{name: "startsAfter without the Explicit startup type",
			mutate: func(o map[string]any) {
				withCliques(o, "a", "b")
				set(o, []any{"a"}, "spec", "template", "cliques", 1, "spec", "startsAfter")
			},
			rejected: []string{"spec.template.cliques[1].spec.startsAfter", "requires cliqueStartupType CliqueStartupTypeExplicit"}},
		{name: "scaling group naming an unknown clique",
			mutate: func(o map[string]any) {
				set(o, []any{map[string]any{"name": "g", "cliqueNames": []any{"ghost"}}}, "spec", "template", "podCliqueScalingGroups")
			},
			rejected: []string{"spec.template.podCliqueScalingGroups[0].cliqueNames[0]", `Not found: "ghost"`}},
		{name: "clique in two scaling groups",
			mutate: func(o map[string]any) {
				set(o, []any{
					map[string]any{"name": "g", "cliqueNames": []any{"a"}},
					map[string]any{"name": "h", "cliqueNames": []any{"a"}},
				}, "spec", "template", "podCliqueScalingGroups")
			},
			rejected: []string{"spec.template.podCliqueScalingGroups[1].cliqueNames[0]", "membership is exclusive"}},
		{name: "duplicate clique names",
			mutate:   func(o map[string]any) { withCliques(o, "a", "a") },
			rejected: []string{"spec.template.cliques[1]", "Duplicate value"}},
		{name: "null clique",
			mutate:   func(o map[string]any) { set(o, []any{nil}, "spec", "template", "cliques") },
			rejected: []string{"spec.template.cliques[0]", "must be of type object"}},

		// Size and shape.
		{name: "no cliques",
			mutate:   func(o map[string]any) { set(o, []any{}, "spec", "template", "cliques") },
			rejected: []string{"spec.template.cliques", "should have at least 1 items"}},
		{name: "65 cliques",
			mutate: func(o map[string]any) {
				names := make([]string, 65)
				for i := range names {
					names[i] = "c" + itoa(i)
				}
				withCliques(o, names...)
			},
			rejected: []string{"spec.template.cliques", "must have at most 64 items"}},
		{name: "10 MB pod spec exceeds the API server's request limit",
			mutate: func(o map[string]any) {
				set(o, []any{map[string]any{"name": "BLOB", "value": strings.Repeat("x", 10<<20)}}, cliqueSpec("podSpec", "containers", 0, "env")...)
			},
			rejected: []string{"Request entity too large: limit is 3145728"}},
		{name: "2 MB pod spec exceeds the storage's message limit",
			mutate: func(o map[string]any) {
				set(o, []any{map[string]any{"name": "BLOB", "value": strings.Repeat("x", 2<<20)}}, cliqueSpec("podSpec", "containers", 0, "env")...)
			},
			rejected: []string{"ResourceExhausted", "larger than max"}},
		{name: "object nested 20000 levels deep",
			body: func(t *testing.T, name string) []byte {
				o := fromYAML(t, strings.Replace(basePCS, "NAME", name, 1))
				set(o, "DEEP", "spec", "bogus")
				data, err := json.Marshal(o)
				require.NoError(t, err)
				return []byte(strings.Replace(string(data), `"DEEP"`, deepJSON(20000), 1))
			},
			rejected: []string{"max depth"}},
		{name: "unknown field with strict field validation",
			mutate:   func(o map[string]any) { set(o, "yes", "spec", "template", "bogus") },
			strict:   true,
			rejected: []string{`unknown field "spec.template.bogus"`}},
		{name: "unknown field with the default field validation is dropped",
			mutate: func(o map[string]any) { set(o, "yes", "spec", "template", "bogus") },
			handled: func(t *testing.T, ns, name string, stored map[string]any) {
				_, found, _ := unstructured.NestedFieldNoCopy(stored, "spec", "template", "bogus")
				assert.False(t, found, "the API server prunes fields its schema does not declare")
				operatorObserved(t, ns, name, stored)
			}},
		{name: "unknown workloadType",
			mutate:   func(o map[string]any) { set(o, "Batch", "spec", "workloadType") },
			rejected: []string{"spec.workloadType", `Unsupported value: "Batch"`}},
		{name: "trainingSpec on an inference workload",
			mutate:   func(o map[string]any) { set(o, map[string]any{"maxRestarts": 1}, "spec", "trainingSpec") },
			rejected: []string{"spec.trainingSpec", "trainingSpec is only allowed with workloadType Training"}},
		{name: "body that is not JSON",
			body: func(*testing.T, string) []byte {
				return []byte(`{"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": {`)
			},
			rejected: []string{"json parse error: unexpected end of JSON input"}},
		{name: "kind that does not match the collection is stored as the collection's kind",
			mutate: func(o map[string]any) { set(o, "PodClique", "kind") },
			handled: func(t *testing.T, ns, name string, stored map[string]any) {
				assert.Equal(t, "PodCliqueSet", stored["kind"])
				operatorObserved(t, ns, name, stored)
			}},
	}
}

func trainJobCorpus() []hostileCase {
	return []hostileCase{
		{name: "runtimeRef to an unknown API group",
			mutate:   func(o map[string]any) { set(o, "kubeflow.org", "spec", "runtimeRef", "apiGroup") },
			rejected: []string{"spec.runtimeRef.apiGroup", `Unsupported value: "kubeflow.org"`}},
		{name: "runtimeRef to a kind that is no runtime",
			mutate:   func(o map[string]any) { set(o, "Pod", "spec", "runtimeRef", "kind") },
			rejected: []string{"spec.runtimeRef.kind", `Unsupported value: "Pod"`}},
		{name: "runtimeRef without a name",
			mutate:   func(o map[string]any) { set(o, map[string]any{"kind": "TrainingRuntime"}, "spec", "runtimeRef") },
			rejected: []string{"spec.runtimeRef.name", "Required value"}},
		{name: "numNodes 0",
			mutate:   func(o map[string]any) { set(o, 0, "spec", "trainer", "numNodes") },
			rejected: []string{"spec.trainer.numNodes", "must be at least 1"}},
		{name: "numNodes -1",
			mutate:   func(o map[string]any) { set(o, -1, "spec", "trainer", "numNodes") },
			rejected: []string{"spec.trainer.numNodes", "must be at least 1"}},
		{name: "numNodes 2^31 overflows int32",
			mutate:   func(o map[string]any) { set(o, raw("2147483648"), "spec", "trainer", "numNodes") },
			rejected: []string{"must be of type integer with format int32 in spec.trainer.numNodes"}},
		// The MPI hostfile lists every node: 2^31-1 lines would exhaust trainer-controller's memory.
		{name: "numNodes 2^31-1 would exhaust trainer-controller's memory",
			mutate:   func(o map[string]any) { set(o, raw("2147483647"), "spec", "trainer", "numNodes") },
			rejected: []string{"spec.trainer.numNodes", "should be less than or equal to 10000"}},
		{name: "numProcPerNode 0",
			mutate:   func(o map[string]any) { set(o, 0, "spec", "trainer", "numProcPerNode") },
			rejected: []string{"spec.trainer.numProcPerNode", "must be at least 1"}},
		{name: "name that is not a DNS-1035 label", objName: "9job",
			rejected: []string{"metadata.name must be an RFC 1035 DNS label"}},
		{name: "name of 64 characters", objName: longName(64),
			rejected: []string{"metadata.name must be at most 63 characters"}},
		{name: "activeDeadlineSeconds 0",
			mutate:   func(o map[string]any) { set(o, 0, "spec", "activeDeadlineSeconds") },
			rejected: []string{"spec.activeDeadlineSeconds", "should be greater than or equal to 1"}},
		{name: "activeDeadlineSeconds beyond int64",
			mutate:   func(o map[string]any) { set(o, raw("9223372036854775808"), "spec", "activeDeadlineSeconds") },
			rejected: []string{"spec.activeDeadlineSeconds"}},
		{name: "unknown managedBy",
			mutate:   func(o map[string]any) { set(o, "example.com/mine", "spec", "managedBy") },
			rejected: []string{"spec.managedBy", "managedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue"}},
		{name: "runtime that does not exist is stored and waits",
			handled: trainJobWaitsForRuntime},
	}
}

func runtimeCorpus() []hostileCase {
	return []hostileCase{
		{name: "negative ttlSecondsAfterFinished",
			mutate:   func(o map[string]any) { set(o, -1, "spec", "ttlSecondsAfterFinished") },
			rejected: []string{"spec.ttlSecondsAfterFinished", "should be greater than or equal to 0"}},
		{name: "torch and mpi at once",
			mutate:   func(o map[string]any) { set(o, map[string]any{}, "spec", "mlPolicy", "mpi") },
			rejected: []string{"spec.mlPolicy", "only one of torch, mpi"}},
		{name: "mlPolicy numNodes 2^31-1",
			mutate:   func(o map[string]any) { set(o, raw("2147483647"), "spec", "mlPolicy", "numNodes") },
			rejected: []string{"spec.mlPolicy.numNodes", "should be less than or equal to 10000"}},
		{name: "a job template of 2^31-1 pods",
			mutate: func(o map[string]any) {
				set(o, raw("2147483647"), "spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "parallelism")
			},
			rejected: []string{"spec.template.spec.replicatedJobs[0]", "replicas × template.spec.parallelism must be at most 10000 pods"}},
		{name: "unknown workloadKind",
			mutate:   func(o map[string]any) { set(o, "Deployment", "spec", "workloadKind") },
			rejected: []string{"spec.workloadKind", `Unsupported value: "Deployment"`}},
	}
}

// childCorpus are the operator's own kinds created directly by a user, bypassing the
// PodCliqueSet: stored (they are schema-valid), and the binaries must cope.
func childCorpus() []hostileCase {
	return []hostileCase{
		{name: "orphan PodClique", collection: pclqPath,
			base: `apiVersion: grove.io/v1alpha1
kind: PodClique
metadata: {name: NAME, labels: {app.kubernetes.io/part-of: nobody}}
spec: {roleName: r, replicas: 2, podSpec: {containers: [{name: c, image: busybox}]}}
`},
		{name: "PodClique with 2^31-1 replicas", collection: pclqPath,
			base: `apiVersion: grove.io/v1alpha1
kind: PodClique
metadata: {name: NAME}
spec: {roleName: r, replicas: 2147483647, podSpec: {containers: [{name: c, image: busybox}]}}
`,
			rejected: []string{"spec.replicas", "should be less than or equal to 10000"}},
		{name: "orphan PodCliqueScalingGroup naming unknown cliques", collection: pcsgPath,
			base: `apiVersion: grove.io/v1alpha1
kind: PodCliqueScalingGroup
metadata: {name: NAME, labels: {app.kubernetes.io/part-of: nobody}}
spec: {replicas: 2, minAvailable: 1, cliqueNames: [ghost, phantom]}
`},
		{name: "PodGang referencing pods that do not exist", collection: podGangPath,
			base: `apiVersion: scheduler.grove.io/v1alpha1
kind: PodGang
metadata: {name: NAME, labels: {grove.io/scheduler-name: kube-scheduler}}
spec:
  podgroups:
    - {name: g, minReplicas: 2, podReferences: [{namespace: elsewhere, name: ghost-0}, {namespace: elsewhere, name: ghost-1}]}
`},
		{name: "PodGang for an unknown scheduler backend", collection: podGangPath,
			base: `apiVersion: scheduler.grove.io/v1alpha1
kind: PodGang
metadata: {name: NAME, labels: {grove.io/scheduler-name: volcano}}
spec:
  podgroups:
    - {name: g, minReplicas: 1, podReferences: [{namespace: elsewhere, name: ghost-0}]}
`},
	}
}

// TestHostileObjectsAreRejectedNamingTheFieldOrStoredAndHandled submits the corpus; every
// binary must be alive and healthy afterwards.
func TestHostileObjectsAreRejectedNamingTheFieldOrStoredAndHandled(t *testing.T) {
	ns := newNamespace(t)
	groups := []struct {
		name       string
		collection string
		base       string
		cases      []hostileCase
	}{
		{"PodCliqueSet", pcsPath, basePCS, podCliqueSetCorpus()},
		{"TrainJob", trainJobPath, baseTrainJob, trainJobCorpus()},
		{"TrainingRuntime", runtimePath, baseRuntime, runtimeCorpus()},
		{"children", "", "", childCorpus()},
	}
	n := 0
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.cases {
				t.Run(tc.name, func(t *testing.T) {
					n++
					collection, base := g.collection, g.base
					if tc.collection != "" {
						collection, base = tc.collection, tc.base
					}
					name := tc.objName
					if name == "" {
						name = "obj-" + itoa(n)
					}
					var obj any
					if tc.body != nil {
						obj = tc.body(t, name)
					} else {
						m := fromYAML(t, strings.Replace(base, "NAME", "placeholder", 1))
						set(m, name, "metadata", "name")
						if tc.mutate != nil {
							tc.mutate(m)
						}
						obj = m
					}
					r := create(t, collection, ns, obj, tc.strict)
					if len(tc.rejected) > 0 {
						require.GreaterOrEqual(t, r.code, 400, "must be rejected; stored: %.2000s", r.body)
						msg := r.message()
						for _, want := range tc.rejected {
							assert.Contains(t, msg, want)
						}
						// Nothing of a refused create may be stored (asked only where the name
						// could be an object's at all).
						if tc.body == nil && len(validation.IsDNS1123Subdomain(name)) == 0 {
							got := send(t, http.MethodGet, collectionPath(collection, ns)+"/"+name, nil, false, "")
							assert.Equal(t, http.StatusNotFound, got.code, "a refused object is not stored")
						}
						return
					}
					require.Equal(t, http.StatusCreated, r.code, "must be stored: %s", r.message())
					stored := decode(t, r.body)
					if tc.handled != nil {
						tc.handled(t, ns, name, stored)
					}
				})
			}
		})
	}
	// Controllers work asynchronously: they have tripped over what was stored, or not, once each
	// has been through it and is idle.
	requireBinariesHealthy(t)
	for _, name := range []string{"grove-operator", "backend-controller", "trainer-controller"} {
		binaries[name].WaitIdle(t, 1500*time.Millisecond, time.Minute)
	}
	requireBinariesHealthy(t)
}

func collectionPath(collection, ns string) string {
	return strings.Replace(collection, "%s", ns, 1)
}

// operatorObserved waits until grove-operator reconciled the PodCliqueSet's current generation.
func operatorObserved(t *testing.T, ns, name string, _ map[string]any) {
	t.Helper()
	require.Eventually(t, func() bool {
		pcs := get(t, pcsPath, ns, name)
		gen, _, _ := unstructured.NestedInt64(pcs, "metadata", "generation")
		observed, found, _ := unstructured.NestedInt64(pcs, "status", "observedGeneration")
		return found && observed == gen
	}, 30*time.Second, 200*time.Millisecond, "grove-operator reconciles %s/%s", ns, name)
}

// trainJobWaitsForRuntime waits until trainer-controller reports the missing runtime.
func trainJobWaitsForRuntime(t *testing.T, ns, name string, _ map[string]any) {
	t.Helper()
	require.Eventually(t, func() bool {
		tj := get(t, trainJobPath, ns, name)
		conds, _, _ := unstructured.NestedSlice(tj, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "Running" && m["status"] == "False" && m["reason"] == "TrainingRuntimeNotFound" {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "trainer-controller reports the missing runtime of %s/%s", ns, name)
}
