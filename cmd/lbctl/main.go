// Command lbctl is the LangBot host simulator and operator CLI for the
// plugin services: it runs the whole stack in one process for development
// (lbctl dev), speaks the wire protocol exactly as a host would (invoke,
// attach, revoke, host), prepares a NATS deployment (setup), backs it up
// and restores it (backup, restore), and carries
// the services' operator commands (import, console-token, ...).
//
// As a command it may import every service and every pkg package,
// pkg/natsembed included; nothing imports it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/langbot-nats/plugins/pkg/svcmain"
)

// command is one lbctl subcommand. Name may have two words ("import
// githubkit").
type command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, args []string, stdio stdio) error
}

type stdio struct {
	in       io.Reader
	out, err io.Writer
	getenv   func(string) string
}

func commands() []command {
	cmds := []command{
		{Name: "dev", Summary: "run embedded NATS, every service and an interactive host in one process", Run: runDev},
		{Name: "setup", Summary: "create the lifecycle stream and the tenant bucket on a NATS deployment", Run: runSetup},
		{Name: "invoke", Summary: "invoke a plugin: invoke {command|event|tool|page} [flags]", Run: runInvoke},
		{Name: "attach", Summary: "publish a lifecycle attach for an installation", Run: runAttach},
		{Name: "revoke", Summary: "publish a lifecycle revoke for an installation", Run: runRevoke},
		{Name: "host", Summary: "answer host actions for a stack running elsewhere, printing sends", Run: runHost},
		{Name: "trace", Summary: "print a trace from Jaeger as a tree: trace <trace-id> [--jaeger URL]", Run: runTrace},
		{Name: "package", Summary: "build the LangBot packages (.lbpkg): package --plugin all --out DIR --nats-py-wheel FILE", Run: runPackage},
		{Name: "bench invoke", Summary: "measure invocation latency and throughput next to the bus floor", Run: runBenchInvoke},
		consoleTokenCommand(),
	}
	cmds = append(cmds, backupCommands()...)
	cmds = append(cmds, tenantCommands()...)
	for _, s := range devServices() {
		cmds = append(cmds, s.Commands...)
	}
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(io.out)
		return 0
	}
	// NATS_PASSWORD_FILE and the like, as the service binaries read them.
	getenv, err := svcmain.WithSecretFiles(io.getenv, append(svcmain.SecretEnvs(), "NATS_SYS_PASSWORD")...)
	if err != nil {
		fmt.Fprintf(io.err, "lbctl: %v\n", err)
		return 1
	}
	io.getenv = getenv
	for _, c := range commands() {
		words := strings.Fields(c.Name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.Name {
			if err := c.Run(ctx, args[len(words):], io); err != nil {
				fmt.Fprintf(io.err, "lbctl %s: %v\n", c.Name, err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(io.err, "lbctl: unknown command %q\n\n", strings.Join(args, " "))
	usage(io.err)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lbctl <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-24s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w, "\nRun 'lbctl <command> -h' for a command's flags.")
}
