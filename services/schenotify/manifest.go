package schenotify

import (
	"encoding/json"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
)

// Tool parameter schemas (spec 3).
const (
	schemaEmpty    = `{"type":"object","properties":{}}`
	schemaSchedule = `{"type":"object","properties":{"message":{"type":"string"},"time_str":{"type":"string"},"delay":{"type":"string"},"recurrence":{"type":"string"},"until":{"type":"string"},"mentions":{"type":"array","items":{"type":"string"},"maxItems":10}},"required":["message"]}`
	schemaCancel   = `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`
	schemaSnooze   = `{"type":"object","properties":{"id":{"type":"string"},"delay":{"type":"string"},"time_str":{"type":"string"}}}`
	schemaEdit     = `{"type":"object","properties":{"id":{"type":"string"},"time_str":{"type":"string"},"message":{"type":"string"}},"required":["id"]}`
)

// The llm_prompt of each tool (English, as the host expects).
const (
	promptNow      = "Returns the current date and time in the installation's time zone: an RFC 3339 timestamp with offset, the IANA zone, the weekday and the local time. Call this first whenever the user's request involves a date or time, so that 'tomorrow', 'next Monday' or 'in the evening' are resolved against the real current time."
	promptSchedule = "Sets a reminder that the bot sends into this chat at the due time. Call get_current_time_str first. " +
		"Give 'message' (the text to send) and exactly one way to say when: " +
		"'time_str' for an absolute time, either 'YYYY-MM-DD HH:MM:SS' in the installation's time zone or RFC 3339 with an offset such as 2030-01-31T09:00:00+08:00 (use the offset when the user names a zone); " +
		"time_str also takes the user's own words in English or Chinese, read by fixed rules in the installation's zone: 'tomorrow 3pm', 'next friday 9:00', '12/24 8pm', 'tonight', '明天下午3点半', '下周一9点', '12月24日 20:00', and repeating ones such as 'every weekday 9am' or '每周一三五 9:00' (then leave recurrence empty); the result's text says what it was understood as, so tell the user; " +
		"or 'delay' for relative requests ('in 20 minutes'), a duration such as 30m, 2h15m, 1d12h or PT30M. " +
		"For repeating reminders add 'recurrence': a 5-field cron expression (minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5'), @hourly, @daily, @weekly, @monthly, @yearly, or '@every <duration>' (at least 1 minute); with a recurrence the start is optional, and 'until' (same forms as time_str) ends the series. " +
		"In a group, 'mentions' lists member ids to @-mention on delivery (at most 10; the creator is mentioned anyway unless the installation turned that off). " +
		"The chat and the user come from the session automatically: never pass them. The result has status, id, the due time and a text to paraphrase; on error it has code and text."
	promptList   = "Lists the reminders of this chat (only this chat's), soonest first, with id, due time, recurrence and state. The chat comes from the session automatically."
	promptSnooze = "Brings a reminder back later ('snooze', 'remind me again in 10 minutes'). Without 'id' it snoozes the reminder delivered last in this chat; with 'id' that reminder. Give 'delay' (a duration such as 10m, or words such as '10 minutes') or 'time_str' (any form schedule_notify takes, including 'tomorrow 9am'); with neither it is 10 minutes. A one-time reminder that still exists is moved; otherwise a one-time copy is set. The chat comes from the session automatically."
	promptEdit   = "Changes one reminder of this chat by id: 'time_str' for a new time (any form schedule_notify takes; a repeating rule such as 'every day 8am' replaces the reminder's rule), or 'message' for a new text, not both. The result's text says what the time was understood as."
	promptPause  = "Pauses a repeating reminder of this chat by id; nothing is sent until resume_notification. One-time reminders cannot be paused (cancel or edit them)."
	promptResume = "Resumes a repeating reminder of this chat paused with pause_notification, at its next occurrence from now (missed occurrences are skipped)."
	promptCancel = "Cancels one reminder of this chat by its id (six characters, as shown by list_notifications or in the scheduling result). The chat comes from the session automatically; an id of another chat is reported as not found."
)

// Declaration is what schenotify offers a host (spec 2, 3): the sche and
// dsche commands, eight tools and the installation config of Settings, with
// labels and descriptions in en_US and zh_Hans from the message catalogue
// (keys config.*, command.*, tool.*). The package builder and lbctl read it;
// nothing else declares these names.
func Declaration() (plugin.Declaration, error) {
	cat, err := LoadCatalog()
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
			Description: t("Reminders in chat: one-time and repeating, set by command or by the assistant, delivered on time in the chat's time zone.", "在聊天中设置一次性或重复提醒，可用命令或由助手设置，按时区准时送达。"),
			Original:    plugin.Identity{Author: "langbot-team", Name: "ScheNotify"},
			Repository:  "https://github.com/langbot-nats/plugins",
		},
		Config: []plugin.ConfigItem{
			cfg("language", "select", DefaultLanguage,
				plugin.Option{Name: i18n.EnUS, Label: t("English", "英文")},
				plugin.Option{Name: i18n.ZhHans, Label: t("Chinese (Simplified)", "简体中文")}),
			cfg("timezone", "string", ""),
			cfg("notify_prefix", "string", DefaultPrefix),
			cfg("max_reminders", "integer", DefaultMaxReminders),
			cfg("max_per_session", "integer", DefaultMaxPerSession),
			cfg("mention_creator", "boolean", true),
			plugin.CommandPrefixConfig(),
		},
		Commands: []plugin.Command{command(CommandSche), command(CommandDsche)},
		// a chat that refused a proactive reminder gets it on its next message
		Events: []string{EventPersonMessage, EventGroupMessage},
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
