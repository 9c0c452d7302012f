package console_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/services/takeover/console"
)

func TestParseKey(t *testing.T) {
	raw := []byte("0123456789abcdef0123456789abcdef!?")
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k, err := console.ParseKey(enc.EncodeToString(raw))
		if err != nil || string(k) != string(raw) {
			t.Fatalf("%v: %q %v", enc, k, err)
		}
	}
	for _, bad := range []string{"", "short", base64.StdEncoding.EncodeToString(make([]byte, 31)), "!!!!"} {
		if _, err := console.ParseKey(bad); !errors.Is(err, console.ErrKey) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestMintVerifyRoundTrip(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	now := time.Unix(1_800_000_000, 0)
	c := console.Claims{Scope: "inst.ws.inst-1", Operator: "alice@example.com", Exp: now.Add(time.Hour).Unix()}
	tok, err := console.Mint(key, c)
	if err != nil {
		t.Fatal(err)
	}
	got, sc, err := console.Verify(key, tok, now)
	if err != nil || got != c || sc.String() != c.Scope {
		t.Fatalf("verify: %+v %v %v", got, sc, err)
	}
	// each check in turn
	for name, check := range map[string]func() error{
		"other key":       func() error { _, _, err := console.Verify([]byte(strings.Repeat("x", 32)), tok, now); return err },
		"at expiry":       func() error { _, _, err := console.Verify(key, tok, time.Unix(c.Exp, 0)); return err },
		"exp beyond 24 h": func() error { _, _, err := console.Verify(key, tok, now.Add(-24*time.Hour)); return err },
		"flipped MAC": func() error {
			b := []byte(tok)
			b[len(b)-2] ^= 1
			_, _, err := console.Verify(key, string(b), now)
			return err
		},
		"trailing part": func() error { _, _, err := console.Verify(key, tok+".x", now); return err },
	} {
		if err := check(); !errors.Is(err, console.ErrUnauthorized) {
			t.Errorf("%s: %v, want ErrUnauthorized", name, err)
		}
	}
	if _, err := console.Mint(key, console.Claims{Scope: "a.b", Operator: "x", Exp: 1}); err == nil {
		t.Fatal("a two-token scope was minted")
	}
	if _, err := console.Mint(key, console.Claims{Scope: "a.b.c", Operator: "with space", Exp: 1}); err == nil {
		t.Fatal("a bad operator was minted")
	}
}

// FuzzVerify: no input panics, and whatever verifies re-mints to the same
// token (the MAC covers exactly the carried bytes).
func FuzzVerify(f *testing.F) {
	key := []byte(strings.Repeat("k", 32))
	now := time.Unix(1_800_000_000, 0)
	good, _ := console.Mint(key, console.Claims{Scope: "i.w.n", Operator: "op", Exp: now.Unix() + 60})
	f.Add(good)
	f.Add("v1..")
	f.Add("v1.e30.AAAA")
	f.Add(good + "x")
	f.Fuzz(func(t *testing.T, tok string) {
		c, sc, err := console.Verify(key, tok, now)
		if err != nil {
			if !errors.Is(err, console.ErrUnauthorized) {
				t.Fatalf("error %v is not ErrUnauthorized", err)
			}
			return
		}
		if sc.String() != c.Scope || c.Exp <= now.Unix() {
			t.Fatalf("accepted %+v", c)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	key := []byte(strings.Repeat("k", 32))
	now := time.Unix(1_800_000_000, 0)
	tok, _ := console.Mint(key, console.Claims{Scope: "inst.ws.inst-1", Operator: "alice", Exp: now.Unix() + 3600})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := console.Verify(key, tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// TestVerifyRefusesLineBreaks: the base64 decoder skips line breaks, so a
// token with one inside would verify as a second spelling of a good token.
func TestVerifyRefusesLineBreaks(t *testing.T) {
	key := bytes.Repeat([]byte{3}, 32)
	now := time.Unix(1_700_000_000, 0)
	tok, err := console.Mint(key, console.Claims{Scope: "inst.ws.inst-1", Operator: "alice", Exp: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := console.Verify(key, tok, now); err != nil {
		t.Fatalf("the good token: %v", err)
	}
	for _, bad := range []string{tok[:12] + "\n" + tok[12:], tok[:len(tok)-5] + "\r\n" + tok[len(tok)-5:]} {
		if _, _, err := console.Verify(key, bad, now); !errors.Is(err, console.ErrUnauthorized) {
			t.Errorf("%q: %v, want ErrUnauthorized", bad, err)
		}
	}
}
