// Command kubeflow-render prints what Kubeflow Trainer v2.3.0's own runtime framework builds
// for a TrainJob: it reads a (Cluster)TrainingRuntime and a TrainJob (YAML or JSON documents,
// as stored by an API server, defaults applied) on stdin, runs Kubeflow's plugins against an
// in-memory client holding the runtime, and writes the built objects as a JSON list. Tests
// compare this project's workloads with it; nothing here is linked into the project's binaries.
//
// With --status-service, --status-port and --status-ca the TrainJobStatus feature gate is on, as
// with Kubeflow's status server deployed behind that Service name and port with that CA: the
// trainer containers get the KUBEFLOW_TRAINER_SERVER_* env and token volume, and the
// <trainjob>-tls-config ConfigMap is built. Kubeflow names its own namespace in the URL
// (kubeflow-system outside a cluster).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/features"
	"github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"github.com/kubeflow/trainer/v2/pkg/util/cert"
)

// noIndexer stands in for the manager's field indexer: building objects never lists by index.
type noIndexer struct{}

func (noIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}

// statusServer is Kubeflow's status server as deployed; zero when the gate is off.
type statusServer struct {
	service string
	port    int
	ca      []byte
}

func main() {
	service := flag.String("status-service", "", "turn TrainJobStatus on, with the status server behind this Service name")
	port := flag.Int("status-port", 10443, "the status server's port")
	caFile := flag.String("status-ca", "", "PEM file of the CA the status server's certificate chains to")
	flag.Parse()
	var status statusServer
	if *service != "" {
		ca, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubeflow-render: --status-ca:", err)
			os.Exit(2)
		}
		status = statusServer{service: *service, port: *port, ca: ca}
	}
	if err := run(os.Stdin, os.Stdout, status); err != nil {
		fmt.Fprintln(os.Stderr, "kubeflow-render:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, status statusServer) error {
	scheme := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, trainer.AddToScheme, jobsetv1alpha2.AddToScheme,
		schedulerpluginsv1alpha1.AddToScheme, volcanov1beta1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	var tj *trainer.TrainJob
	var objs []client.Object
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(in), 4096)
	for {
		var meta struct{ Kind string }
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			return err
		}
		var obj client.Object
		switch meta.Kind {
		case trainer.TrainJobKind:
			tj = &trainer.TrainJob{}
			obj = tj
		case trainer.ClusterTrainingRuntimeKind:
			obj = &trainer.ClusterTrainingRuntime{}
		case trainer.TrainingRuntimeKind:
			obj = &trainer.TrainingRuntime{}
		default:
			return fmt.Errorf("unexpected kind %q", meta.Kind)
		}
		if err := json.Unmarshal(raw, obj); err != nil {
			return fmt.Errorf("decoding %s: %w", meta.Kind, err)
		}
		if obj != tj {
			objs = append(objs, obj)
		}
	}
	if tj == nil {
		return errors.New("no TrainJob on stdin")
	}
	ctx := context.Background()
	cfg := &configapi.Configuration{}
	if status.service != "" {
		if err := features.SetEnable(features.TrainJobStatus, true); err != nil {
			return err
		}
		const secret = "kubeflow-trainer-webhook-cert"
		cfg.CertManagement = &configapi.CertManagement{WebhookServiceName: status.service, WebhookSecretName: secret}
		cfg.StatusServer = &configapi.StatusServer{Port: ptr.To(int32(status.port))}
		// Where Kubeflow's plugin reads the CA from: its webhook Secret in its own namespace.
		objs = append(objs, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: cert.GetOperatorNamespace(), Name: secret},
			Data:       map[string][]byte{"ca.crt": status.ca},
		})
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	runtimes, err := core.New(ctx, c, noIndexer{}, cfg)
	if err != nil {
		return err
	}
	kind := trainer.ClusterTrainingRuntimeKind
	if k := tj.Spec.RuntimeRef.Kind; k != nil {
		kind = *k
	}
	rt, ok := runtimes[trainer.GroupVersion.WithKind(kind).GroupKind().String()]
	if !ok {
		return fmt.Errorf("no Kubeflow runtime for %s", kind)
	}
	if _, errs := rt.ValidateObjects(ctx, nil, tj); len(errs) > 0 {
		return fmt.Errorf("Kubeflow refuses the TrainJob: %w", errs.ToAggregate())
	}
	built, err := rt.NewObjects(ctx, tj)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(built)
}
