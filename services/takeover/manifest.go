package takeover

import (
	"encoding/json"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/services/takeover/console"
	"github.com/langbot-nats/plugins/services/takeover/model"
)

// Declaration is what takeover offers a host (spec §2, §3.1, §7): the
// three events it listens to, the console page, and the installation
// config of Settings with its defaults, with labels and descriptions from
// the message catalogue (config.<field>.label|description). The package
// builder and lbctl read it; nothing else declares these names.
func Declaration() (plugin.Declaration, error) {
	cat, err := Catalog()
	if err != nil {
		return plugin.Declaration{}, err
	}
	d := declaration(cat)
	// the console page is built from the standalone console's sources
	html, err := console.PageHTML()
	if err != nil {
		return plugin.Declaration{}, err
	}
	for i := range d.Pages {
		if d.Pages[i].ID == ConsolePageID {
			d.Pages[i].HTML = html
		}
	}
	return d, nil
}

func declaration(cat *i18n.Catalog) plugin.Declaration {
	t := func(en, zh string) plugin.Text { return plugin.Text{EnUS: en, ZhHans: zh} }
	def := model.DefaultSettings()
	cfg := func(name, typ string, dflt any, opts ...plugin.Option) plugin.ConfigItem {
		return plugin.ConfigItem{Name: name, Type: typ, Default: dflt, Options: opts,
			Label: plugin.TextFrom(cat, "config."+name+".label"), Description: plugin.TextFrom(cat, "config."+name+".description")}
	}
	return plugin.Declaration{
		Plugin: Plugin,
		Meta: plugin.Meta{
			Name:        "HumanTakeover",
			Label:       t("Human Takeover", "人工接管"),
			Description: t("Hands a chat from the AI to a human operator and back.", "在 AI 与人工客服之间转交会话。"),
			Original:    plugin.Identity{Author: "langbot-team", Name: "HumanTakeover"},
			Repository:  "https://github.com/langbot-nats/plugins",
		},
		Events:    decidedEvents(),
		EventGate: true,
		Pages:     []plugin.Page{{ID: ConsolePageID, Label: t("Human Takeover", "人工接管")}},
		Config: []plugin.ConfigItem{
			cfg("takeover_timeout", "integer", def.TakeoverTimeout),
			cfg("trigger_words", "array[string]", def.TriggerWords),
			cfg("auto_takeover_on_trigger", "boolean", def.AutoTakeoverOnTrigger),
			cfg("trigger_match", "select", def.TriggerMatch,
				plugin.Option{Name: model.MatchSubstring, Label: t("Substring", "子串")},
				plugin.Option{Name: model.MatchWord, Label: t("Whole word", "整词")}),
			cfg("trigger_case_sensitive", "boolean", def.TriggerCaseSensitive),
			cfg("takeover_on_reply", "boolean", def.TakeoverOnReply),
			cfg("history_limit", "integer", def.HistoryLimit),
			cfg("record_groups", "select", def.RecordGroups,
				plugin.Option{Name: model.RecordAll, Label: t("All", "全部")},
				plugin.Option{Name: model.RecordAddressed, Label: t("Addressed", "相关")},
				plugin.Option{Name: model.RecordActiveOnly, Label: t("Needing a human", "需人工")}),
			cfg("user_notice_on_takeover", "text", def.NoticeOnTakeover),
			cfg("user_notice_on_release", "text", def.NoticeOnRelease),
			cfg("operator_chats", "array[string]", []string{}),
			cfg("language", "select", def.Language,
				plugin.Option{Name: model.LanguageEnUS, Label: t("English", "英语")},
				plugin.Option{Name: model.LanguageZhHans, Label: t("Chinese", "中文")}),
			plugin.CommandPrefixConfig(),
			// satisfaction and AI assist
			cfg("satisfaction_survey", "boolean", def.SatisfactionSurvey),
			cfg("satisfaction_window", "integer", def.SatisfactionWindow),
			cfg("ai_assist", "boolean", def.AIAssist),
			cfg("ai_calls_per_day", "integer", def.AICallsPerDay),
			// escalation (model.Escalation): off by default but the cancel words
			cfg("escalate_after", "integer", def.EscalateAfter),
			cfg("escalate_fallback_chats", "array[string]", []string{}),
			cfg("queue_notice", "boolean", def.QueueNotice),
			cfg("working_hours", "string", def.WorkingHours),
			cfg("timezone", "string", def.Timezone),
			cfg("out_of_hours_reply", "text", def.OutOfHoursReply),
			cfg("cancel_words", "array[string]", def.CancelWords),
			cfg("operator_idle_return", "integer", def.OperatorIdle),
		},
		Commands: []plugin.Command{{Name: commandWord,
			Label: plugin.TextFrom(cat, "command.ho.label"), Description: plugin.TextFrom(cat, "command.ho.description")}},
		Tools: []plugin.Tool{{Name: toolRequestHuman,
			Label: plugin.TextFrom(cat, "tool.request_human.label"), Description: plugin.TextFrom(cat, "tool.request_human.description"),
			LLMPrompt:  "Hand the chat to a human operator when you cannot help: the user asks for a person, needs a decision or access you lack, or is upset. It marks the chat waiting and alerts the operators; it does not stop you from answering, and a human may take a while. Call it once per request. Then tell the user the result's say_to_user, in their language.",
			Parameters: json.RawMessage(requestHumanSchema)}},
		Texts: plugin.Texts{
			// what the package says when the service does not answer it:
			// the component is the service or NATS, not storage
			Unavailable: plugin.TextFrom(cat, "error.no_service"),
			Failed:      plugin.TextFrom(cat, "error.internal"),
		},
	}
}
