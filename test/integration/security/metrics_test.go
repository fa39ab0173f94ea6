package securityintegration

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
)

// listenAddresses returns the local IPs the host listens on at a TCP port, read from
// /proc/net/tcp and tcp6: the kernel's word on who can connect.
func listenAddresses(t *testing.T, port int) []string {
	t.Helper()
	var ips []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if os.IsNotExist(err) {
			continue // no IPv6 on this host
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			const listen = "0A"
			if len(fields) < 4 || fields[3] != listen {
				continue
			}
			hostHex, portHex, _ := strings.Cut(fields[1], ":")
			p, err := strconv.ParseUint(portHex, 16, 16)
			require.NoError(t, err)
			if int(p) != port {
				continue
			}
			raw, err := hex.DecodeString(hostHex)
			require.NoError(t, err)
			// The kernel prints each 32-bit word in host (little-endian) order.
			for i := 0; i+4 <= len(raw); i += 4 {
				raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
			}
			ips = append(ips, net.IP(raw).String())
		}
		f.Close()
		require.NoError(t, sc.Err())
	}
	return ips
}

// scraperTokens returns bearer tokens of two ServiceAccounts: one bound to the deployment's
// ClusterRole grove-metrics-reader (config/rbac/metrics-reader), one bound to nothing.
func scraperTokens(t *testing.T) (reader, stranger string) {
	t.Helper()
	ctx := context.Background()
	c := cluster.Current.Client()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	roles, err := apiserver.ReadManifests(filepath.Join(root, "config", "rbac", "metrics-reader", "role.yaml"))
	require.NoError(t, err)
	require.Len(t, roles, 1)
	require.NoError(t, c.Apply(ctx, client.ApplyConfigurationFromUnstructured(roles[0]), client.FieldOwner("grove-test"), client.ForceOwnership))

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scrapers-"}}
	require.NoError(t, c.Create(ctx, ns))
	cs, err := kubernetes.NewForConfig(cluster.Current.RESTConfig())
	require.NoError(t, err)
	token := func(name string) string {
		require.NoError(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name}}))
		tr, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	reader, stranger = token("prometheus"), token("stranger")
	require.NoError(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns.Name + "-prometheus"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roles[0].GetName()},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns.Name, Name: "prometheus"}},
	}))
	return reader, stranger
}

// scrape GETs /metrics over HTTPS (the certificate is self-signed: the test checks who is
// answered, not the metrics server's identity) with an optional bearer token.
func scrape(port int, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // self-signed metrics certificate
	}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestMetricsListenOnLoopbackByDefaultAndAnswerOnlyAuthorizedScrapers(t *testing.T) {
	reader, stranger := scraperTokens(t)
	for _, b := range binaries {
		t.Run(b.name, func(t *testing.T) {
			t.Run("without a bindAddress the listener is on 127.0.0.1 only", func(t *testing.T) {
				var ips []string
				require.Eventually(t, func() bool {
					ips = listenAddresses(t, b.metricsPort)
					return len(ips) > 0
				}, 30*time.Second, 100*time.Millisecond, "the metrics listener comes up")
				assert.Equal(t, []string{"127.0.0.1"}, ips, "no other interface can reach the metrics")
			})
			t.Run("plain HTTP is refused", func(t *testing.T) {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", b.metricsPort)) //nolint:gosec // the point is plain HTTP
				if err != nil {
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.True(t, isPlainHTTPRefusal(resp.StatusCode, string(body)), "plain HTTP got %d %q", resp.StatusCode, body)
			})
			scrapers := []struct {
				name  string
				token string
				codes []int
			}{
				{"an anonymous scrape is unauthorized", "", []int{http.StatusUnauthorized}},
				// The API server's TokenReview reports an error for a token it cannot parse, and
				// controller-runtime's filter answers any authentication error with 500
				// "Authentication failed": refused either way.
				{"a forged token is refused", "not-a-token", []int{http.StatusUnauthorized, http.StatusInternalServerError}},
				{"a ServiceAccount without grove-metrics-reader is forbidden", stranger, []int{http.StatusForbidden}},
				{"a ServiceAccount bound to grove-metrics-reader reads the metrics", reader, []int{http.StatusOK}},
			}
			for _, s := range scrapers {
				t.Run(s.name, func(t *testing.T) {
					code, body, err := scrape(b.metricsPort, s.token)
					require.NoError(t, err)
					require.Contains(t, s.codes, code, "%s answered %q", b.name, body)
					if code == http.StatusOK {
						assert.Contains(t, body, "# TYPE ", "Prometheus text format")
					} else {
						assert.NotContains(t, body, "# TYPE ", "a refused scrape sees no metric")
					}
				})
			}
		})
	}
}
