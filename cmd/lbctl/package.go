package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/lbpkg"
)

// runPackage is lbctl package --plugin all|githubkit|takeover|schenotify
// --out DIR --nats-py-wheel FILE [--identity ours|original] [--version
// X.Y.Z]: it builds the LangBot packages and prints "sha256  file" for
// each, as sha256sum does.
func runPackage(ctx context.Context, args []string, io stdio) error {
	fs := flag.NewFlagSet("package", flag.ContinueOnError)
	fs.SetOutput(io.err)
	which := fs.String("plugin", "all", "all, or one of the plugins")
	out := fs.String("out", "dist", "directory the packages are written to")
	wheel := fs.String("nats-py-wheel", "", "the nats-py wheel to bundle ("+lbpkg.NatsPyWheelFile+", sha256 "+lbpkg.NatsPySHA256[:12]+"...)")
	identity := fs.String("identity", lbpkg.IdentityOurs, "ours (author "+lbpkg.DefaultAuthor+") or original (the marketplace originals' author and name)")
	version := fs.String("version", lbpkg.DefaultVersion, "package version X.Y.Z")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if *wheel == "" {
		return fmt.Errorf("--nats-py-wheel is required")
	}
	names := builtin.Names()
	if *which != "all" {
		names = []string{*which}
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		decl, err := builtin.Declaration(n)
		if err != nil {
			return err
		}
		pkg, err := lbpkg.Build(decl, lbpkg.Options{WheelPath: *wheel, Identity: *identity, Version: *version})
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		path, err := pkg.WriteFile(*out)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		fmt.Fprintf(io.out, "%s  %s\n", pkg.SHA256, path)
	}
	return nil
}
