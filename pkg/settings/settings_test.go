package settings_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/settings"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		notObject bool
	}{{"", false}, {"null", false}, {"  {} ", false}, {`{"a":1}`, false}, {"[]", true}, {`"x"`, true}, {"{", true}, {"1", true}} {
		r := settings.Read(json.RawMessage(tc.raw))
		if r.NotObject() != tc.notObject {
			t.Errorf("Read(%q).NotObject() = %v, want %v", tc.raw, r.NotObject(), tc.notObject)
		}
		if got := len(r.Warnings()); got != 0 {
			t.Errorf("Read(%q): %d warnings", tc.raw, got)
		}
		if n := r.Int("a", 7, settings.Ints{Min: 0, Max: 10}); tc.notObject && n != 7 {
			t.Errorf("Read(%q): a = %d from a config that is not an object", tc.raw, n)
		}
	}
}

func TestInt(t *testing.T) {
	loose := settings.Ints{Min: 60, Max: 3600, Strings: true}
	strict := settings.Ints{Min: 1, Max: 1000, LowIsDefault: true}
	trunc := settings.Ints{Min: 30, Max: 86400, Strings: true, Truncate: true}
	for _, tc := range []struct {
		name   string
		value  string // JSON; "" for absent
		rule   settings.Ints
		want   int
		reason settings.Reason
	}{
		{"absent", "", loose, 120, ""},
		{"null", "null", loose, 120, ""},
		{"in range", "300", loose, 300, ""},
		{"integral float", "300.0", loose, 300, ""},
		{"exponent", "3e2", loose, 300, ""},
		{"fraction", "300.5", loose, 120, settings.Invalid},
		{"low clamped", "1", loose, 60, settings.ClampedLow},
		{"high clamped", "99999", loose, 3600, settings.ClampedHigh},
		{"huge", "1e999999999", loose, 3600, settings.ClampedHigh},
		{"huge negative", "-123456789012345678901234567890", loose, 60, settings.ClampedLow},
		{"tiny fraction", "1e-999999999", loose, 120, settings.Invalid},
		{"decimal string", `" 300 "`, loose, 300, ""},
		{"signed string", `"+300"`, loose, 300, ""},
		{"empty string", `""`, loose, 120, ""},
		{"text", `"soon"`, loose, 120, settings.Invalid},
		{"float string", `"300.0"`, loose, 120, settings.Invalid},
		{"bool", "true", loose, 120, settings.WrongType},
		{"object", `{"n":1}`, loose, 120, settings.WrongType},
		{"string refused", `"5"`, strict, 100, settings.WrongType},
		{"low to default", "0", strict, 100, settings.TooLow},
		{"negative to default", "-5", strict, 100, settings.TooLow},
		{"strict high", "5000", strict, 1000, settings.ClampedHigh},
		{"truncated", "29.9", trunc, 30, settings.ClampedLow},
		{"truncated in range", "600.7", trunc, 600, ""},
		{"truncated at max", "86400.5", trunc, 86400, ""},
		{"float string truncated", `" 90.5 "`, trunc, 90, ""},
		{"exponent string truncated", `"12.5e1"`, trunc, 125, ""},
		{"text with Truncate", `"soon"`, trunc, 600, settings.Invalid},
		{"huge string clamped", `"1e400"`, trunc, 86400, settings.ClampedHigh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := "{}"
			if tc.value != "" {
				raw = `{"n":` + tc.value + `}`
			}
			def := 120
			if tc.rule.LowIsDefault {
				def = 100
			} else if tc.rule.Truncate {
				def = 600
			}
			r := settings.Read(json.RawMessage(raw))
			got := r.Int("n", def, tc.rule)
			if got != tc.want {
				t.Errorf("Int = %d, want %d", got, tc.want)
			}
			ws := r.Warnings()
			switch {
			case tc.reason == "" && len(ws) != 0:
				t.Errorf("warnings %v, want none", ws)
			case tc.reason != "" && (len(ws) != 1 || ws[0].Reason != tc.reason || ws[0].Field != "n" || ws[0].Used != fmt.Sprint(tc.want)):
				t.Errorf("warnings %+v, want one on n: %s, used %d", ws, tc.reason, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	lang := func(s string) bool { return s == "en_US" || s == "zh_Hans" }
	for _, tc := range []struct {
		name, value string
		rule        settings.Strings
		want        string
		reason      settings.Reason
	}{
		{"absent", "", settings.Strings{}, "def", ""},
		{"kept as is", `" a "`, settings.Strings{}, " a ", ""},
		{"trimmed", `" a "`, settings.Strings{Trim: true}, "a", ""},
		{"empty kept", `""`, settings.Strings{}, "", ""},
		{"empty to default", `"  "`, settings.Strings{Trim: true, EmptyIsDefault: true}, "def", ""},
		{"wrong type", `12`, settings.Strings{}, "def", settings.WrongType},
		{"valid", `"en_US"`, settings.Strings{Valid: lang}, "en_US", ""},
		{"not valid", `"fr"`, settings.Strings{Valid: lang}, "def", settings.Invalid},
		{"quietly not valid", `"fr"`, settings.Strings{Valid: lang, Quiet: true}, "def", ""},
		{"quietly wrong type", `[]`, settings.Strings{Quiet: true}, "def", ""},
		{"cut", `"abcdef"`, settings.Strings{MaxRunes: 3}, "abc", settings.Cut},
		{"cut by runes", `"日本語です"`, settings.Strings{MaxRunes: 2}, "日本", settings.Cut},
		{"cut then trimmed", `" ab cd"`, settings.Strings{Trim: true, MaxRunes: 3}, "ab", settings.Cut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := "{}"
			if tc.value != "" {
				raw = `{"s":` + tc.value + `}`
			}
			r := settings.Read(json.RawMessage(raw))
			if got := r.String("s", "def", tc.rule); got != tc.want {
				t.Errorf("String = %q, want %q", got, tc.want)
			}
			checkReason(t, r, tc.reason)
		})
	}
}

func TestBool(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		rule        settings.Bools
		want        bool
		reason      settings.Reason
	}{
		{"absent", "", settings.Bools{}, true, ""},
		{"false", "false", settings.Bools{}, false, ""},
		{"string", `" FALSE "`, settings.Bools{}, false, ""},
		{"word refused", `"no"`, settings.Bools{}, true, settings.Invalid},
		{"word", `"no"`, settings.Bools{Words: true}, false, ""},
		{"one", `"1"`, settings.Bools{Words: true}, true, ""},
		{"number", `0`, settings.Bools{Words: true}, true, settings.WrongType},
		{"other", `"maybe"`, settings.Bools{Words: true}, true, settings.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := "{}"
			if tc.value != "" {
				raw = `{"b":` + tc.value + `}`
			}
			r := settings.Read(json.RawMessage(raw))
			if got := r.Bool("b", true, tc.rule); got != tc.want {
				t.Errorf("Bool = %v, want %v", got, tc.want)
			}
			checkReason(t, r, tc.reason)
		})
	}
}

func TestWords(t *testing.T) {
	rule := settings.Words{MaxWords: 3, MaxRunes: 5}
	for _, tc := range []struct {
		name, value string
		want        []string
		reason      settings.Reason
	}{
		{"absent", "", []string{}, ""},
		{"list", `[" help ", "human", "help", ""]`, []string{"help", "human"}, ""},
		{"scalar", `"agent"`, []string{"agent"}, ""},
		{"scalars", `[1, true, "x"]`, []string{"1", "true", "x"}, ""},
		{"too long", `["toolong", "ok"]`, []string{"ok"}, settings.Dropped},
		{"too many", `["a", "b", "c", "d"]`, []string{"a", "b", "c"}, settings.Dropped},
		{"objects", `[{"a":1}, null, "b"]`, []string{"b"}, settings.Dropped},
		{"object", `{"a":1}`, []string{}, settings.Dropped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := "{}"
			if tc.value != "" {
				raw = `{"w":` + tc.value + `}`
			}
			r := settings.Read(json.RawMessage(raw))
			if got := r.Words("w", rule); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Words = %q, want %q", got, tc.want)
			}
			checkReason(t, r, tc.reason)
		})
	}
}

