package schenotify

import (
	"encoding/json"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
)

// Tool parameter schemas (spec 3).
const (
	schemaEmpty    = `{"type":"object","properties":{}}`
	schemaSchedule = `{"type":"object","properties":{"message":{"type":"string"},"time_str":{"type":"string"},"delay":{"type":"string"},"recurrence":{"type":"string"},"until":{"type":"string"},"mentions":{"type":"array","items":{"type":"string"},"maxItems":10},"ai":{"type":"boolean"}},"required":["message"]}`
	schemaCancel   = `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`
	schemaSnooze   = `{"type":"object","properties":{"id":{"type":"string"},"delay":{"type":"string"},"time_str":{"type":"string"}}}`
	schemaEdit     = `{"type":"object","properties":{"id":{"type":"string"},"time_str":{"type":"string"},"message":{"type":"string"}},"required":["id"]}`
)

// The llm_prompt of each tool (English, as the host expects). LangBot's
// runtime sends them with every chat message's event answer (the plugin's
// dump, lbpkg.RuntimeDump), so they say what the model needs once: the
// chat and the user come from the session (no schema has a field for
// them), and forms other tools share are given in schedule_notify's.
const (
	promptNow      = "The installation's current date, time, weekday and IANA zone (RFC 3339). Call it first for any date or time."
	promptSchedule = "Sets a reminder the bot sends here when due. Call get_current_time_str first. " +
		"Give 'message' and one way to say when: " +
		"'time_str': 'YYYY-MM-DD HH:MM:SS' in the installation's zone, RFC 3339 with an offset if the user names a zone, " +
		"or the user's words in English or Chinese ('tomorrow 3pm', '明天下午3点'), repeating ones too (" +
		"'每个工作日 9点' (China's workdays), '农历八月十五', 'last friday of every month'; then no recurrence), " +
		"with advance notice ('10 minutes before', '提前10分钟'); or 'delay': 30m, 2h15m. " +
		"Or 'recurrence': a 5-field cron, @daily etc. or '@every 2h' (>= 1m); the start is then optional. 'until' (as time_str) ends a series. " +
		"In a group, 'mentions': up to 10 member ids to @-mention. " +
		"'ai': true makes 'message' a request the AI answers when due. " +
		"Never pass the chat or user: they come from the session. Paraphrase the result's text."
	promptList   = "Lists this chat's reminders, soonest first."
	promptSnooze = "Brings a reminder back later (default 10 minutes); without 'id', the one delivered last here; 'delay' or 'time_str' as schedule_notify."
	promptEdit   = "Changes a reminder of this chat by id: 'time_str' (as schedule_notify; 'every day 8am' replaces its rule) or 'message', not both."
	promptPause  = "Pauses a repeating reminder of this chat by id until resume_notification."
	promptResume = "Resumes a reminder paused by pause_notification at its next occurrence."
	promptCancel = "Cancels a reminder of this chat by id."
)

// Declaration is what schenotify offers a host (spec 2, 3): the sche and
// dsche commands, eight tools and the installation config of Settings, with
// labels and descriptions in en_US and zh_Hans from the message catalogue
// (keys config.*, command.*, tool.*). The package builder and lbctl read it;
// nothing else declares these names.
func Declaration() (plugin.Declaration, error) {
	cat, err := Catalog()
	if err != nil {
		return plugin.Declaration{}, err
	}
	return declaration(cat), nil
}

func declaration(cat *i18n.Catalog) plugin.Declaration {
	t := func(en, zh string) plugin.Text { return plugin.Text{EnUS: en, ZhHans: zh} }
	cfg := func(name, typ string, def any, opts ...plugin.Option) plugin.ConfigItem {
		return plugin.ConfigItem{Name: name, Type: typ, Default: def, Options: opts,
			Label: plugin.TextFrom(cat, "config."+name+".label"), Description: plugin.TextFrom(cat, "config."+name+".description")}
	}
	command := func(name string) plugin.Command {
		return plugin.Command{Name: name, Label: plugin.TextFrom(cat, "command."+name+".label"), Description: plugin.TextFrom(cat, "command."+name+".description")}
	}
	tool := func(name, schema, prompt string) plugin.Tool {
		return plugin.Tool{Name: name, Label: plugin.TextFrom(cat, "tool."+name+".label"), Description: plugin.TextFrom(cat, "tool."+name+".description"),
			Parameters: json.RawMessage(schema), LLMPrompt: prompt}
	}
	return plugin.Declaration{
		Plugin: Plugin,
		Meta: plugin.Meta{
			Name:        "ScheNotify",
			Label:       t("ScheNotify", "日程提醒"),
			Description: t("One-time and repeating reminders in chat.", "聊天中的一次性和重复提醒。"),
			Original:    plugin.Identity{Author: "langbot-team", Name: "ScheNotify"},
			Repository:  "https://github.com/langbot-nats/plugins",
		},
		Config: []plugin.ConfigItem{
			cfg("language", "select", defaultLanguage,
				plugin.Option{Name: i18n.EnUS, Label: t("English", "英文")},
				plugin.Option{Name: i18n.ZhHans, Label: t("Chinese (Simplified)", "简体中文")}),
			cfg("timezone", "string", ""),
			cfg("notify_prefix", "string", defaultPrefix),
			cfg("max_reminders", "integer", defaultMaxReminders),
			cfg("max_per_session", "integer", defaultMaxPerSession),
			cfg("mention_creator", "boolean", true),
			cfg("ai_calls_per_day", "integer", defaultAICallsPerDay),
			plugin.CommandPrefixConfig(),
		},
		Commands: []plugin.Command{command(CommandSche), command(CommandDsche)},
		// a chat that refused a proactive reminder gets it on its next message
		Events: []string{EventPersonMessage, EventGroupMessage},
		// reminders never block a message (handleEvent)
		ObserveEvents: true,
		Tools: []plugin.Tool{
			tool(ToolNow, schemaEmpty, promptNow),
			tool(ToolSchedule, schemaSchedule, promptSchedule),
			tool(ToolList, schemaEmpty, promptList),
			tool(ToolCancel, schemaCancel, promptCancel),
			tool(ToolSnooze, schemaSnooze, promptSnooze),
			tool(ToolEdit, schemaEdit, promptEdit),
			tool(ToolPause, schemaCancel, promptPause),
			tool(ToolResume, schemaCancel, promptResume),
		},
		Texts: plugin.Texts{
			Unavailable: plugin.TextFrom(cat, "err.unavailable"),
			Failed:      t("The reminder service could not handle this command.", "提醒服务无法处理此命令。"),
		},
	}
}
