package lbpkg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/plugin"
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
	files, err := g.files()
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
		Data:     data, SHA256: hex.EncodeToString(sum[:]), files: files,
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
			Description: t("nats:// or tls:// address of the NATS servers; several may be given, separated by commas.", "NATS 服务器的 nats:// 或 tls:// 地址，多个地址用逗号分隔。")},
		{Name: "nats_user", Type: "string", Default: "",
			Label:       t("NATS user", "NATS 用户名"),
			Description: t("NATS user: the tenant credential's user (t-...) issued for this LangBot instance or workspace (lbctl tenant issue).", "NATS 用户名：为本 LangBot 实例或工作区签发的租户凭据用户名（t-...，由 lbctl tenant issue 生成）。")},
		{Name: "nats_password", Type: "string", Default: "", Secret: true,
			Label:       t("NATS password", "NATS 密码"),
			Description: t("Password of the NATS user (the tenant credential's). Shown masked.", "NATS 用户的密码（租户凭据的密码），界面中以掩码显示。")},
		{Name: "nats_token", Type: "string", Default: "", Secret: true,
			Label:       t("NATS token", "NATS 令牌"),
			Description: t("Token for NATS token authentication, instead of a user and password. Shown masked.", "NATS 令牌认证使用的令牌（代替用户名和密码），界面中以掩码显示。")},
		{Name: "nats_tls_ca", Type: "text", Default: "",
			Label:       t("NATS TLS CA (PEM)", "NATS TLS CA 证书（PEM）"),
			Description: t("Optional PEM certificate authority that signed the NATS server's certificate, for tls:// addresses.", "可选。签发 NATS 服务器证书的 CA（PEM 格式），用于 tls:// 地址。")},
		{Name: "subject_prefix", Type: "string", Default: bus.DefaultPrefix,
			Label:       t("Subject prefix", "主题前缀"),
			Description: t("First token of every NATS subject; the services must use the same one.", "所有 NATS 主题的第一段，必须与服务端一致。")},
	}
}

// withPackageConfig returns decl with PackageConfig before its own items.
func withPackageConfig(decl plugin.Declaration) plugin.Declaration {
	d := decl
	d.Config = append(PackageConfig(), decl.Config...)
	return d
}
