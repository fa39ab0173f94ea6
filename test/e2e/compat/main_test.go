// Package compat runs what users bring from upstream Grove on the local cluster with the four
// binaries — its samples (vendored, unchanged) and the workloads of its e2e suite as the project
// builds them (test/upstreamshapes); with the upstream corpus tier (GROVE_UPSTREAM_CORPUS) also
// upstream's e2e manifests unchanged — and requires each to be admitted and every pod to run.
// Upstream's workloads name kai-scheduler: a second kube-scheduler serves that scheduler name
// (KAI's modules are not fetchable; the KAI backend-controller still keeps its PodGroups and
// acknowledges the gangs), and the kwok nodes carry upstream's e2e node label. DRA runs for real:
// kube-scheduler allocates the ResourceClaims of resource sharing from ResourceSlices this
// package publishes for the kwok nodes, standing in for a driver.
package compate2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2 "github.com/kubegrove/grove/apis/kai/v2"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
	"github.com/kubegrove/grove/test/upstreamcorpus"
	"github.com/kubegrove/grove/test/upstreamshapes"
)

// operatorConfig enables both schedulers upstream's manifests name, topology-aware scheduling and
// MNNVL. kube-scheduler stays in plain mode: upstream's manifests ask for pack.preferred, which
// kube-scheduler gangs refuse at admission (docs/upstream-compatibility.md).
const operatorConfig = `topologyAwareScheduling: {enabled: true}
network: {autoMNNVLEnabled: true}
scheduler:
  profiles:
  - name: kube-scheduler
    default: true
  - name: kai-scheduler
    config: {defaultQueue: default}
`

// nodes is the number of kwok nodes: room for upstream's 1000-pod manifests beside the others.
const nodes = 8

// labelE2ENode is the node label (and toleration key) upstream's e2e manifests select.
const labelE2ENode = "node_role.e2e.grove.nvidia.com"

// draDriver is the DRA driver the ResourceSlices of this package name.
const draDriver = "dra.kubegrove.test"

// devicesPerNode is how many devices each node's ResourceSlice offers: enough that one node can
// hold every claim of upstream's resource-sharing workload (its pods share AllReplicas claims, so
// they all land on one node) while the MNNVL pods of the other tests take channels.
const devicesPerNode = 64

var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func node(i int) cluster.NodeSpec {
	n := cluster.DefaultNode(i)
	n.Capacity[corev1.ResourcePods] = resource.MustParse("1000")
	n.Capacity[corev1.ResourceCPU] = resource.MustParse("1000")
	n.Capacity[corev1.ResourceMemory] = resource.MustParse("4Ti")
	n.Labels[labelE2ENode] = "agent"
	return n
}

func run(m *testing.M) int {
	root, err := toolpath.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nvidiaCRDs := filepath.Join(root, "config", "thirdparty", "nvidia")
	// The deployment's lease timings (config/operator-config), not the tests' fast takeovers: no
	// test here kills a leader, and with upstream's thousands of pods on two cores the API server
	// has answered a lease renewal in more than the tests' 4 s deadline.
	opts := cluster.Options{Nodes: nodes, Node: node, CRDDirs: []string{nvidiaCRDs},
		LeaderElectionTimings: "leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s"}
	return cluster.MainWithBinaries(m, opts, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartWebhook(binDir, operatorConfig, time.Minute); err != nil {
			return err
		}
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", operatorConfig); err != nil {
			return err
		}
		for _, b := range []string{"kube-scheduler", "kai-scheduler"} {
			if _, err := c.StartBinaryAs(binDir, "backend-controller", "backend-controller-"+b, "backend-controller-"+b, operatorConfig, "--backend="+b); err != nil {
				return err
			}
		}
		if err := c.StartKAIStandIn(); err != nil {
			return err
		}
		ctx := context.Background()
		if err := publishDevices(ctx, c); err != nil {
			return err
		}
		go standInForComputeDomainController(c)
		if err := createBindings(ctx, c); err != nil {
			return err
		}
		return createQueues(ctx, c)
	})
}

// deviceClasses are the classes upstream's resource-sharing manifest and this package's tests
// request; each takes any device of draDriver.
var deviceClasses = []string{"compute-domain-channel", "int-class", "int-class2", "int-class3", "int-class4", "int-class5", "int-class6", "int-class7", "int-class8", "ext-class", "ext-ns-class", "shared-gpu"}

