// Package render is `kubectl grove render`: what grove-webhook, grove-operator, the
// backend-controller and the trainer-controller make of manifests, computed without a cluster by
// the code those binaries run.
package render

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/internal/app"
)

// Scheme holds every kind render reads or prints: the binaries' own and the schedulers'.
func Scheme() *runtime.Scheme {
	s, err := app.Scheme(jobsetv1alpha2.AddToScheme, kaiv2alpha2.AddToScheme, kaiv1alpha1.AddToScheme, schedv1alpha1.AddToScheme, volcanov1beta1.AddToScheme)
	if err != nil {
		panic(err) // the kinds are compiled in: a conflict is a programming error
	}
	return s
}

// Input is what the manifests hold, in file order.
type Input struct {
	PodCliqueSets   []*grovev1alpha1.PodCliqueSet
	TrainJobs       []*trainerv1alpha1.TrainJob
	Runtimes        []*trainerv1alpha1.TrainingRuntime
	ClusterRuntimes []*trainerv1alpha1.ClusterTrainingRuntime
	Bindings        []*grovev1alpha1.ClusterTopologyBinding
	// Skipped names the documents of other kinds (a Queue, a ResourceClaimTemplate): they are not
	// rendered, and said so.
	Skipped []string
}

// Decode reads YAML or JSON documents strictly, as the API server does with
// fieldValidation=Strict: an unknown or duplicated field is an error naming it, so nothing a
// user wrote is silently dropped. source names the input in errors.
func Decode(in *Input, r io.Reader, source string, defaultNamespace string) error {
	decoder := serializer.NewCodecFactory(Scheme(), serializer.EnableStrict).UniversalDeserializer()
	docs := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for n := 1; ; n++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", source, n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || isComment(doc) {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			var tm metav1.PartialObjectMetadata
			_ = yaml.Unmarshal(doc, &tm) // it decoded far enough to name its kind
			in.Skipped = append(in.Skipped, fmt.Sprintf("%s: document %d: %s %s is not rendered", source, n, tm.Kind, tm.Name))
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", source, n, err)
		}
		if o, ok := obj.(client.Object); ok && o.GetNamespace() == "" {
			o.SetNamespace(defaultNamespace)
		}
		switch o := obj.(type) {
		case *grovev1alpha1.PodCliqueSet:
			in.PodCliqueSets = append(in.PodCliqueSets, o)
		case *trainerv1alpha1.TrainJob:
			in.TrainJobs = append(in.TrainJobs, o)
		case *trainerv1alpha1.TrainingRuntime:
			in.Runtimes = append(in.Runtimes, o)
		case *trainerv1alpha1.ClusterTrainingRuntime:
			o.SetNamespace("")
			in.ClusterRuntimes = append(in.ClusterRuntimes, o)
		case *grovev1alpha1.ClusterTopologyBinding:
			o.SetNamespace("")
			in.Bindings = append(in.Bindings, o)
		default:
			in.Skipped = append(in.Skipped, fmt.Sprintf("%s: document %d: %s %s is not rendered", source, n, gvk.Kind, obj.(client.Object).GetName()))
		}
	}
}

// isComment reports whether a document holds only comments.
func isComment(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if l := bytes.TrimSpace(line); len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}
