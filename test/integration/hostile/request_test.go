package hostileintegration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubegrove/grove/test/cluster"
)

// apiHost is the API server's URL; httpClient authenticates as an admin there.
var apiHost string

func newHTTPClient(c *cluster.Cluster) (*http.Client, error) {
	cfg := c.RESTConfig()
	apiHost = cfg.Host
	return rest.HTTPClientFor(cfg)
}

// Collection paths of the kinds the corpus submits.
const (
	pcsPath      = "/apis/grove.io/v1alpha1/namespaces/%s/podcliquesets"
	pclqPath     = "/apis/grove.io/v1alpha1/namespaces/%s/podcliques"
	pcsgPath     = "/apis/grove.io/v1alpha1/namespaces/%s/podcliquescalinggroups"
	podGangPath  = "/apis/scheduler.grove.io/v1alpha1/namespaces/%s/podgangs"
	trainJobPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs"
	runtimePath  = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainingruntimes"
)

// response is what the API server answered.
type response struct {
	code     int
	body     string
	status   metav1.Status // when the answer is a Status (every refusal)
	warnings []string
}

// message is the refusal as a user reads it: the Status message plus every cause.
func (r response) message() string {
	var b strings.Builder
	b.WriteString(r.status.Message)
	if r.status.Details != nil {
		for _, c := range r.status.Details.Causes {
			fmt.Fprintf(&b, "\n%s: %s", c.Field, c.Message)
		}
	}
	if b.Len() == 0 {
		return r.body
	}
	return b.String()
}

// send makes one request with a raw body; strict asks for fieldValidation=Strict (what kubectl
// does by default), otherwise the server's default (unknown fields dropped with a warning).
func send(t *testing.T, method, path string, body []byte, strict bool, contentType string) response {
	t.Helper()
	url := apiHost + path
	if strict {
		url += "?fieldValidation=Strict"
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := response{code: resp.StatusCode, body: string(data), warnings: resp.Header.Values("Warning")}
	if resp.StatusCode >= 300 {
		_ = json.Unmarshal(data, &r.status)
	}
	return r
}

// create POSTs obj (a map, or raw bytes sent as they are) to the collection path in ns.
func create(t *testing.T, collection, ns string, obj any, strict bool) response {
	t.Helper()
	body, ok := obj.([]byte)
	if !ok {
		var err error
		body, err = json.Marshal(obj)
		require.NoError(t, err)
	}
	return send(t, http.MethodPost, fmt.Sprintf(collection, ns), body, strict, "")
}

// get reads one object as a map.
func get(t *testing.T, collection, ns, name string) map[string]any {
	t.Helper()
	r := send(t, http.MethodGet, fmt.Sprintf(collection, ns)+"/"+name, nil, false, "")
	require.Equal(t, http.StatusOK, r.code, r.body)
	return decode(t, r.body)
}

// decode reads an object as unstructured does: whole numbers as int64.
func decode(t *testing.T, body string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	require.NoError(t, utiljson.Unmarshal([]byte(body), &obj))
	return obj
}

// fromYAML turns a manifest into the map the corpus mutates.
func fromYAML(t *testing.T, manifest string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &obj))
	return obj
}

// set puts v at path in a decoded object (string keys for maps, int indices for lists),
// creating maps on the way.
func set(obj map[string]any, v any, path ...any) {
	var cur any = obj
	for i, step := range path {
		last := i == len(path)-1
		switch s := step.(type) {
		case string:
			m := cur.(map[string]any)
			if last {
				m[s] = v
				return
			}
			if _, ok := m[s]; !ok {
				m[s] = map[string]any{}
			}
			cur = m[s]
		case int:
			l := cur.([]any)
			if last {
				l[s] = v
				return
			}
			cur = l[s]
		}
	}
}

// raw is a JSON number kept exactly as written, so values beyond int32 and int64 reach the
// server unchanged.
func raw(n string) json.Number { return json.Number(n) }

// newNamespace creates a namespace for one test. There is no namespace controller in this
// API-server-only cluster, so namespaces are left behind with the cluster.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"generateName": "hostile-"}}
	body, err := json.Marshal(ns)
	require.NoError(t, err)
	r := send(t, http.MethodPost, "/api/v1/namespaces", body, true, "")
	require.Equal(t, http.StatusCreated, r.code, r.body)
	created := corev1.Namespace{}
	require.NoError(t, json.Unmarshal([]byte(r.body), &created))
	return created.Name
}

// longName is a DNS label of n characters.
func longName(n int) string { return "n" + strings.Repeat("a", n-1) }

// deepJSON is a JSON object nested depth levels deep under the key "x".
func deepJSON(depth int) string {
	return strings.Repeat(`{"x":`, depth) + "1" + strings.Repeat("}", depth)
}

func itoa(i int) string { return strconv.Itoa(i) }
