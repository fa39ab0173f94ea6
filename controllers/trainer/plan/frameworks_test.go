package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestJAXEnvironmentOnTheTrainerNodeContainer(t *testing.T) {
	cases := []struct {
		name    string
		trainer string
		want    map[string]string
	}{
		{
			name:    "nodes from the TrainJob, one process per node",
			trainer: "trainer: {numNodes: 3}",
			want: map[string]string{
				EnvJAXNumProcesses:       "3",
				EnvJAXProcessID:          "fieldRef:rank",
				EnvJAXCoordinatorAddress: "node-0.net:29500",
			},
		},
		{
			name:    "nodes from the runtime",
			trainer: "trainer: {image: x}",
			want: map[string]string{
				EnvJAXNumProcesses:       "1",
				EnvJAXProcessID:          "fieldRef:rank",
				EnvJAXCoordinatorAddress: "node-0.net:29500",
			},
		},
		{
			name: "no trainer section: nothing injected, as in Kubeflow",
			want: map[string]string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, objs := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\n"+tc.trainer), runtimeYAML(t, jaxRuntime))
			assert.Empty(t, objs)
			c := containerOf(t, p, Node, Node)
			assert.Equal(t, tc.want, builders.EnvOf(*c))
			if len(tc.want) > 0 {
				assert.Equal(t, []corev1.ContainerPort{{ContainerPort: TrainerPort}}, c.Ports)
			} else {
				assert.Empty(t, c.Ports)
			}
		})
	}
}

func TestXGBoostWorkersAreNodesTimesGPUs(t *testing.T) {
	cases := []struct {
		name, trainer, workers string
	}{
		{"two GPUs per node from the runtime", "trainer: {numNodes: 3}", "6"},
		{"the TrainJob's resources win", "trainer: {numNodes: 3, resourcesPerNode: {limits: {nvidia.com/gpu: 4}}}", "12"},
		{"a CPU node runs one worker", "trainer: {numNodes: 3, resourcesPerNode: {requests: {cpu: 8}}}", "3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\n"+tc.trainer), runtimeYAML(t, xgboostRuntime))
			c := containerOf(t, p, Node, Node)
			assert.Equal(t, map[string]string{
				EnvXGBoostTrackerURI:  "node-0.net",
				EnvXGBoostTrackerPort: "29500",
				EnvXGBoostTaskID:      "fieldRef:rank",
				EnvXGBoostNumWorker:   tc.workers,
			}, builders.EnvOf(*c))
			assert.Equal(t, []corev1.ContainerPort{{ContainerPort: TrainerPort}}, c.Ports)
		})
	}
}

func TestPlainRuntimeGetsTheTrainJobsEnvAndNodeCount(t *testing.T) {
	p, objs := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {numNodes: 4, env: [{name: A, value: b}]}"), runtimeYAML(t, plainRuntime))
	assert.Empty(t, objs)
	assert.Equal(t, map[string]string{"A": "b"}, builders.EnvOf(*containerOf(t, p, Node, Node)))
	assert.Equal(t, int32(4), *jobOf(t, p, Node).Template.Spec.Parallelism)
}

func fluxJob(t *testing.T, trainer string) *trainerv1alpha1.TrainJob {
	tj := trainJobYAML(t, "runtimeRef: {name: rt}\n"+trainer)
	tj.UID = "2c0a6f0e-0000-4000-8000-000000000001"
	return tj
}

