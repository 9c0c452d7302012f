package svcmain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// SecretEnvs are the settings that may also be given as a file: for each
// NAME, NAME_FILE names a file whose content is the value. Docker and
// Compose secrets are files (/run/secrets/...), and the service images have
// no shell to export them. LANGBOT_CONSOLE_KEY is takeover's console key; it
// is listed here so that every binary reads secrets the same way.
func SecretEnvs() []string {
	return []string{"NATS_PASSWORD", "LANGBOT_STATE_KEY", "LANGBOT_CONSOLE_KEY", AuthIssuerSeedEnv}
}

// maxSecretFile bounds what a NAME_FILE read takes: secrets are short, and
// a wrong path (a log, a device) must not be read whole.
const maxSecretFile = 64 << 10

// WithSecretFiles returns getenv with each of names resolved from its
// NAME_FILE when NAME itself is empty. The file's content is the value, one
// trailing newline (LF or CRLF) removed. Setting both NAME and NAME_FILE, an
// unreadable file, an empty one or one over 64 KiB is an error naming the
// variable (never the content).
func WithSecretFiles(getenv func(string) string, names ...string) (func(string) string, error) {
	read := map[string]string{}
	for _, name := range names {
		path := getenv(name + "_FILE")
		if path == "" {
			continue
		}
		if getenv(name) != "" {
			return nil, fmt.Errorf("svcmain: both %s and %s_FILE are set; set one", name, name)
		}
		v, err := readSecretFile(path)
		if err != nil {
			return nil, fmt.Errorf("svcmain: %s_FILE: %w", name, err)
		}
		read[name] = v
	}
	if len(read) == 0 {
		return getenv, nil
	}
	return func(k string) string {
		if v, ok := read[k]; ok {
			return v
		}
		return getenv(k)
	}, nil
}

func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxSecretFile)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// errNotReady is returned by Probe for an answer other than 200.
var errNotReady = errors.New("svcmain: not ready")

// Probe asks the service listening on httpAddr (the LANGBOT_HTTP_ADDR form,
// ":8080" or "host:port") for /readyz over loopback and returns nil on 200.
// It is the container health check of images without a shell or an HTTP
// client ("<binary> -healthcheck").
func Probe(ctx context.Context, httpAddr string) error {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return fmt.Errorf("svcmain: health check address %q: %w", httpAddr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/readyz", nil)
	if err != nil {
		return fmt.Errorf("svcmain: health check: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("svcmain: health check: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: /readyz answered %d", errNotReady, resp.StatusCode)
	}
	return nil
}
