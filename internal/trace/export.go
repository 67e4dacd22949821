package trace

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"
)

// checkEndpoints refuses an OTLP endpoint the SDK would silently replace
// with its default (https://localhost:4318): each of the standard
// variables that is set must be an http or https URL with a host.
func checkEndpoints() error {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		s := os.Getenv(v)
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.User != nil {
			return fmt.Errorf("%s is not an OTLP endpoint: give an http or https URL with a host and no credentials, such as http://localhost:4318 (docs/tracing.md)", v)
		}
	}
	return nil
}

// exporterClient is the exporter's HTTP client. It is the SDK's own, but
// a redirect to another host (or scheme) is not followed: the exporter's
// headers (OTEL_EXPORTER_OTLP_HEADERS, an API key) go to the collector
// named and nowhere else. OTEL_EXPORTER_OTLP_TIMEOUT and the certificate
// variables apply as the SDK reads them (a client of one's own replaces
// the SDK's reading of them).
func exporterClient() (*http.Client, error) {
	timeout := 10 * time.Second
	if ms, ok := lookup("TIMEOUT"); ok {
		n, err := strconv.Atoi(ms)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%s: give milliseconds, such as 10000", ms)
		}
		timeout = time.Duration(n) * time.Millisecond
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tlsCfg, err := tlsConfig()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: sameHost}, nil
}

// sameHost follows a collector's redirect only to the same scheme and
// host.
func sameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("the collector redirected 10 times")
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("the collector %s redirected to another host, %s://%s: not followed, so that the exporter's headers stay with the collector", first.Host, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// lookup reads OTEL_EXPORTER_OTLP_TRACES_<name>, else
// OTEL_EXPORTER_OTLP_<name>.
func lookup(name string) (string, bool) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + name, "OTEL_EXPORTER_OTLP_" + name} {
		if s := os.Getenv(v); s != "" {
			return s, true
		}
	}
	return "", false
}

// tlsConfig is what the certificate variables ask for, nil when none is
// set.
func tlsConfig() (*tls.Config, error) {
	ca, hasCA := lookup("CERTIFICATE")
	cert, hasCert := lookup("CLIENT_CERTIFICATE")
	key, hasKey := lookup("CLIENT_KEY")
	if !hasCA && !hasCert && !hasKey {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if hasCA {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("the OTLP certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the OTLP certificate %s holds no PEM certificate", ca)
		}
		cfg.RootCAs = pool
	}
	if hasCert != hasKey {
		return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together")
	}
	if hasCert {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("the OTLP client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// scrubbed is an error of the exporter as flow says it: the secrets it
// knows redacted, and every secret shape masked.
type scrubbed struct{ msg string }

func (e scrubbed) Error() string { return e.msg }
