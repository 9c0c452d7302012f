package reallangbot

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/lbpkg/runtimetest"
	"github.com/langbot-nats/plugins/pkg/testskip"
)

// Environment variables Find reads (besides runtimetest's LANGBOT_VENDOR
// and LANGBOT_PYTHON).
const (
	// EnvSource names LangBot's source folder (the one holding main.py and
	// src/langbot).
	EnvSource = "LANGBOT_SOURCE"
	// EnvDeps names the folder scripts/test-deps.sh unpacks the Debian
	// packages into.
	EnvDeps = "LANGBOT_REAL_DEPS"
	// EnvRequired, when "1", turns a skip for a missing part into a
	// failure: CI sets it.
	EnvRequired = "LANGBOT_REAL_REQUIRED"
)

// SkipGroup is the group of tests that need a real LangBot.
var SkipGroup = testskip.Group{Name: "real-LangBot tests", Enable: "scripts/test-deps.sh", Required: EnvRequired}

// Env is what booting LangBot takes: a virtual environment whose path has
// LangBot, its SDK, the Debian packages and the stand-ins.
type Env struct {
	// Python runs LangBot and its plugin runtime.
	Python string
	// Source is LangBot's source folder; Version its version.
	Source, Version string
	// LibPath holds the shared libraries of the unpacked Debian packages
	// (LD_LIBRARY_PATH).
	LibPath string
	// NatsWheel is the nats-py wheel the package builder bundles.
	NatsWheel string
}

// Find locates the parts and builds the environment under a test
// temporary directory, or skips the test saying what is missing (fails it
// when LANGBOT_REAL_REQUIRED=1).
func Find(t testing.TB) *Env {
	t.Helper()
	env, err := locate(os.Getenv, t.TempDir())
	if err != nil {
		SkipGroup.Skip(t, err.Error())
	}
	return env
}

var errMissing = errors.New("reallangbot: a part is missing")

var versionLine = regexp.MustCompile(`(?m)^version\s*=\s*"([^"]+)"`)

func locate(getenv func(string) string, tmp string) (*Env, error) {
	root, err := runtimetest.RepoRoot()
	if err != nil {
		return nil, err
	}
	source := getenv(EnvSource)
	if source == "" {
		source = filepath.Join(root, "..", "shared", "vendor", "langbot-4.10.8")
	}
	source, _ = filepath.Abs(source)
	pyproject, err := os.ReadFile(filepath.Join(source, "pyproject.toml"))
	if err != nil {
		return nil, fmt.Errorf("%w: no LangBot source at %s (set %s): %v", errMissing, source, EnvSource, err)
	}
	m := versionLine.FindSubmatch(pyproject)
	if m == nil {
		return nil, fmt.Errorf("%w: no version in %s/pyproject.toml", errMissing, source)
	}
	version := string(m[1])

	deps := getenv(EnvDeps)
	if deps == "" {
		deps = filepath.Join(root, ".data", "langbot-deps")
	}
	deps, _ = filepath.Abs(deps)
	if _, err := os.Stat(filepath.Join(deps, "READY")); err != nil {
		return nil, fmt.Errorf("%w: LangBot's Debian packages are not unpacked in %s (run scripts/test-deps.sh, or set %s)", errMissing, deps, EnvDeps)
	}
	debianSite := filepath.Join(deps, "root", "usr", "lib", "python3", "dist-packages")
	libs, _ := filepath.Glob(filepath.Join(deps, "root", "usr", "lib", "*-linux-gnu*"))

	// The SDK and the nats-py wheel come from the vendor folder the
	// runtime kit uses (LANGBOT_VENDOR).
	vendor, wheel := runtimetest.VendorPaths(getenv)
	sdk := runtimetest.VendorSDK(vendor)
	if _, err := os.Stat(filepath.Join(sdk, "langbot_plugin")); err != nil {
		return nil, fmt.Errorf("%w: no plugin SDK at %s (set %s)", errMissing, sdk, runtimetest.EnvVendor)
	}
	if wheel == "" {
		return nil, fmt.Errorf("%w: no nats-py wheel in %s (set %s)", errMissing, vendor, runtimetest.EnvVendor)
	}
	base := getenv(runtimetest.EnvPython)
	if base == "" {
		if base, err = exec.LookPath("python3"); err != nil {
			return nil, fmt.Errorf("%w: python3 not on PATH", errMissing)
		}
	}
	in, err := runtimetest.InspectPython(base)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errMissing, err)
	}
	standins := filepath.Join(tmp, "standins")
	if err := writeStandins(standins, debianSite, version); err != nil {
		return nil, err
	}
	// Order: the interpreter's own packages first (its pydantic 2,
	// typing_extensions, cffi and cryptography must win over Debian's
	// older copies), then Debian's, the stand-ins, LangBot, the SDK, and
	// last the line that installs the placeholder finder.
	var lines []string
	for _, site := range in.Sites {
		// Debian's system-wide packages (an interpreter of Debian's own
		// reads them) are older than the unpacked ones and must not win.
		if !strings.HasPrefix(site, "/usr/lib/python3") {
			lines = append(lines, site)
		}
	}
	lines = append(lines, debianSite, standins, filepath.Join(source, "src"))
	lines = append(lines, sdk)
	lines = append(lines, "import _langbot_standins")
	python, err := in.VenvAt(filepath.Join(tmp, "venv"), lines)
	if err != nil {
		return nil, err
	}
	env := &Env{Python: python, Source: source, Version: version, LibPath: strings.Join(libs, ":"), NatsWheel: wheel}
	if out, err := env.command("-c", "import langbot.pkg.core.boot, langbot_plugin.runtime.app, pydantic; assert pydantic.VERSION.startswith('2')").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: LangBot does not import with the unpacked packages: %s", errMissing, tailString(string(out), 800))
	}
	return env, nil
}

// command runs the environment's python with args.
func (e *Env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.Python, args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "LD_LIBRARY_PATH="+e.LibPath)
	return cmd
}

func tailString(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