func TestWarnKeepsRaw(t *testing.T) {
	r := settings.Read(json.RawMessage(`{"timezone": "Mars/Olympus"}`))
	raw, ok := r.Raw("timezone")
	if !ok || string(raw) != `"Mars/Olympus"` {
		t.Fatalf("Raw = %s, %v", raw, ok)
	}
	r.Warn("timezone", settings.Invalid, "UTC")
	if ws := r.Warnings(); len(ws) != 1 || string(ws[0].Raw) != `"Mars/Olympus"` || ws[0].Used != "UTC" {
		t.Fatalf("warnings %+v", ws)
	}
}

func checkReason(t *testing.T, r *settings.Reader, want settings.Reason) {
	t.Helper()
	ws := r.Warnings()
	switch {
	case want == "" && len(ws) != 0:
		t.Errorf("warnings %+v, want none", ws)
	case want != "" && (len(ws) != 1 || ws[0].Reason != want):
		t.Errorf("warnings %+v, want one: %s", ws, want)
	}
}

// FuzzReader reads one field of an arbitrary config every way and checks
// the reader's promises: it never panics, an int is always within its
// bounds and agrees with an independent oracle (big.Rat over the JSON
// number), a cut string is within its rune limit, a word list within its
// limits, and a warning always names the field it is about.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"v": 120}`, `{"v": "120"}`, `{"v": 1.5}`, `{"v": -1e3}`, `{"v": 1e400}`, `{"v": "  "}`,
		`{"v": true}`, `{"v": "yes"}`, `{"v": ["a", "a", 1, null, {"x": 1}]}`, `{"v": "日本語テキスト"}`,
		`[1, 2]`, `"str"`, `{"v": null}`, `{`, `{"v": 123456789012345678901234567890}`, `{"v": 0.0000001e7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ints := settings.Ints{Min: -50, Max: 3600, Strings: true}
		r := settings.Read(raw)
		n := r.Int("v", 7, ints)
		if n != 7 && (n < ints.Min || n > ints.Max) {
			t.Fatalf("Int %d outside [%d, %d]", n, ints.Min, ints.Max)
		}
		if want, ok := oracleInt(raw, ints); ok && want != n {
			t.Fatalf("Int %d, oracle %d", n, want)
		}
		if s := settings.Read(raw).String("v", "d", settings.Strings{Trim: true, MaxRunes: 4}); len([]rune(s)) > 4 {
			t.Fatalf("String %q longer than 4 runes", s)
		}
		_ = settings.Read(raw).Bool("v", false, settings.Bools{Words: true})
		words := settings.Read(raw).Words("v", settings.Words{MaxWords: 3, MaxRunes: 4})
		seen := map[string]bool{}
		for _, w := range words {
			if w == "" || w != strings.TrimSpace(w) || len([]rune(w)) > 4 || seen[w] {
				t.Fatalf("bad word %q in %q", w, words)
			}
			seen[w] = true
		}
		if len(words) > 3 {
			t.Fatalf("%d words", len(words))
		}
		for _, w := range r.Warnings() {
			if w.Field != "v" {
				t.Fatalf("warning on %q", w.Field)
			}
		}
	})
}

// oracleInt is Int's result by another route, for a config whose v is a
// JSON number with a modest exponent: big.Rat's exact value, bounds
// applied to it. ok is false where the oracle has no answer.
func oracleInt(raw []byte, rule settings.Ints) (int, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return 0, false
	}
	v, ok := m["v"]
	if !ok {
		return 0, false
	}
	var num json.Number
	if json.Unmarshal(v, &num) != nil || strings.ContainsAny(num.String(), "eE") {
		return 0, false
	}
	x, ok := new(big.Rat).SetString(num.String())
	if !ok {
		return 0, false
	}
	switch {
	case !x.IsInt():
		return 7, true
	case x.Cmp(big.NewRat(int64(rule.Min), 1)) < 0:
		return rule.Min, true
	case x.Cmp(big.NewRat(int64(rule.Max), 1)) > 0:
		return rule.Max, true
	}
	return int(x.Num().Int64()), true
}
