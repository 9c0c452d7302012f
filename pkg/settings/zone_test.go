package settings_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/settings"
)

// TestZone is the one time zone rule of the three services: an IANA name
// (trimmed) is that zone, absent or empty is the default silently, and
// anything else is the default with a warning that says why: never a
// zone other than the one named.
func TestZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		value  string // JSON; "" for absent
		want   string // the zone's name
		reason settings.Reason
	}{
		{"absent", "", "Europe/Berlin", ""},
		{"null", "null", "Europe/Berlin", ""},
		{"empty", `""`, "Europe/Berlin", ""},
		{"blank", `"  "`, "Europe/Berlin", ""},
		{"iana", `"Asia/Shanghai"`, "Asia/Shanghai", ""},
		{"trimmed", `" America/New_York\t"`, "America/New_York", ""},
		{"utc", `"UTC"`, "UTC", ""},
		{"etc offset zone", `"Etc/GMT-8"`, "Etc/GMT-8", ""},
		{"etc offset zone plus", `"Etc/GMT+5"`, "Etc/GMT+5", ""},
		{"unknown", `"Mars/Base"`, "Europe/Berlin", settings.NotAZone},
		{"fixed offset", `"+08:00"`, "Europe/Berlin", settings.NotAZone},
		{"negative offset", `"-05:00"`, "Europe/Berlin", settings.NotAZone},
		{"posix", `"UTC+8"`, "Europe/Berlin", settings.NotAZone},
		{"local", `"Local"`, "Europe/Berlin", settings.NotAZone},
		{"local any case", `"local"`, "Europe/Berlin", settings.NotAZone},
		{"host localtime", `"localtime"`, "Europe/Berlin", settings.NotAZone},
		{"path", `"../../etc/passwd"`, "Europe/Berlin", settings.NotAZone},
		{"absolute path", `"/etc/localtime"`, "Europe/Berlin", settings.NotAZone},
		{"wrong case", `"asia/shanghai"`, "Europe/Berlin", settings.NotAZone},
		{"number", `8`, "Europe/Berlin", settings.WrongType},
		{"object", `{"zone":"UTC"}`, "Europe/Berlin", settings.WrongType},
		{"list", `["UTC"]`, "Europe/Berlin", settings.WrongType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{}`
			if tc.value != "" {
				raw = `{"timezone":` + tc.value + `}`
			}
			r := settings.Read(json.RawMessage(raw))
			if got := r.Zone("timezone", berlin); got == nil || got.String() != tc.want {
				t.Fatalf("Zone = %v, want %s", got, tc.want)
			}
			checkReason(t, r, tc.reason)
			if ws := r.Warnings(); len(ws) == 1 && (ws[0].Field != "timezone" || ws[0].Used != "Europe/Berlin" || string(ws[0].Raw) != tc.value) {
				t.Errorf("warning %+v", ws[0])
			}
		})
	}
}

func TestZoneDefaultUTC(t *testing.T) {
	r := settings.Read(json.RawMessage(`{"timezone":"Mars/Base"}`))
	if got := r.Zone("timezone", time.UTC); got != time.UTC {
		t.Fatalf("Zone = %v, want UTC", got)
	}
	if ws := r.Warnings(); len(ws) != 1 || ws[0].Used != "UTC" || ws[0].Reason != settings.NotAZone {
		t.Fatalf("warnings %+v", ws)
	}
}

func TestLoadZone(t *testing.T) {
	for _, bad := range []string{"", "Local", "LOCAL", "localtime", "+08:00", "-05:00", "UTC+8", "Mars/Base", "../etc/passwd", " UTC"} {
		if loc, err := settings.LoadZone(bad); err == nil || !errors.Is(err, settings.ErrNotAZone) || loc != nil {
			t.Errorf("LoadZone(%q) = %v, %v", bad, loc, err)
		}
	}
	for _, good := range []string{"UTC", "Asia/Shanghai", "America/New_York", "Etc/GMT+8"} {
		if loc, err := settings.LoadZone(good); err != nil || loc.String() != good {
			t.Errorf("LoadZone(%q) = %v, %v", good, loc, err)
		}
	}
}

// FuzzZone: whatever the config, Zone gives the default or the zone the
// value names (and then exactly that name, trimmed), a warning exactly
// when it replaced a value that was there, and never panics.
func FuzzZone(f *testing.F) {
	for _, s := range []string{
		`{"v":"Asia/Shanghai"}`, `{"v":" UTC "}`, `{"v":""}`, `{"v":"Local"}`, `{"v":"+08:00"}`, `{"v":"Etc/GMT+8"}`,
		`{"v":"../../etc/passwd"}`, `{"v":"Mars/Base"}`, `{"v":8}`, `{"v":null}`, `{"v":"\u0000"}`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	def := time.FixedZone("default", 3600)
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := settings.Read(raw)
		got := r.Zone("v", def)
		ws := r.Warnings()
		if len(ws) > 1 {
			t.Fatalf("%d warnings", len(ws))
		}
		v, present := r.Raw("v")
		var name string
		isString := present && v[0] == '"' && json.Unmarshal(v, &name) == nil
		name = strings.TrimSpace(name)
		switch {
		case got == nil:
			t.Fatal("nil zone")
		case got != def:
			if !isString || got.String() != name || len(ws) != 0 {
				t.Fatalf("zone %q from %s (warnings %+v)", got, v, ws)
			}
		case !present || (isString && name == ""):
			if len(ws) != 0 {
				t.Fatalf("warning %+v for an absent or empty value", ws)
			}
		case len(ws) != 1 || ws[0].Used != "default" || ws[0].Field != "v":
			t.Fatalf("default for %s without a warning (%+v)", v, ws)
		}
	})
}
