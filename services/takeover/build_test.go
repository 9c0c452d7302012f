package takeover_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/services/takeover"
)

func TestBuildRefusesABadMetaWriteRate(t *testing.T) {
	for _, v := range []string{"fast", "0", "-5", "1.5"} {
		env := &svcmain.Env{Getenv: func(k string) string {
			if k == takeover.MetaWriteRateEnv {
				return v
			}
			return ""
		}}
		_, err := takeover.Build(context.Background(), env)
		if !errors.Is(err, bus.ErrInvalidConfig) || !strings.Contains(err.Error(), takeover.MetaWriteRateEnv) {
			t.Errorf("%s=%q: %v", takeover.MetaWriteRateEnv, v, err)
		}
	}
}
