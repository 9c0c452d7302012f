package httpserve_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/httpserve"
)

func TestBudgetAdmit(t *testing.T) {
	b := httpserve.NewBudget(100)
	req := func(declared int64) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader("x"))
		r.ContentLength = declared
		if declared == -1 {
			r.Body = io.NopCloser(strings.NewReader("x"))
		}
		return r
	}
	if _, err := b.Admit(req(61), 60); !errors.Is(err, httpserve.ErrTooLarge) {
		t.Fatalf("declared over the limit: %v, want ErrTooLarge", err)
	}
	rel1, err := b.Admit(req(50), 60)
	if err != nil {
		t.Fatal(err)
	}
	rel2, err := b.Admit(req(-1), 40) // unknown length takes the limit
	if err != nil || b.InFlight() != 90 {
		t.Fatalf("unknown length: %v, in flight %d, want 90", err, b.InFlight())
	}
	if _, err := b.Admit(req(20), 60); !errors.Is(err, httpserve.ErrBusy) {
		t.Fatalf("over the budget: %v, want ErrBusy", err)
	}
	if b.InFlight() != 90 {
		t.Fatalf("a refused body took bytes: %d", b.InFlight())
	}
	rel1()
	rel1() // idempotent
	rel2()
	if b.InFlight() != 0 || b.Peak() != 90 {
		t.Fatalf("after release: in flight %d, peak %d; want 0, 90", b.InFlight(), b.Peak())
	}
	if rel, err := b.Admit(req(0), 60); err != nil || b.InFlight() != 0 {
		t.Fatalf("empty body: %v, in flight %d", err, b.InFlight())
	} else {
		rel()
	}
}
