package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/langbot-nats/plugins/pkg/bus"
)

// Tenant credentials (docs/operations.md, "Tenant credentials"): issue,
// list and revoke them as the admin user; revoke also closes the tenant's
// open connections as the system account's user.

func tenantCommands() []command {
	return []command{
		{Name: "tenant issue", Summary: "issue a tenant credential: --instance UUID [--workspace UUID] (as admin)", Run: runTenantIssue},
		{Name: "tenant list", Summary: "list tenant credentials (as admin; secrets are stored hashed, never shown again)", Run: runTenantList},
		{Name: "tenant keygen", Summary: "make the auth callout's issuer key pair: the services' seed and NATS's public key", Run: runTenantKeygen},
		{Name: "tenant revoke", Summary: "revoke a tenant credential and close its connections: --name t-... (as admin; NATS_SYS_PASSWORD for sys)", Run: runTenantRevoke},
	}
}

// tenantBucket connects with the connection flags and opens the tenant
// bucket (created by lbctl setup).
func tenantBucket(ctx context.Context, conn *connFlags) (jetstream.KeyValue, func(), error) {
	nc, _, js, err := conn.connectJS(ctx)
	if err != nil {
		return nil, nil, err
	}
	kv, err := js.KeyValue(ctx, bus.TenantBucket)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("tenant bucket %s (lbctl setup creates it): %w", bus.TenantBucket, err)
	}
	return kv, nc.Close, nil
}

func runTenantIssue(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("tenant issue", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	instance := fs.String("instance", "", "the LangBot instance uuid (the plugin's log and its form's \"not connected\" note show it: the first token of the scope)")
	workspace := fs.String("workspace", "", "limit the credential to one workspace of the instance (the scope's second token); empty: every workspace")
	name := fs.String("name", "", "the tenant's NATS user, t-...; empty: a new random one")
	claim := fs.Bool("claim", false, "no --instance: the first LangBot package that logs in binds the credential to its instance")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	req := bus.IssueRequest{Name: *name, Instance: *instance, Workspace: *workspace, Claim: *claim}
	// check before connecting: bad input changes nothing
	probe := bus.Tenant{Name: req.Name, Instance: req.Instance, Workspace: req.Workspace, SecretSHA256: strings.Repeat("0", 64)}
	if probe.Name == "" {
		probe.Name = bus.TenantNamePrefix + "x"
	}
	if err := probe.Check(); err != nil {
		return err
	}
	if req.Claim == (req.Instance != "") {
		return errors.New("give --instance (and optionally --workspace), or --claim")
	}
	kv, closeConn, err := tenantBucket(ctx, conn)
	if err != nil {
		return err
	}
	defer closeConn()
	t, secret, err := bus.IssueTenant(ctx, kv, req, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(io.out, "issued tenant %s for %s\n", t.Name, describeTenant(t))
	fmt.Fprintf(io.out, "In LangBot's form of each plugin (GitHubKit, HumanTakeover, ScheNotify) of that %s:\n", tenantUnit(t))
	fmt.Fprintf(io.out, "  nats_user      %s\n  nats_password  %s\n", t.Name, secret)
	fmt.Fprintln(io.out, "The password is shown only now (it is stored hashed); revoke with: lbctl tenant revoke --name "+t.Name)
	return nil
}

func describeTenant(t bus.Tenant) string {
	switch {
	case t.Claimable():
		return "the first LangBot instance that logs in with it (unclaimed)"
	case t.Workspace == "":
		return "instance " + t.Instance + ", every workspace"
	}
	return "instance " + t.Instance + ", workspace " + t.Workspace
}

func tenantUnit(t bus.Tenant) string {
	if t.Workspace != "" {
		return "workspace"
	}
	return "LangBot instance"
}

func runTenantList(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("tenant list", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	if err := fs.Parse(args); err != nil {
		return err
	}
	kv, closeConn, err := tenantBucket(ctx, conn)
	if err != nil {
		return err
	}
	defer closeConn()
	ts, err := bus.ListTenants(ctx, kv)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSCOPE\tCREATED\tCLAIMED")
	for _, t := range ts {
		claimed := "-"
		if t.ClaimedAt != nil {
			claimed = t.ClaimedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, t.Scope(), t.CreatedAt.UTC().Format(time.RFC3339), claimed)
	}
	return w.Flush()
}

func runTenantRevoke(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("tenant revoke", flag.ContinueOnError)
	fs.SetOutput(io.err)
	conn := addConnFlags(fs, io)
	name := fs.String("name", "", "the tenant's NATS user (lbctl tenant list)")
	sysUser := fs.String("sys-user", "sys", "the system account's user that closes the tenant's connections; its password comes from NATS_SYS_PASSWORD")
	noKick := fs.Bool("no-kick", false, "only remove the record: open connections stay until they reconnect")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := bus.CheckTenantName(*name); err != nil {
		return err
	}
	sysPassword := io.getenv("NATS_SYS_PASSWORD")
	if !*noKick && sysPassword == "" {
		return errors.New("closing the tenant's open connections needs the sys user's password in NATS_SYS_PASSWORD (or --no-kick)")
	}
	kv, closeConn, err := tenantBucket(ctx, conn)
	if err != nil {
		return err
	}
	defer closeConn()
	if err := bus.RemoveTenant(ctx, kv, *name); err != nil {
		return err
	}
	fmt.Fprintf(io.out, "revoked %s: new logins are refused\n", *name)
	if *noKick {
		fmt.Fprintln(io.out, "open connections were left open (--no-kick)")
		return nil
	}
	sys, err := bus.Connect(ctx, bus.ConnConfig{URL: conn.url, Name: "lbctl", User: *sysUser, Password: sysPassword})
	if err != nil {
		return fmt.Errorf("the record is removed, but its connections are still open: %w", err)
	}
	defer sys.Close()
	n, err := bus.KickUser(ctx, sys, *name)
	if err != nil {
		return fmt.Errorf("the record is removed, but closing its connections failed after %d: %w", n, err)
	}
	fmt.Fprintf(io.out, "closed %d open connection(s); their reconnects are refused\n", n)
	return nil
}

func runTenantKeygen(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("tenant keygen", flag.ContinueOnError)
	fs.SetOutput(io.err)
	if err := fs.Parse(args); err != nil {
		return err
	}
	seed, err := bus.NewIssuerSeed()
	if err != nil {
		return err
	}
	pub, err := bus.IssuerPublicKey(seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(io.out, "seed        %s\npublic-key  %s\n", seed, pub)
	fmt.Fprintln(io.out, "The seed goes to every service (LANGBOT_AUTH_ISSUER_SEED; keep it secret), the public key to NATS (AUTH_ISSUER).")
	return nil
}
