package lbpkg_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/lbpkg"
	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// wheelPath finds the pinned nats-py wheel: NATS_PY_WHEEL, else
// $LANGBOT_VENDOR/wheels, else ../shared/vendor/wheels beside the repo.
func wheelPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NATS_PY_WHEEL"); p != "" {
		return p
	}
	p := filepath.Join(vendorDir(t), "wheels", lbpkg.NatsPyWheelFile)
	if _, err := os.Stat(p); err != nil {
		runtimetest.Unavailable(t, fmt.Sprintf("no nats-py wheel at %s (set NATS_PY_WHEEL or LANGBOT_VENDOR): %v", p, err))
	}
	return p
}

// vendorDir is $LANGBOT_VENDOR, else ../shared/vendor next to the repo root.
func vendorDir(t testing.TB) string {
	t.Helper()
	if v := os.Getenv("LANGBOT_VENDOR"); v != "" {
		return v
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "..", "shared", "vendor")
}

func declarations(t testing.TB) []plugin.Declaration {
	t.Helper()
	ds, err := builtin.Declarations()
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestBuildDeterministic is PK-7's first part: building twice gives the
// same bytes, and another version or identity gives other bytes.
func TestBuildDeterministic(t *testing.T) {
	wheel := wheelPath(t)
	for _, d := range declarations(t) {
		t.Run(d.Plugin, func(t *testing.T) {
			a, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel})
			if err != nil {
				t.Fatal(err)
			}
			b, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel})
			if err != nil {
				t.Fatal(err)
			}
			if a.SHA256 != b.SHA256 || !bytes.Equal(a.Data, b.Data) {
				t.Errorf("two builds differ: %s vs %s", a.SHA256, b.SHA256)
			}
			c, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel, Version: "1.2.3"})
			if err != nil {
				t.Fatal(err)
			}
			if c.SHA256 == a.SHA256 {
				t.Error("another version gives the same digest")
			}
			o, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel, Identity: lbpkg.IdentityOriginal})
			if err != nil {
				t.Fatal(err)
			}
			if o.Author != d.Meta.Original.Author || o.Name != d.Meta.Original.Name || a.Author != lbpkg.DefaultAuthor {
				t.Errorf("identities: ours %s/%s, original %s/%s", a.Author, a.Name, o.Author, o.Name)
			}
			if !strings.Contains(string(entry(t, o.Data, "manifest.yaml")), `author: "`+d.Meta.Original.Author+`"`) {
				t.Error("original identity not in manifest.yaml")
			}
		})
	}
}

func entry(t testing.TB, archive []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			var b bytes.Buffer
			if _, err := b.ReadFrom(rc); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
	}
	t.Fatalf("no %s in archive", name)
	return nil
}

