package runtimetest

import (
	"errors"
	"strings"
	"testing"
)

// A machine without the SDK gets a reason naming the setting to fix.
func TestFindPythonWithoutSDK(t *testing.T) {
	env := map[string]string{EnvVendor: t.TempDir()}
	if _, err := pyRun("python3", "import langbot_plugin.runtime.app, nats"); err == nil {
		t.Skip("langbot-plugin is pip-installed here: the vendor folder is not consulted")
	}
	_, err := LocatePython(func(k string) string { return env[k] })
	if !errors.Is(err, errNoRuntime) || !strings.Contains(err.Error(), EnvVendor) {
		t.Fatalf("findPython = %v, want errNoRuntime naming %s", err, EnvVendor)
	}
	env[EnvPython] = "/nonexistent/python3"
	if _, err := LocatePython(func(k string) string { return env[k] }); !errors.Is(err, errNoRuntime) {
		t.Fatalf("findPython with a missing interpreter = %v", err)
	}
}
