package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "langbot-plugins test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestTLSListener: with a certificate the client port speaks TLS only,
// while the services (connected in process) serve as usual.
func TestTLSListener(t *testing.T) {
	t.Parallel()
	gh := fakegithub.New(fakegithub.Options{})
	defer gh.Close()
	in := newInstall(t, gh)
	cert, key := writeCert(t, t.TempDir())
	p, _ := in.start("-nats-server-cert", cert, "-nats-server-key", key)
	defer p.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url, pw := "nats://"+in.natsAddr, in.password("host")
	nc, err := bus.Connect(ctx, bus.ConnConfig{URL: url, User: "host", Password: pw, TLSCA: cert})
	if err != nil {
		t.Fatalf("TLS client with the CA: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Error("the connection is not TLS")
	}
	if seen := discovery(t, nc, 3); len(seen) != 3 {
		t.Errorf("$SRV.PING over TLS lists %v", seen)
	}
	if nc2, err := bus.Connect(ctx, bus.ConnConfig{URL: url, User: "host", Password: pw}); err == nil {
		nc2.Close()
		t.Error("a client that does not trust the certificate connected")
	}
}
