package main

import (
	"encoding/json"

	"github.com/langbot-nats/plugins/services/takeover"
)

// takeoverService registers the takeover service with lbctl: lbctl dev runs
// it in process and sends every chat message to it as an event; the dev
// console (console_token.go) serves its console with a generated key.
func takeoverService() *devService {
	return withDevConsole(&devService{
		Plugin: takeover.Plugin,
		Build:  takeover.Build,
		Config: json.RawMessage(`{"takeover_timeout":600,"trigger_words":["human","人工"],"auto_takeover_on_trigger":true,` +
			`"user_notice_on_takeover":"A person will answer you shortly.","user_notice_on_release":"You are talking to the assistant again."}`),
		Events: true,
	})
}
