// Package plugin is what a plugin offers a host, declared once in Go: its
// package metadata and marketplace identity, its commands, tools, the
// events it listens to, its pages, its installation config items and the
// few texts a host-side forwarder shows on its behalf.
//
// Each service exports one function returning its Declaration, built from
// the constants, settings and message catalogue the service already has;
// the LangBot package builder (pkg/lbpkg) and lbctl read nothing else, so
// adding a tool to a service and rebuilding its package is the whole change.
//
// It also decides which command prefix a text names commands with
// (prefix.go): the user's, the installation's command_prefix, or `!`.
//
// The package imports only the standard library, pkg/i18n (language
// codes, the prefix check) and pkg/settings (the command_prefix rule);
// services import it, never the other way round.
package plugin

import (
	"encoding/json"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

// Text is one text in both languages every declaration is written in.
// It marshals as LangBot's i18n object {"en_US": ..., "zh_Hans": ...}.
type Text struct {
	EnUS   string `json:"en_US"`
	ZhHans string `json:"zh_Hans"`
}

// In returns the text in lang, falling back to en_US.
func (t Text) In(lang string) string {
	if lang == i18n.ZhHans && t.ZhHans != "" {
		return t.ZhHans
	}
	return t.EnUS
}

// TextFrom looks key up in both languages of a catalogue; a missing key
// comes back as the key itself (i18n's fallback), which Validate refuses.
func TextFrom(cat *i18n.Catalog, key string) Text {
	return Text{EnUS: cat.Text(i18n.EnUS, key, nil), ZhHans: cat.Text(i18n.ZhHans, key, nil)}
}

// Identity is a package's marketplace identity: LangBot keys an
// installation by (workspace, author, name).
type Identity struct {
	Author string `json:"author"`
	Name   string `json:"name"`
}

// Meta is the package metadata of a plugin.
type Meta struct {
	// Name is the package name LangBot shows and keys on ("GitHubKit").
	Name        string `json:"name"`
	Label       Text   `json:"label"`
	Description Text   `json:"description"`
	// Original is the marketplace identity of the Python plugin the
	// service replaces: a package built under it replaces an installed
	// original and keeps its installation uuid.
	Original Identity `json:"original"`
	// Repository is the project's URL, shown by LangBot.
	Repository string `json:"repository,omitempty"`
}

// Command is a chat command. Name is matched exactly and case-sensitively
// by LangBot ("gh" never receives "!GH").
type Command struct {
	Name        string `json:"name"`
	Label       Text   `json:"label"`
	Description Text   `json:"description"`
}

// Tool is an LLM tool: LLMPrompt is what the model reads, so it says
// honestly what the tool does and costs; Parameters is a JSON Schema.
type Tool struct {
	Name        string          `json:"name"`
	Label       Text            `json:"label"`
	Description Text            `json:"description"`
	LLMPrompt   string          `json:"llm_prompt"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Page is a page the plugin serves in the host's UI. ID is the page id
// page calls carry. HTML is the page itself, one self-contained document
// (the host loads it from a blob: URL, so nothing relative resolves); nil
// gives a placeholder. It is not part of the JSON form of the declaration.
type Page struct {
	ID    string `json:"id"`
	Label Text   `json:"label"`
	HTML  []byte `json:"-"`
}

// Option is one choice of a select config item.
type Option struct {
	Name  string `json:"name"`
	Label Text   `json:"label"`
}

// ConfigItem is one field of the installation config form.
type ConfigItem struct {
	Name string `json:"name"`
	// Type is one of LangBot's form types (FormTypes).
	Type        string   `json:"type"`
	Default     any      `json:"default"`
	Required    bool     `json:"required"`
	Options     []Option `json:"options,omitempty"`
	Label       Text     `json:"label"`
	Description Text     `json:"description"`
	// Secret marks a value LangBot must mask; its Name must contain one of
	// SecretMarkers, since LangBot masks by key name.
	Secret bool `json:"secret,omitempty"`
}

// Texts are what a host-side forwarder says on the plugin's behalf when
// the service cannot answer.
type Texts struct {
	// Unavailable is the one line a command answers when NATS or the
	// service is unavailable or too slow.
	Unavailable Text `json:"unavailable"`
	// Failed is the line a command answers when the service refused or
	// failed the request; the error code follows it.
	Failed Text `json:"failed"`
}

// Declaration is everything a plugin offers a host.
type Declaration struct {
	// Plugin is the wire name of the plugin: the <plugin> token of its
	// subjects and the "plugin" field of its host actions ("githubkit").
	Plugin   string    `json:"plugin"`
	Meta     Meta      `json:"meta"`
	Commands []Command `json:"commands"`
	Tools    []Tool    `json:"tools"`
	Events   []string  `json:"events"`
	// ObserveEvents says the service only observes its Events: its event
	// reply is always empty (no prevent flag, no reply chain), so a host
	// may forward an event without making the chat wait for the answer,
	// and ignores the answer. A service that decides (blocks a message,
	// replaces a reply) leaves it false.
	ObserveEvents bool `json:"observe_events,omitempty"`
	// EventGate says the service answers an event's WantGate with a
	// wire.EventGate, so a host may let most events pass without waiting
	// for a decision (takeover: every chat no human watches).
	EventGate bool         `json:"event_gate,omitempty"`
	Pages     []Page       `json:"pages"`
	Config    []ConfigItem `json:"config"`
	Texts     Texts        `json:"texts"`
}

// ConfigItem returns the config item called name.
func (d Declaration) ConfigItem(name string) (ConfigItem, bool) {
	for _, c := range d.Config {
		if c.Name == name {
			return c, true
		}
	}
	return ConfigItem{}, false
}

// SecretFields lists the names of the secret config items, in order.
func (d Declaration) SecretFields() []string {
	var out []string
	for _, c := range d.Config {
		if c.Secret {
			out = append(out, c.Name)
		}
	}
	return out
}

// CommandNames lists the command names, in order.
func (d Declaration) CommandNames() []string {
	out := make([]string, 0, len(d.Commands))
	for _, c := range d.Commands {
		out = append(out, c.Name)
	}
	return out
}
