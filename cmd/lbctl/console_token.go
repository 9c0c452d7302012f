package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/takeover"
	"github.com/langbot-nats/plugins/services/takeover/console"
)

// consoleKeyFile is the dev console key's file in lbctl dev's data
// directory, created on first use (spec §9 rule 2).
const consoleKeyFile = "console.key"

func consoleTokenCommand() command {
	return command{Name: "console-token", Summary: "mint a takeover console token: console-token --scope S --operator ID [--ttl 8h] [--base URL]", Run: runConsoleToken}
}

// runConsoleToken prints a console token and the console URL that carries
// it. The key is LANGBOT_CONSOLE_KEY, else the dev key in --data.
func runConsoleToken(_ context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("console-token", flag.ContinueOnError)
	fs.SetOutput(io.err)
	scope := fs.String("scope", "", "installation scope <instance>.<workspace>.<installation> (required)")
	operator := fs.String("operator", "", "operator id, [A-Za-z0-9._@-]{1,64} (required)")
	ttl := fs.Duration("ttl", 8*time.Hour, "token lifetime, at most 24h")
	base := fs.String("base", "http://127.0.0.1:8080", "base URL of the takeover service's HTTP server")
	dataDir := fs.String("data", ".data/dev", "lbctl dev data directory holding the dev console key, used when "+takeover.ConsoleKeyEnv+" is unset")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *scope == "" || *operator == "" {
		return errors.New("--scope and --operator are required")
	}
	if *ttl <= 0 || *ttl > console.MaxTokenTTL {
		return fmt.Errorf("--ttl must be within (0, %s]", console.MaxTokenTTL)
	}
	key := io.getenv(takeover.ConsoleKeyEnv)
	if key == "" {
		raw, err := os.ReadFile(filepath.Join(*dataDir, consoleKeyFile))
		if err != nil {
			return fmt.Errorf("no %s and no dev key in %s: %w", takeover.ConsoleKeyEnv, *dataDir, err)
		}
		key = strings.TrimSpace(string(raw))
	}
	tok, url, err := mintConsoleURL(key, *scope, *operator, *ttl, *base)
	if err != nil {
		return err
	}
	fmt.Fprintln(io.out, tok)
	fmt.Fprintln(io.out, url)
	return nil
}

// mintConsoleURL mints a token and the console URL carrying it in the
// fragment (never sent to the server, removed from the address bar).
func mintConsoleURL(key, scope, operator string, ttl time.Duration, base string) (string, string, error) {
	k, err := console.ParseKey(key)
	if err != nil {
		return "", "", err
	}
	tok, err := console.Mint(k, console.Claims{Scope: scope, Operator: operator, Exp: time.Now().Add(ttl).Unix()})
	if err != nil {
		return "", "", err
	}
	return tok, strings.TrimRight(base, "/") + "/console/#token=" + tok, nil
}

// devConsoleKey loads the dev console key from dir, creating it on first
// use, so console links keep working across restarts of lbctl dev.
func devConsoleKey(dir string) (string, error) {
	path := filepath.Join(dir, consoleKeyFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	key := base64.StdEncoding.EncodeToString(b)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		return "", err
	}
	return key, nil
}

// withDevConsole gives lbctl dev's takeover service a console: Build runs
// with LANGBOT_CONSOLE_KEY from the environment, else with a key generated
// in the data directory (console.key), and the banner prints a console URL
// with an 8-hour token for the dev installation.
func withDevConsole(s *devService) *devService {
	d := &devConsole{next: s.Build}
	s.DevFlags, s.Build, s.Banner = d.flags, d.build, d.banner
	return s
}

// devConsole holds lbctl dev's flag set (to read --data once parsed) and
// the console key Build used, for the banner.
type devConsole struct {
	next func(context.Context, *svcmain.Env) (svcmain.Service, error)
	fs   *flag.FlagSet
	key  string
}

func (d *devConsole) flags(fs *flag.FlagSet) { d.fs = fs }

func (d *devConsole) build(ctx context.Context, env *svcmain.Env) (svcmain.Service, error) {
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	d.key = getenv(takeover.ConsoleKeyEnv)
	if d.key == "" {
		dir := ".data/dev"
		if d.fs != nil {
			if f := d.fs.Lookup("data"); f != nil {
				dir = f.Value.String()
			}
		}
		key, err := devConsoleKey(dir)
		if err != nil {
			return nil, err
		}
		d.key = key
	}
	e := *env
	e.Getenv = func(name string) string {
		if name == takeover.ConsoleKeyEnv {
			return d.key
		}
		return getenv(name)
	}
	return d.next(ctx, &e)
}

func (d *devConsole) banner(env *DevEnv) []string {
	if d.key == "" {
		return nil
	}
	_, url, err := mintConsoleURL(d.key, env.Scope, "dev", 8*time.Hour, "http://"+env.HTTPAddr)
	if err != nil {
		return []string{"console  unavailable: " + err.Error()}
	}
	return []string{"console  " + url + " (operator dev, valid 8h)"}
}