// publishDevices stands in for a DRA driver: the device classes, and one ResourceSlice per kwok
// node offering devicesPerNode devices.
func publishDevices(ctx context.Context, c *cluster.Cluster) error {
	k := c.Client()
	for _, name := range deviceClasses {
		dc := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", draDriver)}}},
		}}
		if err := k.Create(ctx, dc); err != nil {
			return fmt.Errorf("DeviceClass %s: %w", name, err)
		}
	}
	for i := range nodes {
		n := cluster.DefaultNode(i).Name
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "devices-" + n}, Spec: resourcev1.ResourceSliceSpec{
			Driver: draDriver, NodeName: ptr.To(n),
			Pool: resourcev1.ResourcePool{Name: n, Generation: 1, ResourceSliceCount: 1},
		}}
		for d := range devicesPerNode {
			slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("dev-%d", d)})
		}
		if err := k.Create(ctx, slice); err != nil {
			return fmt.Errorf("ResourceSlice of %s: %w", n, err)
		}
	}
	return nil
}

// createBindings creates the ClusterTopologyBindings upstream's manifests name, over the kwok
// nodes' topology labels.
func createBindings(ctx context.Context, c *cluster.Cluster) error {
	levels := []grovev1alpha1.TopologyLevel{
		{Domain: "zone", Key: cluster.LabelZone}, {Domain: "block", Key: cluster.LabelBlock},
		{Domain: "rack", Key: cluster.LabelRack}, {Domain: "host", Key: corev1.LabelHostname},
	}
	for _, name := range []string{"grove-topology", "gb200-topology", "h100-topology", "tas20-topology"} {
		ct := &grovev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: grovev1alpha1.ClusterTopologyBindingSpec{Levels: levels}}
		if err := c.Client().Create(ctx, ct); err != nil {
			return fmt.Errorf("ClusterTopologyBinding %s: %w", name, err)
		}
	}
	return nil
}

// queues are the KAI queues the workloads name: default, the kai-scheduler profile's
// defaultQueue, and test beneath it, which upstream's workloads label; neither has a quota or a
// limit on CPU, GPU or memory.
func queues() []*kaiv2.Queue {
	unlimited := func() *kaiv2.QueueResources {
		q := func() *kaiv2.ResourceQuota { return &kaiv2.ResourceQuota{Quota: -1, Limit: -1, OverQuotaWeight: 1} }
		return &kaiv2.QueueResources{CPU: q(), GPU: q(), Memory: q()}
	}
	return []*kaiv2.Queue{
		{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kaiv2.QueueSpec{Resources: unlimited()}},
		{ObjectMeta: metav1.ObjectMeta{Name: upstreamshapes.QueueTest}, Spec: kaiv2.QueueSpec{ParentQueue: "default", Resources: unlimited()}},
	}
}

// createQueues creates the project's KAI queues and, for the upstream corpus tier, applies
// upstream's queues.yaml unchanged over them (server-side, as kubectl apply would).
func createQueues(ctx context.Context, c *cluster.Cluster) error {
	for _, q := range queues() {
		if err := c.Client().Create(ctx, q); err != nil {
			return fmt.Errorf("Queue %s: %w", q.Name, err)
		}
	}
	dir, err := upstreamcorpus.Dir()
	if err != nil {
		fmt.Printf("upstream corpus tier: upstream's queues.yaml not applied (%v); set %s to the folder holding compat/ and crds/ to run that tier\n", err, upstreamcorpus.Env)
		return nil
	}
	objs, err := apiserver.ReadManifests(filepath.Join(dir, "compat", "grove-e2e", "queues.yaml"))
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Client().Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("upstream-corpus"), client.ForceOwnership); err != nil {
			return fmt.Errorf("upstream's Queue %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// standInForComputeDomainController does what NVIDIA's ComputeDomain controller does for the
// pods: it makes the ResourceClaimTemplate each ComputeDomain names for its channel (owned by the
// ComputeDomain), here requesting a device of this package's driver. It runs until the process
// ends.
func standInForComputeDomainController(c *cluster.Cluster) {
	wait.UntilWithContext(context.Background(), func(ctx context.Context) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(grovev1alpha1.ComputeDomainGVK.GroupVersion().WithKind("ComputeDomainList"))
		if err := c.Client().List(ctx, list); err == nil {
			for i := range list.Items {
				cd := &list.Items[i]
				name, _, _ := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
				if name == "" || cd.GetDeletionTimestamp() != nil {
					continue
				}
				rct := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cd.GetNamespace(),
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cd, grovev1alpha1.ComputeDomainGVK)}}}
				rct.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "channel", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "compute-domain-channel"}}}
				_ = c.Client().Create(ctx, rct) // AlreadyExists once made
			}
		}
	}, 200*time.Millisecond)
}

// runTimeout bounds the wait for one of this package's own workloads to run: they share two cores
// with upstream's corpus of thousands of pods (more than 2 minutes has been seen). A workload that
// runs ends the wait at once.
const runTimeout = 5 * time.Minute
