// Command fakelangbot plays LangBot for a try-out on one machine: it starts
// LangBot's real plugin runtime (see pkg/lbpkg/runtimetest for where the
// Python comes from), installs the given .lbpkg packages with config {}
// and saves a config with a NATS address (the worker restarts at
// revision 2, as in LangBot 4.10.8), and then sends each chat line typed on stdin
// (or given with -e) as a command from a group chat, printing every
// return and every message the services send back into the chat. Its
// LangBot has one fake LLM model (-llm-model) that answers "fake LLM: "
// and the prompt, for AI-written reminders.
//
//	lbctl dev --fake-github --no-prompt &
//	fakelangbot --nats nats://127.0.0.1:4222 dist/*.lbpkg
//	> !sche add in 5s stretch
//	> !gh repo octocat/Hello-World
//
// It is a developer tool built on the test kit, not part of a deployment.
// It imports pkg/lbpkg/runtimetest and the standard library only.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakelangbot:", err)
		os.Exit(1)
	}
}

type lines []string

func (l *lines) String() string     { return strings.Join(*l, "; ") }
func (l *lines) Set(v string) error { *l = append(*l, v); return nil }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakelangbot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats", "nats://127.0.0.1:4222", "NATS address written into each package's config (nats_url)")
	language := fs.String("language", "en_US", "language written into each package's config")
	llmModel := fs.String("llm-model", "fake-llm", "the one LLM model the fake LangBot lists; its answer is \"fake LLM: \" and the prompt (empty: no model, so AI-written reminders send their fallback)")
	wait := fs.Duration("wait", 0, "with -e: how long to keep printing messages sent into the chat after the last line")
	var script lines
	fs.Var(&script, "e", "a chat line to send instead of reading stdin (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("name at least one .lbpkg file")
	}
	py, err := runtimetest.LocatePython(os.Getenv)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "fakelangbot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	opts := runtimetest.Options{WorkDir: work}
	if *llmModel != "" {
		opts.LLMModels = []string{*llmModel}
	}
	rt, err := runtimetest.Launch(ctx, py, opts)
	if err != nil {
		return err
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime up (SDK from %s)\n", py.Source)

	words := map[string]*runtimetest.Installation{}
	for _, file := range fs.Args() {
		archive, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		cfg := map[string]any{"nats_url": *natsURL, "language": *language}
		start := time.Now()
		// As LangBot 4.10.8 does: install with config {}, then the
		// operator's config save restarts the worker at a new revision.
		in, err := rt.Install(ctx, archive, "", "", map[string]any{})
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := rt.Reconfigure(ctx, in, cfg); err != nil {
			return fmt.Errorf("%s: config save: %w", file, err)
		}
		plugins, err := rt.ListPlugins(ctx, in)
		if err != nil {
			return err
		}
		var cmds []string
		for _, p := range plugins {
			for _, c := range p.Components {
				if c.Kind == "Command" {
					words[c.Name] = in
					cmds = append(cmds, "!"+c.Name)
				}
			}
		}
		fmt.Fprintf(stdout, "installed %s/%s in %v (scope %s) commands: %s\n", in.Author, in.Name,
			time.Since(start).Round(time.Millisecond), in.Scope(), strings.Join(cmds, " "))
	}

	session := runtimetest.Session{LauncherType: "group", LauncherID: "123456", SenderID: "42", BotUUID: "bot-1"}
	printed, asked := 0, 0
	printSends := func() {
		llm := rt.LLMCalls()
		for _, c := range llm[asked:] {
			fmt.Fprintf(stdout, "<< invoke_llm (installation %s, model %s)\n", c.Binding.InstallationUUID, c.LLMRequest().Model)
		}
		asked = len(llm)
		sends := rt.Sends()
		for _, s := range sends[printed:] {
			fmt.Fprintf(stdout, "<< send_message (installation %s, revision %d): %s\n", s.Binding.InstallationUUID, s.Binding.RuntimeRevision, s.Data)
		}
		printed = len(sends)
	}
	say := func(line string) {
		line = strings.TrimSpace(line)
		if line == "" {
			return
		}
		var in *runtimetest.Installation
		if f := strings.Fields(line[1:]); len(f) > 0 {
			in = words[f[0]]
		}
		if in == nil {
			fmt.Fprintf(stdout, "no package has the command %q\n", line)
			return
		}
		start := time.Now()
		rets, err := rt.Command(ctx, in, line, session, 2)
		if err != nil {
			fmt.Fprintf(stdout, "error: %v\n", err)
			return
		}
		for _, t := range runtimetest.Texts(rets) {
			fmt.Fprintf(stdout, "%s\n", t)
		}
		fmt.Fprintf(stdout, "(%d returns, %v)\n", len(rets), time.Since(start).Round(100*time.Microsecond))
		printSends()
	}
	if len(script) > 0 {
		for _, l := range script {
			fmt.Fprintf(stdout, "> %s\n", l)
			say(l)
		}
		deadline := time.Now().Add(*wait)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			printSends()
		}
		return nil
	}
	in := bufio.NewScanner(stdin)
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	linesCh := make(chan string)
	go func() {
		defer close(linesCh)
		for in.Scan() {
			linesCh <- in.Text()
		}
	}()
	fmt.Fprint(stdout, "> ")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			printSends()
		case l, ok := <-linesCh:
			if !ok {
				return nil
			}
			say(l)
			fmt.Fprint(stdout, "> ")
		}
	}
}
