package schenotify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		err          error
		code, detail string
	}{
		{fmt.Errorf("send: %w", bus.ErrHostTimeout), ErrCodeTimeout, "no reply in time"},
		{context.DeadlineExceeded, ErrCodeTimeout, "transport error"},
		{wire.Errorf(wire.ErrInternal, "secret text must not leak"), ErrCodeHost, "500 internal"},
		{wire.WithReason(wire.ErrConflict, "dup", "x"), ErrCodeHost, "409 conflict (dup)"},
		{wire.Errorf(wire.ErrUnavailable, "busy"), errCodeUnavailable, "503 unavailable"},
		{fmt.Errorf("x: %w", bus.ErrNoHost), errCodeUnavailable, "no host is serving actions"},
		{errors.New("nats: connection closed"), errCodeUnavailable, "transport error"},
	}
	for _, tt := range tests {
		if got := errorCode(tt.err); got != tt.code {
			t.Errorf("errorCode(%v) = %q, want %q", tt.err, got, tt.code)
		}
		if got := errorDetail(tt.err); got != tt.detail {
			t.Errorf("errorDetail(%v) = %q, want %q", tt.err, got, tt.detail)
		}
	}
}

// TestInternalFailure: storage failures are unavailable, anything else is
// internal, and neither carries the cause in its text.
func TestInternalFailure(t *testing.T) {
	s := &replies{log: discardLogger()}
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	rd := Renderer{Cat: cat}
	set := NormalizeConfig(nil, nil)
	set.Language = "en_US"
	inv := &bus.Invocation{}
	for _, tc := range []struct {
		err  error
		code string
	}{
		{storeErr("read index", errors.New("nats: timeout")), "unavailable"},
		{errors.New("schenotify: decode reminder: invalid character"), "internal"},
	} {
		f := s.internalFailure(context.Background(), inv, tc.err)
		if f.Code != tc.code {
			t.Errorf("%v: code %s", tc.err, f.Code)
		}
		if txt := rd.ToolError(set, f).Text; txt == "" || contains(txt, "nats") || contains(txt, "invalid character") {
			t.Errorf("%v: text %q", tc.err, txt)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
