package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus/bustest"
)

// TestBackupRestoreRoundTrip backs up a server with a KV bucket and a
// stream, restores into a second server, and checks the data; restoring
// over existing streams and bad backup directories change nothing.
func TestBackupRestoreRoundTrip(t *testing.T) {
	src, dst := bustest.NewServer(t), bustest.NewServer(t)
	ctx := context.Background()
	js, err := jetstream.New(src.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "backup_test", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "k", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	lbctl := func(url string, args ...string) (string, int) {
		var out, errb bytes.Buffer
		env := map[string]string{"NATS_URL": url}
		code := run(ctx, args, stdio{out: &out, err: &errb, getenv: func(k string) string { return env[k] }})
		return out.String() + errb.String(), code
	}
	dir := filepath.Join(t.TempDir(), "bk")
	if out, code := lbctl(src.URL(), "backup", "--dir", dir); code != 0 {
		t.Fatalf("backup: %s", out)
	}
	if out, code := lbctl(src.URL(), "backup", "--dir", dir); code == 0 || !strings.Contains(out, "not empty") {
		t.Errorf("a second backup into the same directory: %d %s", code, out)
	}
	djs, err := jetstream.New(dst.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	// the test server has its lifecycle stream: all or nothing
	if out, code := lbctl(dst.URL(), "restore", "--dir", dir); code == 0 || !strings.Contains(out, "nothing restored: [LANGBOT_LIFECYCLE]") {
		t.Fatalf("restore over the lifecycle stream: %d %s", code, out)
	}
	if _, err := djs.KeyValue(ctx, "backup_test"); err == nil {
		t.Fatal("a refused restore restored the bucket")
	}
	if err := djs.DeleteStream(ctx, "LANGBOT_LIFECYCLE"); err != nil {
		t.Fatal(err)
	}
	if out, code := lbctl(dst.URL(), "restore", "--dir", dir); code != 0 {
		t.Fatalf("restore: %s", out)
	}
	dkv, err := djs.KeyValue(ctx, "backup_test")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := dkv.Get(ctx, "k"); err != nil || string(e.Value()) != "kept" {
		t.Fatalf("restored value: %v %v", e, err)
	}
	// again: every stream exists, nothing is touched
	if out, code := lbctl(dst.URL(), "restore", "--dir", dir); code == 0 || !strings.Contains(out, "nothing restored") {
		t.Errorf("restore over existing streams: %d %s", code, out)
	}
	// a directory without the index, and an index naming a path, are refused
	if out, code := lbctl(dst.URL(), "restore", "--dir", t.TempDir()); code == 0 || !strings.Contains(out, "not a finished backup") {
		t.Errorf("restore of an empty directory: %d %s", code, out)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, backupManifestFile), []byte(`{"streams":[{"name":"../etc"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := lbctl(dst.URL(), "restore", "--dir", bad); code == 0 || !strings.Contains(out, "bad stream name") {
		t.Errorf("restore of a bad index: %d %s", code, out)
	}
}
