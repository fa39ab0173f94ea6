package plan

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// Flux Framework's pieces, as Kubeflow Trainer v2.3 names and mounts them.
const (
	// FluxInstallerContainer is the init container that installs Flux; a runtime may not name
	// one of its own init containers so.
	FluxInstallerContainer = trainerv1alpha1.FluxInstallerContainer
	// FluxDefaultViewImage is the image the installer copies Flux from, unless FLUX_VIEW_IMAGE
	// says otherwise.
	FluxDefaultViewImage = "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy"
	// FluxConfigDir is where the entrypoint ConfigMap is mounted.
	FluxConfigDir = "/etc/flux-config"
	// FluxBrokerPort is the port the brokers connect on.
	FluxBrokerPort = 8050

	fluxInstallVolume = "flux-install"
	fluxInstallPath   = "/mnt/flux"
	fluxSpackVolume   = "spack-install"
	fluxSpackPath     = "/opt/software"
	fluxCurveVolume   = "flux-curve"
	fluxCurvePath     = "/curve"
	fluxCurveKey      = "curve.cert"
	fluxMemoryVolume  = "shared-memory"
	fluxMemoryPath    = "/dev/shm"
)

// The settings a TrainJob (or its runtime) tunes through the trainer container's env.
const (
	EnvFluxViewImage     = "FLUX_VIEW_IMAGE"
	EnvFluxNetworkDevice = "FLUX_NETWORK_DEVICE"
	EnvFluxQueuePolicy   = "FLUX_QUEUE_POLICY"
)

// FluxEntrypointConfigMapName holds a TrainJob's init.sh and entrypoint.sh.
func FluxEntrypointConfigMapName(trainJob string) string { return trainJob + "-flux-entrypoint" }

// FluxCurveSecretName holds a TrainJob's ZeroMQ CURVE certificate.
func FluxCurveSecretName(trainJob string) string { return trainJob + "-flux-curve" }

var (
	//go:embed flux/init.sh
	fluxInitScript string
	//go:embed flux/entrypoint.sh
	fluxEntrypointScript string

	fluxInit       = template.Must(template.New("init.sh").Parse(fluxInitScript))
	fluxEntrypoint = template.Must(template.New("entrypoint.sh").Parse(fluxEntrypointScript))
)