// TestArchiveLimits is PK-7's second part: every archive meets section 2
// (CheckArchive passes, entries sorted with fixed times and modes, every
// declared component present with a label), and CheckArchive refuses
// archives that break a limit.
func TestArchiveLimits(t *testing.T) {
	wheel := wheelPath(t)
	for _, d := range declarations(t) {
		t.Run(d.Plugin, func(t *testing.T) {
			p, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel})
			if err != nil {
				t.Fatal(err)
			}
			if err := lbpkg.CheckArchive(p.Data); err != nil {
				t.Fatal(err)
			}
			zr, err := zip.NewReader(bytes.NewReader(p.Data), int64(len(p.Data)))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for i, f := range zr.File {
				names = append(names, f.Name)
				if i > 0 && zr.File[i-1].Name >= f.Name {
					t.Errorf("entries not sorted: %s before %s", zr.File[i-1].Name, f.Name)
				}
				if f.Mode().Perm() != 0o644 || !f.Modified.Equal(zr.File[0].Modified) {
					t.Errorf("%s: mode %v, time %v", f.Name, f.Mode(), f.Modified)
				}
			}
			want := []string{"manifest.yaml", "main.py", "assets/icon.svg", "README.md", "readme/README_zh_Hans.md", lbpkg.GeneratedFile, "nats/__init__.py", "langbot_nats/forwarder.py"}
			for _, c := range d.Commands {
				want = append(want, "components/commands/"+c.Name+".yaml", "components/commands/"+c.Name+".py")
			}
			for _, c := range d.Tools {
				want = append(want, "components/tools/"+c.Name+".yaml", "components/tools/"+c.Name+".py")
			}
			for _, c := range d.Pages {
				want = append(want, "components/pages/"+c.ID+".yaml", "components/pages/"+c.ID+".py", "components/pages/"+c.ID+".html")
			}
			if len(d.Events) > 0 {
				want = append(want, "components/event_listener/default.yaml")
			}
			all := strings.Join(names, "\n") + "\n"
			for _, w := range want {
				if !strings.Contains(all, w+"\n") {
					t.Errorf("missing %s", w)
				}
			}
			for _, n := range names {
				if strings.HasSuffix(n, ".yaml") && strings.HasPrefix(n, "components/") {
					if y := string(entry(t, p.Data, n)); !strings.Contains(y, "label:\n    en_US: ") || !strings.Contains(y, "execution:") {
						t.Errorf("%s: no label or execution:\n%s", n, y)
					}
				}
				if strings.Contains(n, "test") || strings.Contains(n, "__pycache__") {
					t.Errorf("test or cache file bundled: %s", n)
				}
			}
			m := string(entry(t, p.Data, "manifest.yaml"))
			for _, must := range []string{`apiVersion: "v1"`, `kind: "Plugin"`, "fromDirs:", "python:", `path: "main.py"`, `icon: "assets/icon.svg"`, `name: "nats_password"`} {
				if !strings.Contains(m, must) {
					t.Errorf("manifest.yaml lacks %s", must)
				}
			}
		})
	}

	bad := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no manifest", map[string]string{"main.py": "x"}, "no manifest.yaml"},
		{"parent", map[string]string{"manifest.yaml": "x", "../evil.py": "x"}, "parent"},
		{"absolute", map[string]string{"manifest.yaml": "x", "/etc/x": "x"}, "absolute"},
		{"backslash", map[string]string{"manifest.yaml": "x", `a\b.py`: "x"}, "backslash"},
		{"dotfile", map[string]string{"manifest.yaml": "x", ".env": "x"}, "dotfile"},
		{"cache", map[string]string{"manifest.yaml": "x", "__pycache__/a.pyc": "x"}, "Python cache"},
		{"tests", map[string]string{"manifest.yaml": "x", "tests/test_a.py": "x"}, "test file"},
		{"ratio", map[string]string{"manifest.yaml": strings.Repeat("a", 1<<20)}, "compression ratio"},
	}
	for _, tt := range bad {
		t.Run("refuse "+tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			for n, c := range tt.files {
				w, err := zw.Create(n)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := w.Write([]byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			err := lbpkg.CheckArchive(buf.Bytes())
			if !errors.Is(err, lbpkg.ErrArchive) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want ErrArchive mentioning %q", err, tt.want)
			}
		})
	}
	t.Run("refuse too many entries", func(t *testing.T) {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for i := 0; i <= lbpkg.MaxEntries; i++ {
			name := "manifest.yaml"
			if i > 0 {
				name = "f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "/" + strings.Repeat("y", i/26+1)
			}
			if _, err := zw.Create(name); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := lbpkg.CheckArchive(buf.Bytes()); !errors.Is(err, lbpkg.ErrArchive) || !strings.Contains(err.Error(), "entries") {
			t.Errorf("got %v", err)
		}
	})
}

