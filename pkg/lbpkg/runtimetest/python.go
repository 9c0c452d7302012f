package runtimetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/testskip"
)

// Environment variables FindPython reads.
const (
	// EnvVendor names the folder holding the vendored SDK and the nats-py
	// wheel (default: ../shared/vendor from the repository root).
	EnvVendor = "LANGBOT_VENDOR"
	// EnvPython names the base interpreter (default: python3 on PATH).
	EnvPython = "LANGBOT_PYTHON"
	// EnvRequired, when "1", turns every skip for a missing runtime into a
	// failure: CI sets it so that the package tests cannot pass by skipping.
	EnvRequired = "LANGBOT_PACKAGES_REQUIRED"
)

// Vendored file names, relative to the vendor folder.
const (
	vendorSDK   = "langbot-plugin-sdk-0.5.5/src"
	vendorWheel = "wheels/nats_py-2.15.0-py3-none-any.whl"
)

// DebianPackages are the Debian packages the vendored runtime needs besides
// the interpreter's own pydantic 2 and PyYAML (what scripts/test-deps.sh installs).
const DebianPackages = "python3-websockets python3-httpx python3-httpcore python3-h11 " +
	"python3-anyio python3-rfc3986 python3-aiofiles python3-packaging python3-watchdog python3-dotenv"

// debianDist is where Debian puts its Python packages; the image's own
// interpreter does not read it by itself.
const debianDist = "/usr/lib/python3/dist-packages"

// Python is an interpreter that can run the SDK runtime and its plugin
// workers.
type Python struct {
	// Exe runs the runtime (a virtual environment's python in vendor mode).
	Exe string
	// Source says where the SDK comes from: "pip" or the vendored src folder.
	Source string
	// NatsWheel is the nats-py wheel the package builder bundles ("" when
	// none was found).
	NatsWheel string
	// Vendor is the vendor folder ("" in pip mode without one).
	Vendor string
}

// FindPython returns an interpreter for the real runtime, or skips the test
// saying why (fails it instead when LANGBOT_PACKAGES_REQUIRED=1).
func FindPython(t testing.TB) *Python {
	t.Helper()
	p, err := LocatePython(os.Getenv)
	if err != nil {
		Unavailable(t, err.Error())
	}
	return p
}

// SkipGroup is the group of tests that need LangBot's plugin runtime.
var SkipGroup = testskip.Group{Name: "runtime tests (LangBot plugin runtime)", Enable: "scripts/test-deps.sh", Required: EnvRequired}

// Unavailable skips the test for a missing part of the runtime's
// environment, or fails it when LANGBOT_PACKAGES_REQUIRED=1.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	SkipGroup.Skip(t, "runtimetest: "+reason)
}

// errNoRuntime marks a machine without a usable runtime.
var errNoRuntime = errors.New("no LangBot plugin runtime")

// LocatePython is FindPython outside a test: it returns the interpreter, or
// an error saying what is missing.
func LocatePython(getenv func(string) string) (*Python, error) {
	base := getenv(EnvPython)
	if base == "" {
		var err error
		if base, err = exec.LookPath("python3"); err != nil {
			return nil, fmt.Errorf("%w: python3 not on PATH", errNoRuntime)
		}
	}
	vendor, wheel := VendorPaths(getenv)
	// A pip-installed SDK and nats-py win over the vendored copies.
	if _, err := pyRun(base, "import langbot_plugin.runtime.app, nats"); err == nil {
		return &Python{Exe: base, Source: "pip", NatsWheel: wheel, Vendor: vendor}, nil
	}
	sdk := VendorSDK(vendor)
	if _, err := os.Stat(filepath.Join(sdk, "langbot_plugin")); err != nil {
		return nil, fmt.Errorf("%w: langbot-plugin is not pip-installed for %s and no SDK at %s (set %s)", errNoRuntime, base, sdk, EnvVendor)
	}
	exe, err := vendorVenv(base, sdk)
	if err != nil {
		return nil, err
	}
	if out, err := pyRun(exe, "import langbot_plugin.runtime.app"); err != nil {
		return nil, fmt.Errorf("%w: the vendored runtime does not import (Debian packages missing? apt-get install %s): %s",
			errNoRuntime, DebianPackages, tail(out, 400))
	}
	return &Python{Exe: exe, Source: sdk, NatsWheel: wheel, Vendor: vendor}, nil
}

