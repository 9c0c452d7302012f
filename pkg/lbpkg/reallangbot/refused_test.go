package reallangbot_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/langbot-nats/plugins/pkg/lbpkg/reallangbot"
	"github.com/langbot-nats/plugins/services/schenotify"
)

// unloadableAdapter is an adapter name LangBot 4.10.8 does not have: a bot
// saved with it cannot be loaded.
const unloadableAdapter = "reallangbot-no-such-adapter"

// refusedConfigSave is the scenario "a config save while a reminder is
// pending and while its sends are being refused: the reminder is still
// delivered, once".
//
// The refusal is LangBot's own answer to the plugin's send_message. A bot
// saved with an adapter LangBot cannot load keeps its database row but
// leaves the running bot manager: the bot save stores the row, removes the
// running bot, then loads it from the row (LangBot
// src/langbot/pkg/api/http/service/bot.py:167, 174, 179), and the load
// raises before it registers anything (src/langbot/pkg/platform/botmgr.py:973-974;
// registration is at 1007, removal at 1086-1088). A send_message to that bot
// passes the row check (src/langbot/pkg/plugin/handler.py:768-776) and is
// answered "Bot with bot_uuid ... not found" (handler.py:781-788), which
// the package answers 404 (pkg/lbpkg/pycore/langbot_nats/forwarder.py,
// "not found") and ScheNotify retries (schenotify.Refusal: a 404 is not
// permanent). Saving the bot back with its adapter ends the refusal.
//
// What does not refuse: disabling the bot. A disabled bot is loaded and
// registered like an enabled one (botmgr.py:1007 whatever its enable flag),
// and the embed bot's fresh adapter answers a send with success and
// drops it (src/langbot/pkg/platform/sources/web_page_bot_adapter.py:45-47).
// That is also why the refusal's end needs care: the restored bot's new
// adapter delivers nothing until a user message of the web chat wires it
// to the WebSocket (src/langbot/pkg/platform/sources/websocket_adapter.py:721-722).
// Both were seen on this LangBot: a reminder due while the bot was
// disabled, and one retried after the bot was saved back but before the
// user's next message, were "delivered" (LangBot answered success) and
// never reached the chat. And a user message while the bot is gone
// closes the chat ("Bot is unavailable",
// src/langbot/pkg/api/http/controller/groups/pipelines/embed.py:451-455).
// So the user stays quiet while the bot is gone, and NATS is stopped from
// the bot's restore until the user's next message has its answer: no
// retry can reach LangBot in between, where LangBot would lose it.
func (w *world) refusedConfigSave(t *testing.T, ctx context.Context, user *reallangbot.Chat) {
	const text = "pending-refused"
	handled := w.delivered()
	retried := w.deliveries(t, "retry")
	// 8 s: the bot's save below lands well before the first attempt,
	// even on a loaded machine.
	say(t, ctx, user, "!sche add in 8s "+text, text)

	// Refused from here: LangBot stores the row and fails the load.
	err := w.lb.SaveBot(ctx, w.setup.Bot, map[string]any{"adapter": unloadableAdapter})
	var apiErr *reallangbot.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("saving the bot with an adapter LangBot lacks: %v, want LangBot's error", err)
	}
	// NATS comes back whatever happens below (the services stop at the
	// test's end through it).
	natsDown := false
	t.Cleanup(func() {
		if natsDown {
			w.srv.Restart(t)
		}
	})

	waitUntil(t, ctx, "a send of "+text+" refused by LangBot (404)", func() bool { return w.refusedSends(text, 0, 404) > 0 })
	saved := w.revision(schenotify.Plugin)
	w.saveConfig(t, ctx, schenotify.Plugin, map[string]any{"notify_prefix": notify, "timezone": "UTC", "max_reminders": 98})
	rev := w.revision(schenotify.Plugin)
	t.Logf("config saved while refused: revision %d -> %d", saved, rev)
	// The retry goes on under the new revision's binding (D2), and LangBot
	// still refuses it.
	waitUntil(t, ctx, fmt.Sprintf("a send of %s under revision %d refused by LangBot", text, rev), func() bool { return w.refusedSends(text, rev, 404) > 0 })
	// The service's own count: that attempt's outcome written (retry), so
	// no attempt is half done when NATS stops below.
	settled := w.deliveries(t, "retry")
	waitUntil(t, ctx, "ScheNotify recording the refused attempt", func() bool { return w.deliveries(t, "retry") > settled })
	if got := w.deliveries(t, "retry") - retried; got < 2 {
		t.Fatalf("ScheNotify counted %v retried deliveries, want at least 2 (before and after the save)", got)
	}
	if got := user.Count(notify + text); got != 0 {
		t.Fatalf("the reminder reached the chat %d times while LangBot refused its sends", got)
	}
	t.Logf("refused sends: %d before the save, %d under revision %d", w.refusedSends(text, 0, 404)-w.refusedSends(text, rev, 404), w.refusedSends(text, rev, 404), rev)

	// The refusal ends: the bot saved back, its adapter wired by the
	// user's next message, with no retry in between.
	w.srv.Stop()
	natsDown = true
	if err := w.lb.SaveBot(ctx, w.setup.Bot, map[string]any{"adapter": "web_page_bot"}); err != nil {
		t.Fatalf("saving the bot back with its adapter: %v", err)
	}
	say(t, ctx, user, "is the bot back?", "fake-llm answer")
	w.srv.Restart(t)
	natsDown = false
	if got := user.Count(notify + text); got != 0 {
		t.Fatalf("the reminder reached the chat %d times before the refusal ended", got)
	}
	w.deliveredOnce(ctx, t, user, text, handled)
}
