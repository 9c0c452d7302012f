package main

// lbctl backup and lbctl restore: every stream of the account (the plain
// streams, and the KV buckets and object stores, which are streams too),
// with its consumers, through JetStream's snapshot API as implemented by
// github.com/nats-io/jsm.go. Run them with the admin user's credentials
// (the service users may not snapshot or restore).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/jsm.go"
)

// backupManifest is the backup directory's index: one snapshot directory
// per stream, written by SnapshotToDirectory.
type backupManifest struct {
	Created       time.Time      `json:"created"`
	ServerVersion string         `json:"server_version"`
	Streams       []backupStream `json:"streams"`
}

type backupStream struct {
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
}

const backupManifestFile = "langbot-backup.json"

func backupCommands() []command {
	return []command{
		{Name: "backup", Summary: "snapshot every stream and bucket into a directory (as admin)", Run: runBackup},
		{Name: "restore", Summary: "restore a backup into a server that has none of its streams (as admin)", Run: runRestore},
	}
}

func runBackup(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	dir := fs.String("dir", "", "backup directory: new, or empty (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of each JetStream API request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	if entries, err := os.ReadDir(*dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("--dir %s is not empty", *dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	nc, _, err := conn.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	mgr, err := jsm.New(nc, jsm.WithTimeout(*timeout))
	if err != nil {
		return err
	}
	names, err := mgr.StreamNames(nil)
	if err != nil {
		return fmt.Errorf("list streams: %w", err)
	}
	slices.Sort(names)
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	start := time.Now()
	m := backupManifest{Created: start.UTC(), ServerVersion: nc.ConnectedServerVersion()}
	var total uint64
	for _, name := range names {
		st, err := mgr.LoadStream(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		state, err := st.State()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p, err := st.SnapshotToDirectory(ctx, filepath.Join(*dir, name), jsm.SnapshotConsumers())
		if err != nil {
			return fmt.Errorf("%s: snapshot: %w", name, err)
		}
		total += p.BytesReceived()
		m.Streams = append(m.Streams, backupStream{Name: name, Messages: state.Msgs, Bytes: state.Bytes})
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	// the index last: a backup without it did not finish
	if err := os.WriteFile(filepath.Join(*dir, backupManifestFile), append(raw, '\n'), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(io.out, "backup of %d streams in %s: %d bytes, %v\n", len(m.Streams), *dir, total, time.Since(start).Round(time.Millisecond))
	return nil
}

func runRestore(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	dir := fs.String("dir", "", "backup directory written by lbctl backup (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of each JetStream API request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	raw, err := os.ReadFile(filepath.Join(*dir, backupManifestFile))
	if err != nil {
		return fmt.Errorf("not a finished backup: %w", err)
	}
	var m backupManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%s: %w", backupManifestFile, err)
	}
	for _, s := range m.Streams {
		if !jsm.IsValidName(s.Name) || filepath.Base(s.Name) != s.Name {
			return fmt.Errorf("%s: bad stream name %q", backupManifestFile, s.Name)
		}
	}
	nc, _, err := conn.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	mgr, err := jsm.New(nc, jsm.WithTimeout(*timeout))
	if err != nil {
		return err
	}
	existing, err := mgr.StreamNames(nil)
	if err != nil {
		return fmt.Errorf("list streams: %w", err)
	}
	// all or nothing up front: a stream that exists already means the
	// services ran on this server (start it with -nats-only)
	var clash []string
	for _, s := range m.Streams {
		if slices.Contains(existing, s.Name) {
			clash = append(clash, s.Name)
		}
	}
	if len(clash) > 0 {
		return fmt.Errorf("the server has streams of the backup already, nothing restored: %v", clash)
	}
	start := time.Now()
	for _, s := range m.Streams {
		_, state, err := mgr.RestoreSnapshotFromDirectory(ctx, s.Name, filepath.Join(*dir, s.Name))
		if err != nil {
			return fmt.Errorf("%s: restore: %w", s.Name, err)
		}
		if state.Msgs != s.Messages {
			return fmt.Errorf("%s: restored %d messages, the backup had %d", s.Name, state.Msgs, s.Messages)
		}
	}
	fmt.Fprintf(io.out, "restored %d streams from %s (backup of %s), %v\n", len(m.Streams), *dir, m.Created.Format(time.RFC3339), time.Since(start).Round(time.Millisecond))
	return nil
}