// applyFlux runs the TrainJob's command inside a Flux instance spanning its nodes.
//
// Every "node" job gets the flux-installer init container, which writes the broker
// configuration and copies Flux into a shared volume, plus the volumes of Flux's install, spack
// view, scripts, CURVE certificate and shared memory, mounted into its "node" container. The
// trainer's command becomes `/bin/bash /etc/flux-config/entrypoint.sh "<command> <args>"`: the
// lead node runs it with `flux run -N <nodes> -n <nodes × processes per node> [-g <GPUs>]`. It
// returns the scripts' ConfigMap and the certificate's Secret, whose key derives from the
// TrainJob's UID.
func applyFlux(tj *trainerv1alpha1.TrainJob, rt *Runtime, p *Plan, net Network) ([]client.Object, error) {
	spec := &p.Template.Spec
	trainerJob, trainerContainer := trainerNode(spec)
	if trainerJob == nil || trainerContainer == nil {
		return nil, nil
	}
	nodes := int(ptr.Deref(trainerJob.Template.Spec.Parallelism, 1))
	perNode := int(ptr.Deref(rt.Spec.MLPolicy.Flux.NumProcPerNode, 1))
	if tr := tj.Spec.Trainer; tr != nil && tr.NumProcPerNode != nil {
		perNode = int(*tr.NumProcPerNode)
	}
	gpus := trainerv1alpha1.GPUsPerNode(resourcesPerNode(tj, spec))
	settings := fluxSettings(trainerContainer)

	hosts := make([]string, nodes)
	for i := range hosts {
		hosts[i] = net.Hostname(Node, i)
	}
	runFlags := fmt.Sprintf("-N %d -n %d", nodes, nodes*perNode)
	resourceFlags := "--cores=" + indexRange(perNode)
	if gpus > 0 {
		runFlags += fmt.Sprintf(" -g %d", gpus)
		resourceFlags += " --gpu=" + indexRange(gpus)
	}
	hostlist := fluxHostlist(hosts)
	scripts, err := fluxScripts(hostlist, hosts[0], runFlags, resourceFlags,
		fluxBrokerConfig(hostlist, fmt.Sprintf("%s.%s.svc.cluster.local", net.Subdomain, tj.Namespace), settings))
	if err != nil {
		return nil, err
	}

	configMap := FluxEntrypointConfigMapName(tj.Name)
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		if rj.Name != Node {
			continue
		}
		pod := &rj.Template.Spec.Template.Spec
		for _, v := range fluxVolumes(tj.Name) {
			upsertVolume(&pod.Volumes, v)
		}
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name:    FluxInstallerContainer,
			Image:   settings[EnvFluxViewImage],
			Command: []string{"/bin/bash", FluxConfigDir + "/init.sh"},
			VolumeMounts: []corev1.VolumeMount{
				{Name: fluxInstallVolume, MountPath: fluxInstallPath},
				{Name: configMap, MountPath: FluxConfigDir, ReadOnly: true},
			},
		})
		if c := container(pod, Node); c != nil {
			for _, m := range []corev1.VolumeMount{
				{Name: fluxInstallVolume, MountPath: fluxInstallPath},
				{Name: fluxSpackVolume, MountPath: fluxSpackPath},
				{Name: configMap, MountPath: FluxConfigDir, ReadOnly: true},
				{Name: fluxCurveVolume, MountPath: fluxCurvePath, ReadOnly: true},
				{Name: fluxMemoryVolume, MountPath: fluxMemoryPath, ReadOnly: true},
			} {
				upsertVolumeMount(&c.VolumeMounts, m)
			}
		}
	}

	// Kubeflow wraps the command and clears only the TrainJob's args, so the runtime's args
	// stay on the container after the wrapped command.
	command := strings.TrimSpace(strings.Join(append(slices.Clone(trainerContainer.Command), trainerArgs(tj)...), " "))
	trainerContainer.Command = []string{"/bin/bash", FluxConfigDir + "/entrypoint.sh", command}
	trainerContainer.Args = runtimeTrainerArgs(rt)

	cert, err := fluxCurveCert(tj)
	if err != nil {
		return nil, err
	}
	return []client.Object{
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: configMap, Namespace: tj.Namespace},
			Data:       scripts,
		},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: FluxCurveSecretName(tj.Name), Namespace: tj.Namespace},
			Data:       map[string][]byte{fluxCurveKey: cert},
		},
	}, nil
}

// trainerArgs are the TrainJob's trainer.args.
func trainerArgs(tj *trainerv1alpha1.TrainJob) []string {
	if tr := tj.Spec.Trainer; tr != nil {
		return tr.Args
	}
	return nil
}

// runtimeTrainerArgs are the args of the runtime template's trainer "node" container.
func runtimeTrainerArgs(rt *Runtime) []string {
	if _, c := trainerNode(&rt.Spec.Template.Spec); c != nil {
		return slices.Clone(c.Args)
	}
	return nil
}

// fluxSettings are the installer image, network device and queue policy: the defaults, then
// the trainer container's plain env (the runtime's, then the TrainJob's).
func fluxSettings(c *corev1.Container) map[string]string {
	settings := map[string]string{
		EnvFluxViewImage:     FluxDefaultViewImage,
		EnvFluxNetworkDevice: "eth0",
		EnvFluxQueuePolicy:   "fcfs",
	}
	for _, e := range c.Env {
		if _, ok := settings[e.Name]; ok && e.ValueFrom == nil {
			settings[e.Name] = e.Value
		}
	}
	return settings
}

// fluxVolumes are the node pods' Flux volumes.
func fluxVolumes(trainJob string) []corev1.Volume {
	return []corev1.Volume{
		{Name: fluxSpackVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: fluxInstallVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: FluxEntrypointConfigMapName(trainJob), VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: FluxEntrypointConfigMapName(trainJob)},
			DefaultMode:          ptr.To[int32](0o755),
		}}},
		{Name: fluxMemoryVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: fluxCurveVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: FluxCurveSecretName(trainJob), DefaultMode: ptr.To[int32](0o400),
		}}},
	}
}

