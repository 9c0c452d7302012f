package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/admin"
)

// takeoverService registers the takeover service with lbctl: lbctl dev runs
// it in process and sends every chat message to it as an event; lbctl
// import takeover adopts the original plugin's stored records; the dev
// console (console_token.go) serves its console with a generated key.
func takeoverService() *devService {
	return withDevConsole(&devService{
		Plugin: takeover.Plugin,
		Build:  takeover.Build,
		Config: json.RawMessage(`{"takeover_timeout":600,"trigger_words":["human","人工"],"auto_takeover_on_trigger":true,` +
			`"user_notice_on_takeover":"A person will answer you shortly.","user_notice_on_release":"You are talking to the assistant again."}`),
		Events: true,
		Upgrade: func(ctx context.Context, js jetstream.JetStream, subj wire.Subjects) (string, error) {
			sum, err := admin.MigrateHistory(ctx, js, admin.MigrateOptions{Prefix: subj.Prefix})
			if err != nil || !sum.Removed && len(sum.Left) == 0 {
				return "", err
			}
			return sum.String(), nil
		},
		Commands: []command{
			{Name: "import takeover", Summary: "adopt the original HumanTakeover plugin's stored sessions and history", Run: runImportTakeover},
			{Name: "gc takeover-blobs", Summary: "delete takeover attachments no history entry names (orphans, removed installations)", Run: runGCTakeoverBlobs},
			{Name: "migrate takeover-history", Summary: "move takeover history from the single stream of earlier versions into its shards (service stopped)", Run: runMigrateTakeoverHistory},
		},
	})
}

// runImportTakeover is lbctl import takeover --scope <scope> --from <file>
// [--source-prefix P] [--dry-run].
func runImportTakeover(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("import takeover", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	scope := fs.String("scope", "", "installation scope <instance>.<workspace>.<installation>")
	from := fs.String("from", "", "the original plugin's storage: a JSON object {key: base64 value} or JSON lines {key, value_base64}")
	var srcPrefix *string
	fs.Func("source-prefix", `storage key prefix to select (default "<instance>:<workspace>:<installation>:"; "" for a dedicated install)`, func(v string) error {
		srcPrefix = &v
		return nil
	})
	dry := fs.Bool("dry-run", false, "report what would be imported and write nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc, data, err := importInput(*scope, "from", *from)
	if err != nil {
		return err
	}
	nc, subj, js, err := conn.connectJS(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	sum, err := admin.Import(ctx, js, admin.ImportOptions{Scope: sc, Prefix: subj.Prefix, Data: data, SourcePrefix: srcPrefix, DryRun: *dry})
	if sum != nil {
		if *dry {
			fmt.Fprintln(io.out, "dry run: nothing written")
		}
		fmt.Fprint(io.out, sum.String())
	}
	return err
}

// runGCTakeoverBlobs is lbctl gc takeover-blobs [--min-age 1h] [--dry-run].
func runGCTakeoverBlobs(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("gc takeover-blobs", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	minAge := fs.Duration("min-age", time.Hour, "only blobs older than this (no append still in flight)")
	dry := fs.Bool("dry-run", false, "count what would be deleted and delete nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	nc, subj, js, err := conn.connectJS(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	sum, err := admin.GCBlobs(ctx, js, admin.GCOptions{Prefix: subj.Prefix, MinAge: *minAge, DryRun: *dry})
	if *dry {
		fmt.Fprintln(io.out, "dry run: nothing deleted")
	}
	fmt.Fprint(io.out, sum.String())
	return err
}

// runMigrateTakeoverHistory is lbctl migrate takeover-history. It deletes a
// stream, so it needs the operator's (admin) credentials.
func runMigrateTakeoverHistory(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("migrate takeover-history", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	if err := fs.Parse(args); err != nil {
		return err
	}
	nc, subj, js, err := conn.connectJS(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	sum, err := admin.MigrateHistory(ctx, js, admin.MigrateOptions{Prefix: subj.Prefix})
	fmt.Fprint(io.out, sum.String())
	return err
}
