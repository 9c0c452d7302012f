package githubkit

import (
	"encoding/json"

	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// Declaration is what githubkit offers a host (spec §2, §3, §4): the gh
// command, three read-only tools, and the installation config of
// Settings with its defaults and bounds. The package builder and lbctl
// read it; nothing else declares these names.
func Declaration() plugin.Declaration {
	t := func(en, zh string) plugin.Text { return plugin.Text{EnUS: en, ZhHans: zh} }
	return plugin.Declaration{
		Plugin: Plugin,
		Meta: plugin.Meta{
			Name:        "GitHubKit",
			Label:       t("GitHubKit", "GitHub 工具箱"),
			Description: t("GitHub in chat: repositories, issues, pull requests, releases, users and search, plus activity pushed into subscribed chats.", "在聊天中查询 GitHub 仓库、Issue、PR、发布、用户和搜索，并把订阅仓库的动态推送到群聊或私聊。"),
			Original:    plugin.Identity{Author: "RockChinQ", Name: "GitHubKit"},
			Repository:  "https://github.com/langbot-nats/plugins",
		},
		Events: []string{eventPersonMessage, EventGroupMessage},
		// link cards are sent after the event is answered (handleEvent)
		ObserveEvents: true,
		Commands: []plugin.Command{{
			Name:        CommandWord,
			Label:       t("GitHub", "GitHub"),
			Description: t("GitHub queries and activity subscriptions: gh help, after the bot's command prefix, lists the subcommands.", "GitHub 查询与动态订阅：在机器人的命令前缀后输入 gh help 列出全部子命令。"),
		}},
		Tools: []plugin.Tool{
			{
				Name:        ToolRepo,
				Label:       t("GitHub repository", "GitHub 仓库"),
				Description: t("Looks up one GitHub repository.", "查询一个 GitHub 仓库。"),
				LLMPrompt: "Look up one public (or token-visible) GitHub repository: description, stars, forks, watchers, " +
					"open issues, language, licence, default branch, topics and dates. Read-only; GitHub may rate-limit it, " +
					"in which case the result is an error with retry_after_s.",
				Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["repo"],` +
					`"properties":{"repo":{"type":"string","description":"owner/repo or a GitHub repository URL"}}}`),
			},
			{
				Name:        ToolIssue,
				Label:       t("GitHub issue or pull request", "GitHub Issue 或 PR"),
				Description: t("Reads one GitHub issue or pull request by number.", "按编号读取一个 GitHub Issue 或 PR。"),
				LLMPrompt: "Read one GitHub issue or pull request by number: kind, state (open, closed or merged), title, " +
					"author, labels, comment count, dates and the start of its body. Read-only; GitHub may rate-limit it.",
				Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["repo","number"],` +
					`"properties":{"repo":{"type":"string","description":"owner/repo or a GitHub repository URL"},` +
					`"number":{"type":"integer","minimum":1,"description":"issue or pull request number"}}}`),
			},
			{
				Name:        ToolSearch,
				Label:       t("GitHub search", "GitHub 搜索"),
				Description: t("Searches GitHub repositories, most stars first.", "搜索 GitHub 仓库，按星标数排序。"),
				LLMPrompt: "Search GitHub repositories, most stars first, and return up to limit results with name, " +
					"description, stars, language and link. Read-only; GitHub's search API has a low rate limit.",
				Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["query"],` +
					`"properties":{"query":{"type":"string","minLength":1,"maxLength":256,"description":"GitHub search syntax, e.g. 'nats language:go'"},` +
					`"limit":{"type":"integer","minimum":1,"maximum":10,"default":5}}}`),
			},
		},
		Config: []plugin.ConfigItem{
			{
				Name: "language", Type: "select", Default: defaultLanguage,
				Options: []plugin.Option{
					{Name: i18n.EnUS, Label: t("English", "英文")},
					{Name: i18n.ZhHans, Label: t("Chinese (Simplified)", "简体中文")},
				},
				Label:       t("Language", "语言"),
				Description: t("Language of command replies and pushed activity.", "命令回复和推送消息使用的语言。"),
			},
			{
				Name: "github_token", Type: "string", Default: "", Secret: true,
				Label:       t("GitHub token", "GitHub 令牌"),
				Description: t("Optional. Raises GitHub's rate limit from 60 to 5000 requests an hour and gives access to private repositories the token can see. Stored encrypted.", "可选。把 GitHub 的速率限制从每小时 60 次提高到 5000 次，并能访问令牌可见的私有仓库。加密保存。"),
			},
			{
				Name: "poll_interval", Type: "integer", Default: defaultPollInterval,
				Label:       t("Poll interval (seconds)", "轮询间隔（秒）"),
				Description: t("How often subscribed repositories are checked for new activity, between 60 and 3600 seconds.", "检查订阅仓库新动态的间隔，60 到 3600 秒。"),
			},
			{
				Name: "max_events_per_push", Type: "integer", Default: defaultMaxEventsPerPush,
				Label:       t("Events per push", "每次推送的事件数"),
				Description: t("Most events one push message lists, between 1 and 30.", "一条推送消息最多列出的事件数，1 到 30。"),
			},
			{
				Name: "github_api_url", Type: "string", Default: ghclient.DefaultAPIURL,
				Label:       t("GitHub API URL", "GitHub API 地址"),
				Description: t("The API root, https only. For GitHub Enterprise Server give e.g. https://ghe.example.com/api/v3.", "API 根地址，仅限 https。GitHub Enterprise Server 请填写如 https://ghe.example.com/api/v3。"),
			},
			{
				Name: "subscribe_requires_admin", Type: "boolean", Default: false,
				Label:       t("Only admins change subscriptions", "仅管理员可修改订阅"),
				Description: t("When on, only bot admins may use sub and unsub.", "开启后，只有机器人管理员可以使用 sub 和 unsub。"),
			},
			{
				Name: "link_cards", Type: "boolean", Default: true,
				Label:       t("Link cards", "链接卡片"),
				Description: t("When on, a GitHub repository, issue, pull request, release or commit link posted in a chat gets a short card. Admins can turn it off in one chat with the gh cards off command.", "开启后，聊天中出现的 GitHub 仓库、议题、拉取请求、发布或提交链接会收到一张简短卡片。管理员可以用 gh cards off 命令在单个会话中关闭。"),
			},
			{
				Name: "timezone", Type: "string", Default: "UTC",
				Label:       t("Time zone", "时区"),
				Description: t("IANA time zone of the installation, e.g. Asia/Shanghai: the gh quiet hours are read in it. Unknown zones fall back to UTC.", "安装所在的 IANA 时区，例如 Asia/Shanghai：gh quiet 的免打扰时段按此时区理解。无法识别的时区按 UTC 处理。"),
			},
			{
				Name: "ai_summaries_per_day", Type: "integer", Default: defaultAISummariesPerDay,
				Label:       t("AI summaries per day", "每日 AI 总结次数"),
				Description: t("How many gh summary requests the installation may make a day (asks the bot's LLM); 0 turns it off.", "本安装每天可用 gh summary 的次数（调用机器人的大模型）；0 为关闭。"),
			},
			plugin.CommandPrefixConfig(),
		},
		Texts: plugin.Texts{
			Unavailable: t("GitHubKit is temporarily unavailable. Please try again shortly.", "GitHubKit 暂时不可用，请稍后再试。"),
			Failed:      t("GitHubKit could not handle this command.", "GitHubKit 无法处理此命令。"),
		},
	}
}
