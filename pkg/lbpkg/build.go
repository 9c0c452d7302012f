package lbpkg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// Identities a package can be built under.
const (
	// IdentityOurs is author DefaultAuthor with the declared name: it never
	// collides with the marketplace originals.
	IdentityOurs = "ours"
	// IdentityOriginal is the original plugin's author and name, so that
	// an upload replaces an installed original and keeps its installation
	// uuid (its data moves with lbctl import).
	IdentityOriginal = "original"
)

// DefaultAuthor is the package author of IdentityOurs.
const DefaultAuthor = "langbot-nats"

// DefaultVersion is the package version when Options.Version is empty.
const DefaultVersion = "0.1.0"

// ErrOptions is returned for an unknown identity or a malformed version.
var ErrOptions = errors.New("lbpkg: invalid build options")

var versionRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})$`)

// Options are the inputs of a build besides the declaration.
type Options struct {
	// WheelPath is the nats-py wheel to bundle; it must match the pin
	// (NatsPyName, NatsPyVersion, NatsPySHA256).
	WheelPath string
	// Identity is IdentityOurs (default) or IdentityOriginal.
	Identity string
	// Version is the package version X.Y.Z; DefaultVersion when empty.
	Version string
}

// Package is one built package.
type Package struct {
	// Author and Name are the identity LangBot keys the installation on.
	Author, Name string
	// FileName is the archive's conventional name, <author>-<name>-<version>.lbpkg.
	FileName string
	// Data is the archive; SHA256 its hex digest (LangBot's artifact_digest).
	Data   []byte
	SHA256 string
	files  []file
	dump   []byte // see RuntimeDump
}

// Build builds the package of decl: it validates the declaration with the
// package's own config items added, checks the wheel against the pin,
// generates every file (see the package doc for the layout), writes a
// deterministic zip and checks it against LangBot's archive limits.
func Build(decl plugin.Declaration, opts Options) (*Package, error) {
	if opts.Identity == "" {
		opts.Identity = IdentityOurs
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if !versionRE.MatchString(opts.Version) {
		return nil, fmt.Errorf("%w: version %q is not X.Y.Z", ErrOptions, opts.Version)
	}
	author, name := DefaultAuthor, decl.Meta.Name
	switch opts.Identity {
	case IdentityOurs:
	case IdentityOriginal:
		author, name = decl.Meta.Original.Author, decl.Meta.Original.Name
	default:
		return nil, fmt.Errorf("%w: identity %q (want %s or %s)", ErrOptions, opts.Identity, IdentityOurs, IdentityOriginal)
	}
	full := withPackageConfig(decl)
	if err := full.Validate(); err != nil {
		return nil, err
	}
	wheel, err := os.ReadFile(opts.WheelPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWheel, err)
	}
	wfiles, err := CheckWheel(opts.WheelPath, wheel)
	if err != nil {
		return nil, err
	}
	g := generator{decl: full, author: author, name: name, version: opts.Version}
	files, dump, err := g.files()
	if err != nil {
		return nil, err
	}
	for _, w := range wfiles {
		files = append(files, file{Name: w.name, Data: w.data})
	}
	data, err := writeZip(files)
	if err != nil {
		return nil, err
	}
	if err := CheckArchive(data); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &Package{
		Author: author, Name: name,
		FileName: fmt.Sprintf("%s-%s-%s.lbpkg", author, name, opts.Version),
		Data:     data, SHA256: hex.EncodeToString(sum[:]), files: files, dump: dump,
	}, nil
}

// WriteFile writes the archive into dir as p.FileName and returns its path.
func (p *Package) WriteFile(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, p.FileName)
	if err := os.WriteFile(out, p.Data, 0o644); err != nil {
		return "", err
	}
	return out, nil
}

// WriteDir writes the package's files unpacked under dir, as LangBot's
// runtime extracts them (for tests that import the package directly).
func (p *Package) WriteDir(dir string) error {
	for _, f := range p.files {
		target := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// PackageConfig returns the config items every package adds before the
// service's own (spec 3): how to reach NATS and under which prefix. They
// never leave the package: the forwarder removes them from the config it
// sends.
func PackageConfig() []plugin.ConfigItem {
	t := func(en, zh string) plugin.Text { return plugin.Text{EnUS: en, ZhHans: zh} }
	return []plugin.ConfigItem{
		{Name: "nats_url", Type: "string", Default: "nats://127.0.0.1:4222", Required: true,
			Label:       t("NATS URL", "NATS 地址"),
			Description: t("nats:// or tls:// address of NATS; several separated by commas.", "nats:// 或 tls:// 地址，多个用逗号分隔。")},
		{Name: "nats_user", Type: "string", Default: "",
			Label:       t("NATS user", "NATS 用户名"),
			Description: t("The tenant credential's user (t-..., from lbctl tenant issue).", "租户凭据的用户（t-...，lbctl tenant issue 签发）。")},
		{Name: "nats_password", Type: "string", Default: "", Secret: true,
			Label:       t("NATS password", "NATS 密码"),
			Description: t("The tenant credential's password.", "租户凭据的密码。")},
		{Name: "nats_token", Type: "string", Default: "", Secret: true,
			Label:       t("NATS token", "NATS 令牌"),
			Description: t("NATS token, instead of a user and password.", "NATS 令牌，代替用户和密码。")},
		{Name: "nats_tls_ca", Type: "text", Default: "",
			Label:       t("NATS TLS CA (PEM)", "NATS TLS CA 证书（PEM）"),
			Description: t("Optional CA (PEM) of the NATS server's certificate, for tls://.", "可选，NATS 服务器证书的 CA（PEM），用于 tls://。")},
		{Name: "subject_prefix", Type: "string", Default: wire.DefaultPrefix,
			Label:       t("Subject prefix", "主题前缀"),
			Description: t("First token of every NATS subject; the same as the services'.", "NATS 主题的第一段，与服务端相同。")},
	}
}

// withPackageConfig returns decl with PackageConfig before its own items.
func withPackageConfig(decl plugin.Declaration) plugin.Declaration {
	d := decl
	d.Config = append(PackageConfig(), decl.Config...)
	return d
}