func TestFluxWrapsTheCommandAndInstallsFluxInEveryNode(t *testing.T) {
	tj := fluxJob(t, "trainer: {numNodes: 3, command: [lmp, -in, in.hns], env: [{name: FLUX_VIEW_IMAGE, value: view:2}]}")
	p, objs := applyFramework(t, tj, runtimeYAML(t, fluxRuntime))

	c := containerOf(t, p, Node, Node)
	assert.Equal(t, []string{"/bin/bash", "/etc/flux-config/entrypoint.sh", "lmp -in in.hns"}, c.Command)
	assert.Equal(t, []string{"--from-runtime"}, c.Args, "Kubeflow clears only the TrainJob's args")
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	assert.Equal(t, map[string]string{
		"flux-install": "/mnt/flux", "spack-install": "/opt/software", "tj-flux-entrypoint": "/etc/flux-config",
		"flux-curve": "/curve", "shared-memory": "/dev/shm",
	}, mounts)

	pod := jobOf(t, p, Node).Template.Spec.Template.Spec
	require.Len(t, pod.InitContainers, 1)
	installer := pod.InitContainers[0]
	assert.Equal(t, FluxInstallerContainer, installer.Name)
	assert.Equal(t, "view:2", installer.Image, "FLUX_VIEW_IMAGE picks the installer image")
	assert.Equal(t, []string{"/bin/bash", "/etc/flux-config/init.sh"}, installer.Command)
	var volumes []string
	for _, v := range pod.Volumes {
		volumes = append(volumes, v.Name)
	}
	assert.ElementsMatch(t, []string{"spack-install", "flux-install", "tj-flux-entrypoint", "shared-memory", "flux-curve"}, volumes)

	require.Len(t, objs, 2)
	cm := objs[0].(*corev1.ConfigMap)
	assert.Equal(t, "tj-flux-entrypoint", cm.Name)
	assert.Contains(t, cm.Data["init.sh"], `echo "node-[0-2]"`, "the hostlist names every node")
	assert.Contains(t, cm.Data["init.sh"], `default_connect = "tcp://%h.net.ns.svc.cluster.local:%p"`)
	assert.Contains(t, cm.Data["init.sh"], `default_bind = "tcp://eth0:%p"`)
	assert.Contains(t, cm.Data["entrypoint.sh"], `"$(hostname)" = "node-0"`, "node 0 leads")
	assert.Contains(t, cm.Data["entrypoint.sh"], "flux run -N 3 -n 6 -g 2 ${command}", "nodes × the runtime's processes per node, GPUs per node")
	assert.Contains(t, cm.Data["entrypoint.sh"], "--cores=0-1 --gpu=0-1")
	secret := objs[1].(*corev1.Secret)
	assert.Equal(t, "tj-flux-curve", secret.Name)
	assert.Contains(t, string(secret.Data["curve.cert"]), "public-key = ")
}

func TestFluxProcessesPerNodeAndDevice(t *testing.T) {
	tj := fluxJob(t, "trainer: {numNodes: 1, numProcPerNode: 4, resourcesPerNode: {limits: {cpu: 4}}, env: [{name: FLUX_NETWORK_DEVICE, value: ib0}]}")
	_, objs := applyFramework(t, tj, runtimeYAML(t, fluxRuntime))
	scripts := objs[0].(*corev1.ConfigMap).Data
	assert.Contains(t, scripts["entrypoint.sh"], "flux run -N 1 -n 4 ${command}", "no GPUs: no -g")
	assert.Contains(t, scripts["entrypoint.sh"], "--cores=0-3 >")
	assert.Contains(t, scripts["init.sh"], `echo "node-[0]"`)
	assert.Contains(t, scripts["init.sh"], `default_bind = "tcp://ib0:%p"`)
}

func TestFluxCurveKeyIsTheTrainJobsAndStable(t *testing.T) {
	cert := func(uid string) string {
		tj := fluxJob(t, "trainer: {numNodes: 2}")
		tj.UID = k8stypes.UID("uid-" + uid)
		_, objs := applyFramework(t, tj, runtimeYAML(t, fluxRuntime))
		return string(objs[1].(*corev1.Secret).Data["curve.cert"])
	}
	assert.Equal(t, cert("a"), cert("a"), "rebuilding gives the same key")
	assert.NotEqual(t, cert("a"), cert("b"))
	for _, line := range strings.Split(cert("a"), "\n") {
		if key, ok := strings.CutPrefix(strings.TrimSpace(line), "secret-key = "); ok {
			assert.Len(t, strings.Trim(key, `"`), 40, "32 bytes in Z85")
		}
	}
}

func TestZ85EncodesRFC32sTestVector(t *testing.T) {
	// The test vector of ZeroMQ RFC 32.
	assert.Equal(t, "HelloWorld", z85([]byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}))
}

func TestFluxHostlistFallsBackToAList(t *testing.T) {
	assert.Equal(t, "a-[0-1]", fluxHostlist([]string{"a-0", "a-1"}))
	assert.Equal(t, "x,y", fluxHostlist([]string{"x", "y"}))
}
