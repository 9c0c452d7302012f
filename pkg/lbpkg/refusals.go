package lbpkg

import (
	"github.com/langbot-nats/plugins/pkg/wire"
)

// refusalPhrases maps each permanent-refusal reason of send_message
// (pkg/bus Refusal*) to lower-case phrases found in the exception text a
// LangBot 4.10 adapter raises when its platform refuses a proactive
// message. LangBot passes an adapter's refusal to the runtime only as that
// text, so the packages' host-action server matches it (pycore
// forwarder._call_runtime) and answers 400 with the reason; anything else
// stays 500 and is retried.
//
// Sources, in LangBot's src/langbot/pkg/platform/sources: wecomcs.py
// (send_message to a group), telegram.py and discord.py (the client
// libraries' Forbidden texts), slack.py (Web API error codes), lark.py
// (open-platform codes in the text), and the WeChat official-account
// customer-service codes 45015/45047 (response window and count).
// Adapters that accept a proactive send and drop it (officialaccount.py
// and qqofficial.py define send_message as a no-op) cannot be detected here.
func refusalPhrases() map[string][]string {
	return map[string][]string{
		wire.RefusalUnsupportedTarget: {
			"only supports sending messages to person targets",
			"does not support proactive",
			"proactive message is not supported",
			"not supported for this target",
		},
		wire.RefusalOutsideReplyWindow: {
			"45015", "response out of time limit",
			"45047", "out of response count limit",
			"reply window",
		},
		wire.RefusalNotPermitted: {
			"bot was blocked by the user", "bot was kicked", "not enough rights",
			"have no rights to send", "user is deactivated",
			"cannot send messages to this user", "missing permissions",
			"not_in_channel", "is_archived", "restricted_action",
			"bot is not in the chat", "230002",
		},
	}
}
