package takeover

// The takeover side of the HTTP console (package console): ops
// implements console.Operations on top of do, and mountConsole puts the
// console on the binary's HTTP mux. This file exists because the console
// package cannot import takeover while takeover mounts it.

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/svcmain"
	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/console"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

var _ console.Operations = (*ops)(nil)

// ConsoleKeyEnv names the variable holding the console's token key.
const ConsoleKeyEnv = "LANGBOT_CONSOLE_KEY"

// mountConsole registers the HTTP console on env.Mux under /console/ when
// LANGBOT_CONSOLE_KEY is set (spec §9 rule 2); without it the console is
// off and only the page endpoint serves the operations.
func mountConsole(env *svcmain.Env, o *ops) error {
	if env.Mux == nil || env.Getenv == nil {
		return nil
	}
	key := env.Getenv(ConsoleKeyEnv)
	if key == "" {
		o.log.Info("HTTP console off: " + ConsoleKeyEnv + " is not set")
		return nil
	}
	h, err := console.New(console.Config{Key: key, Logger: env.Logger}, o)
	if err != nil {
		return fmt.Errorf("%w: %w", bus.ErrInvalidConfig, err)
	}
	env.Mux.Handle("/console/", h)
	return nil
}

// consoleCall builds the pageCall of an HTTP console request from the
// scope's authority: its binding, its config (spec §7.1 rule 3) and its
// state (rule 4).
func (o *ops) consoleCall(ctx context.Context, sc binding.Scope, operator string) (pageCall, error) {
	a, ok := o.runner.View().Lookup(sc)
	if !ok {
		stored, err := o.runner.Authority(ctx, sc)
		if err != nil {
			return pageCall{}, storageError()
		}
		if stored == nil {
			return pageCall{}, wire.Errorf(wire.ErrBindingRefused, "the installation is unknown")
		}
		a = *stored
	}
	if a.State == bus.StateRemoved {
		return pageCall{}, wire.Errorf(wire.ErrBindingRefused, "the installation was removed")
	}
	cfg, err := o.runner.OpenConfig(sc, &a)
	if err != nil {
		return pageCall{}, wire.Errorf(wire.ErrInternal, "the installation's config could not be opened")
	}
	return pageCall{
		Scope: sc, Binding: a.Binding, Settings: o.settings.get(sc, a.Binding, cfg),
		Operator: operator, Inactive: a.State != bus.StateActive, Origin: origin{Kind: originConsole},
	}, nil
}

// ConsoleDo runs one HTTP console operation for a verified token's scope
// and operator; errors are *wire.Error. Actions write the audit line.
func (o *ops) ConsoleDo(ctx context.Context, c console.Call) (any, error) {
	req, err := parsePageRequest(c.Method, c.Endpoint, c.Params, c.Image, c.File)
	if err != nil {
		return nil, wireError(err)
	}
	pc, err := o.consoleCall(ctx, c.Scope, c.Operator)
	if err != nil {
		return nil, err
	}
	if req.Op == opBlob {
		// the bytes as they are, with no data URL between
		data, mime, err := o.blobBytes(ctx, pc, req)
		if err != nil {
			return nil, wireError(err)
		}
		return console.Blob{Mime: mime, Data: data}, nil
	}
	data, err := o.do(ctx, pc, req)
	if req.Op.IsAction() {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		o.audit(ctx, pc, req, outcome)
	}
	if err != nil {
		return nil, wireError(err)
	}
	return data, nil
}

// ConsoleCheck reports whether the scope is served: 503 while the service
// is not ready (starting or stopped, so live streams end with it), 403 for
// an unknown or removed scope.
func (o *ops) ConsoleCheck(sc binding.Scope) error {
	if !o.runner.Ready() {
		return wire.WithReason(wire.ErrUnavailable, reasonNotReady, "takeover service: not ready (starting or stopping), retry later")
	}
	a, ok := o.runner.View().Lookup(sc)
	if !ok {
		return wire.Errorf(wire.ErrBindingRefused, "the installation is unknown")
	}
	if a.State == bus.StateRemoved {
		return wire.Errorf(wire.ErrBindingRefused, "the installation was removed")
	}
	return nil
}

// ConsoleSubscribe delivers the scope's live subject to f until stop.
func (o *ops) ConsoleSubscribe(sc binding.Scope, f func([]byte)) (func(), error) {
	subject, err := o.subj.Internal(Plugin, store.KindLive, sc)
	if err != nil {
		return nil, err
	}
	sub, err := o.nc.Subscribe(subject, func(m *nats.Msg) { f(m.Data) })
	if err != nil {
		return nil, err
	}
	// the server knows the interest before the first event is promised
	_ = o.nc.FlushTimeout(2 * time.Second)
	return func() { _ = sub.Unsubscribe() }, nil
}