// fluxHostlist writes hosts in Flux's hostlist form, `<prefix>[0-N]`, when they are one prefix
// followed by their index (as on both workload paths), else as a comma-separated list.
func fluxHostlist(hosts []string) string {
	prefix := strings.TrimSuffix(hosts[0], "0")
	for i, h := range hosts {
		if h != prefix+strconv.Itoa(i) {
			return strings.Join(hosts, ",")
		}
	}
	return prefix + "[" + indexRange(len(hosts)) + "]"
}

// indexRange is "0" for one item, else "0-<n-1>".
func indexRange(n int) string {
	if n == 1 {
		return "0"
	}
	return fmt.Sprintf("0-%d", n-1)
}

// fluxBrokerConfig is broker.toml: the instance's hosts and how brokers reach each other
// through the headless Service's domain, its CURVE certificate and scheduler queue policy.
func fluxBrokerConfig(hostlist, domain string, settings map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[access]\nallow-guest-user = true\nallow-root-owner = true\n\n")
	fmt.Fprintf(&b, "[resource]\npath = %q\n\n", fluxInstallPath+"/config/etc/flux/system/R")
	fmt.Fprintf(&b, "[bootstrap]\ncurve_cert = %q\ndefault_port = %d\n", fluxInstallPath+"/config/etc/curve/"+fluxCurveKey, FluxBrokerPort)
	fmt.Fprintf(&b, "default_bind = %q\n", "tcp://"+settings[EnvFluxNetworkDevice]+":%p")
	fmt.Fprintf(&b, "default_connect = %q\n", "tcp://%h."+domain+":%p")
	fmt.Fprintf(&b, "hosts = [\n  { host = %q },\n]\n\n", hostlist)
	fmt.Fprintf(&b, "[archive]\ndbpath = %q\nperiod = \"1m\"\nbusytimeout = \"50s\"\n\n", fluxInstallPath+"/config/var/lib/flux/job-archive.sqlite")
	fmt.Fprintf(&b, "[sched-fluxion-qmanager]\nqueue-policy = %q\n", settings[EnvFluxQueuePolicy])
	return b.String()
}

// fluxScripts renders init.sh and entrypoint.sh.
func fluxScripts(hostlist, leadHost, runFlags, resourceFlags, brokerConfig string) (map[string]string, error) {
	data := map[string]string{
		"Hosts": hostlist, "LeadHost": leadHost, "RunFlags": runFlags,
		"ResourceFlags": resourceFlags, "BrokerConfig": brokerConfig,
	}
	out := map[string]string{}
	for _, t := range []*template.Template{fluxInit, fluxEntrypoint} {
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("rendering Flux's %s: %w", t.Name(), err)
		}
		out[t.Name()] = b.String()
	}
	return out, nil
}

// fluxCurveCert is a ZeroMQ CURVE certificate whose X25519 key is the SHA-256 of the TrainJob's
// UID, as Kubeflow Trainer derives it: rebuilding the Secret gives the same key.
func fluxCurveCert(tj *trainerv1alpha1.TrainJob) ([]byte, error) {
	seed := sha256.Sum256([]byte(tj.UID))
	key, err := ecdh.X25519().NewPrivateKey(seed[:])
	if err != nil {
		return nil, fmt.Errorf("deriving the Flux CURVE key of TrainJob %s: %w", tj.Name, err)
	}
	return fmt.Appendf(nil, "#  ZeroMQ CURVE Secret Certificate\n#  Written for TrainJob %s\n\nmetadata\n    name = %q\ncurve\n    public-key = %q\n    secret-key = %q\n",
		tj.Name, tj.Name, z85(key.PublicKey().Bytes()), z85(key.Bytes())), nil
}

// z85 encodes data (a multiple of 4 bytes) in ZeroMQ's Z85 (RFC 32/Z85).
func z85(data []byte) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
	out := make([]byte, 0, len(data)/4*5)
	for i := 0; i+4 <= len(data); i += 4 {
		v := uint32(data[i])<<24 | uint32(data[i+1])<<16 | uint32(data[i+2])<<8 | uint32(data[i+3])
		var chunk [5]byte
		for j := 4; j >= 0; j-- {
			chunk[j] = alphabet[v%85]
			v /= 85
		}
		out = append(out, chunk[:]...)
	}
	return string(out)
}
