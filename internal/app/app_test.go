package app

import (
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/assert"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
)

func TestMetricsAreSecuredOnlyWhenConfiguredAndOtherwiseStayOnTheirAddress(t *testing.T) {
	cases := []struct {
		name     string
		metrics  configv1alpha1.MetricsServer
		bind     string
		secure   bool
		loopback bool
	}{
		{"default: plain on 127.0.0.1", configv1alpha1.MetricsServer{Endpoint: configv1alpha1.Endpoint{BindAddress: "127.0.0.1", Port: 8080}}, "127.0.0.1:8080", false, true},
		{"as deployed: secure on every interface", configv1alpha1.MetricsServer{Endpoint: configv1alpha1.Endpoint{BindAddress: "0.0.0.0", Port: 8443}, Secure: true, CertDir: "/certs"}, "0.0.0.0:8443", true, false},
		{"IPv6 loopback", configv1alpha1.MetricsServer{Endpoint: configv1alpha1.Endpoint{BindAddress: "::1", Port: 8080}}, "[::1]:8080", false, true},
		{"localhost by name", configv1alpha1.MetricsServer{Endpoint: configv1alpha1.Endpoint{BindAddress: "localhost", Port: 8080}}, "localhost:8080", false, true},
		{"empty means every interface", configv1alpha1.MetricsServer{Endpoint: configv1alpha1.Endpoint{Port: 8080}}, ":8080", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := metricsOptions(tc.metrics)
			assert.Equal(t, tc.bind, opts.BindAddress)
			assert.Equal(t, tc.secure, opts.SecureServing)
			assert.Equal(t, tc.secure, opts.FilterProvider != nil, "secure serving always authenticates and authorizes")
			if tc.secure {
				assert.Equal(t, tc.metrics.CertDir, opts.CertDir)
				cfg := &tls.Config{}
				for _, o := range opts.TLSOpts {
					o(cfg)
				}
				assert.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)
			}
			assert.Equal(t, tc.loopback, isLoopback(tc.metrics.BindAddress))
		})
	}
}

func TestTheConfiguredLogLevelDecidesWhichLinesAreWritten(t *testing.T) {
	for _, tc := range []struct {
		level       configv1alpha1.LogLevel
		info, debug bool
	}{
		{configv1alpha1.LogLevelDebug, true, true},
		{configv1alpha1.LogLevelInfo, true, false},
		{"", true, false},
		{configv1alpha1.LogLevelError, false, false},
	} {
		log := newLogger(&configv1alpha1.OperatorConfiguration{LogLevel: tc.level})
		assert.Equal(t, tc.info, log.Enabled(), "%q: V(0) lines (decisions that change the cluster)", tc.level)
		assert.Equal(t, tc.debug, log.V(1).Enabled(), "%q: V(1) lines (waits, detail)", tc.level)
	}
}