// TestWrongWheel is PK-7's third part: a wheel with another name,
// version or hash is refused, each with its own error.
func TestWrongWheel(t *testing.T) {
	good := wheelPath(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tampered := append(append([]byte(nil), data...), 0)
	d := declarations(t)[0]
	for _, tt := range []struct {
		name string
		path string
		want error
	}{
		{"name", write("natz_py-2.15.0-py3-none-any.whl", data), lbpkg.ErrWheelName},
		{"not a wheel", write("nats_py-2.15.0.zip", data), lbpkg.ErrWheelName},
		{"version", write("nats_py-2.16.0-py3-none-any.whl", data), lbpkg.ErrWheelVersion},
		{"hash", write(lbpkg.NatsPyWheelFile, tampered), lbpkg.ErrWheelHash},
		{"missing", filepath.Join(dir, "none", lbpkg.NatsPyWheelFile), lbpkg.ErrWheel},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lbpkg.Build(d, lbpkg.Options{WheelPath: tt.path})
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := lbpkg.Build(d, lbpkg.Options{WheelPath: good, Version: "1.2"}); !errors.Is(err, lbpkg.ErrOptions) {
		t.Errorf("version 1.2: %v", err)
	}
	if _, err := lbpkg.Build(d, lbpkg.Options{WheelPath: good, Identity: "theirs"}); !errors.Is(err, lbpkg.ErrOptions) {
		t.Errorf("identity theirs: %v", err)
	}
}

// TestDeclarationsValid checks each service's declaration with the
// package's own config items added, and that a bad declaration is refused
// before anything is built.
func TestDeclarationsValid(t *testing.T) {
	for _, d := range declarations(t) {
		full := d
		full.Config = append(lbpkg.PackageConfig(), d.Config...)
		if err := full.Validate(); err != nil {
			t.Errorf("%s: %v", d.Plugin, err)
		}
	}
	d := declarations(t)[0]
	d.Config = append([]plugin.ConfigItem(nil), d.Config...)
	d.Config[0].Name = "api_token" // masked by LangBot but not declared secret
	if _, err := lbpkg.Build(d, lbpkg.Options{WheelPath: "unused"}); !errors.Is(err, plugin.ErrDeclaration) {
		t.Errorf("got %v, want ErrDeclaration", err)
	}
}

// TestArchiveAdmission checks each built archive against LangBot 4.11's
// certified-archive admission (issue 28): the ZIP comment, where a signed
// envelope would live, is empty; and every entry name passes a
// safe-extraction rule written here independently of CheckArchive (no
// absolute path, no "..", no backslash, no drive letter, no empty
// segment, no duplicate). CheckArchive refuses an archive with a comment.
func TestArchiveAdmission(t *testing.T) {
	wheel := wheelPath(t)
	unsafe := func(name string) string {
		switch {
		case name == "":
			return "empty"
		case strings.HasPrefix(name, "/"):
			return "absolute"
		case strings.Contains(name, `\`):
			return "backslash"
		case len(name) >= 2 && name[1] == ':' && (name[0]|0x20 >= 'a' && name[0]|0x20 <= 'z'):
			return "drive letter"
		}
		for _, seg := range strings.Split(name, "/") {
			switch seg {
			case "":
				return "empty segment"
			case "..", ".":
				return "dot segment"
			}
		}
		return ""
	}
	for _, d := range declarations(t) {
		t.Run(d.Plugin, func(t *testing.T) {
			p, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel})
			if err != nil {
				t.Fatal(err)
			}
			zr, err := zip.NewReader(bytes.NewReader(p.Data), int64(len(p.Data)))
			if err != nil {
				t.Fatal(err)
			}
			if zr.Comment != "" {
				t.Fatalf("ZIP comment %q, want none", zr.Comment)
			}
			seen := map[string]bool{}
			for _, f := range zr.File {
				if why := unsafe(f.Name); why != "" {
					t.Errorf("%q: %s", f.Name, why)
				}
				if key := strings.ToLower(f.Name); seen[key] {
					t.Errorf("%q: duplicate", f.Name)
				} else {
					seen[key] = true
				}
			}

			// The same archive with a comment is refused.
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			for _, f := range zr.File {
				if err := zw.Copy(f); err != nil {
					t.Fatal(err)
				}
			}
			if err := zw.SetComment(`{"format":"certified-plugin-envelope-v2"}`); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := lbpkg.CheckArchive(buf.Bytes()); !errors.Is(err, lbpkg.ErrArchive) || !strings.Contains(err.Error(), "ZIP comment") {
				t.Fatalf("CheckArchive of a commented archive = %v", err)
			}
		})
	}
}

// TestRuntimeDumpBudget is issue 32's per-message cost: LangBot's runtime
// answers every emit_event a package handles with the package's dump
// (RuntimeDump), and an answer over the runtime's 16 KiB chunk size is sent
// in chunks, which costs each chat message several milliseconds. Every
// package's dump stays within DumpBudget (the chunk size minus DumpMargin
// for the event context and envelope). The sizes are logged.
func TestRuntimeDumpBudget(t *testing.T) {
	wheel := wheelPath(t)
	for _, d := range declarations(t) {
		p, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel})
		if err != nil {
			t.Fatalf("%s: %v", d.Plugin, err)
		}
		n := len(p.RuntimeDump())
		t.Logf("%-11s dump %5d bytes (budget %d, chunk size %d)", d.Plugin, n, lbpkg.DumpBudget, lbpkg.RuntimeChunkBytes)
		if n > lbpkg.DumpBudget {
			t.Errorf("%s: the runtime's dump of the package is %d bytes, over the budget of %d: every chat message's emit_event answer would be sent in chunks (shorten the declaration's texts)",
				d.Plugin, n, lbpkg.DumpBudget)
		}
		if !json.Valid(p.RuntimeDump()) {
			t.Errorf("%s: the dump is not JSON", d.Plugin)
		}
	}
}

// TestObserveEventsGenerated checks that each package's generated.json
// carries its declaration's ObserveEvents, which decides whether the core
// forwards an event in the background or waits for the service's decision:
// githubkit and schenotify observe, takeover decides.
func TestObserveEventsGenerated(t *testing.T) {
	wheel := wheelPath(t)
	want := map[string]bool{githubkit.Plugin: true, schenotify.Plugin: true, takeover.Plugin: false}
	for _, d := range declarations(t) {
		p, err := lbpkg.Build(d, lbpkg.Options{WheelPath: wheel})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := p.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, lbpkg.GeneratedFile))
		if err != nil {
			t.Fatal(err)
		}
		var gen struct {
			Plugin struct {
				Observe *bool `json:"observe_events"`
			} `json:"plugin"`
		}
		if err := json.Unmarshal(raw, &gen); err != nil || gen.Plugin.Observe == nil {
			t.Fatalf("%s: generated.json has no plugin.observe_events: %v", d.Plugin, err)
		}
		if w, ok := want[d.Plugin]; !ok || *gen.Plugin.Observe != w || d.ObserveEvents != w {
			t.Errorf("%s: observe_events %v (declared %v), want %v", d.Plugin, *gen.Plugin.Observe, d.ObserveEvents, w)
		}
	}
}