// VendorPaths returns the vendor folder, LANGBOT_VENDOR (default
// ../shared/vendor from the repository root), and the nats-py wheel in it
// ("" when absent).
func VendorPaths(getenv func(string) string) (vendor, wheel string) {
	vendor = getenv(EnvVendor)
	if vendor == "" {
		if root, err := RepoRoot(); err == nil {
			vendor = filepath.Join(root, "..", "shared", "vendor")
		}
	}
	if vendor != "" {
		if abs, err := filepath.Abs(vendor); err == nil {
			vendor = abs
		}
	}
	wheel = filepath.Join(vendor, vendorWheel)
	if _, err := os.Stat(wheel); err != nil {
		wheel = ""
	}
	return vendor, wheel
}

// VendorSDK returns the vendored SDK's src folder under vendor.
func VendorSDK(vendor string) string { return filepath.Join(vendor, vendorSDK) }

// vendorVenv returns the python of a virtual environment whose .pth lists
// the SDK's src, the base interpreter's site-packages and Debian's
// dist-packages, creating it in the user cache directory when needed. A
// .pth and not PYTHONPATH: the runtime starts each plugin worker with an
// explicit environment of its own, and only the interpreter's path reaches
// the worker.
func vendorVenv(base, sdk string) (string, error) {
	in, err := InspectPython(base)
	if err != nil {
		return "", err
	}
	return in.Venv("runtime-venv", append(append([]string{sdk}, in.Sites...), debianDist))
}

// Interpreter is a base Python: its real executable, its site-packages and
// its version ("3.11").
type Interpreter struct {
	Exe     string
	Sites   []string
	Version string
}

// InspectPython asks base for its executable, site-packages and version.
func InspectPython(base string) (Interpreter, error) {
	out, err := pyRun(base, "import sys, site, json; print(json.dumps([sys.executable, site.getsitepackages(), '%d.%d' % sys.version_info[:2]]))")
	if err != nil {
		return Interpreter{}, fmt.Errorf("%w: %s: %s", errNoRuntime, base, tail(out, 400))
	}
	var info []json.RawMessage
	var in Interpreter
	if err := json.Unmarshal(bytes.TrimSpace(out), &info); err != nil || len(info) != 3 ||
		json.Unmarshal(info[0], &in.Exe) != nil || json.Unmarshal(info[1], &in.Sites) != nil || json.Unmarshal(info[2], &in.Version) != nil {
		return Interpreter{}, fmt.Errorf("%w: %s: unexpected answer %q", errNoRuntime, base, tail(out, 200))
	}
	return in, nil
}

// Venv returns the python of a virtual environment of in whose .pth file
// holds lines (paths, or `import` lines), creating it in the user cache
// directory under name plus a hash of its contents when needed.
func (in Interpreter) Venv(name string, lines []string) (string, error) {
	pth := strings.Join(lines, "\n") + "\n"
	sum := sha256.Sum256([]byte(in.Exe + "\x00" + pth))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "langbot-nats", name+"-"+hex.EncodeToString(sum[:6]))
	python := filepath.Join(dir, "bin", "python")
	if _, err := os.Stat(python); err == nil {
		return python, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "venv-tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// The venv is built under its final name's sibling and renamed, so a
	// concurrent test process never sees half of one.
	if _, err := in.VenvAt(filepath.Join(tmp, "v"), lines); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "v"), dir); err != nil {
		if _, serr := os.Stat(python); serr != nil {
			return "", err
		}
	}
	return python, nil
}

// VenvAt creates a virtual environment of in at dir (which must not exist)
// whose .pth file holds lines, and returns its python. Its bin/python
// points at the real interpreter; paths inside are relative to the venv.
func (in Interpreter) VenvAt(dir string, lines []string) (string, error) {
	if out, err := exec.Command(in.Exe, "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: creating a virtual environment: %v: %s", errNoRuntime, err, tail(out, 400))
	}
	site := filepath.Join(dir, "lib", "python"+in.Version, "site-packages")
	pth := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(site, "langbot_vendor.pth"), []byte(pth), 0o644); err != nil {
		return "", err
	}
	return filepath.Join(dir, "bin", "python"), nil
}

func pyRun(python, code string) ([]byte, error) {
	cmd := exec.Command(python, "-c", code)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	return cmd.CombinedOutput()
}

// RepoRoot returns the root of the module github.com/langbot-nats/plugins,
// searched upward from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/langbot-nats/plugins\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("runtimetest: repository root not found")
		}
		dir = parent
	}
}

func tail(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
