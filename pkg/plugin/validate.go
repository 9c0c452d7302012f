package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

// ErrDeclaration is wrapped by Validate for every problem it finds.
var ErrDeclaration = errors.New("plugin: invalid declaration")

// FormTypes are the LangBot config form types a declaration may use (the
// plain ones of LangBot's dynamic form; its model, knowledge-base and bot
// selectors are not used by these plugins).
var FormTypes = [...]string{"integer", "float", "boolean", "string", "text", "array[string]", "select", "file", "array[file]"}

// SecretMarkers are the key-name parts that make LangBot mask a config
// value in its UI and restore it on save.
var SecretMarkers = [...]string{"token", "secret", "password"}

// Events are the LangBot events a declaration may listen to: the ones a
// forwarder knows how to map onto the event endpoint.
var Events = [...]string{"PersonMessageReceived", "GroupMessageReceived", "NormalMessageResponded", "MessageReceived"}

// OptionalEvents are the Events only newer LangBot SDKs raise (0.7's
// MessageReceived, which carries bot_uuid, chat_type and chat_id): a
// forwarder listens to them only where its SDK has them, so one package
// serves LangBot 4.10 and 4.11.
var OptionalEvents = [...]string{"MessageReceived"}

var (
	wireNameRE    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	packageNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	itemNameRE    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
)

// Validate reports every problem of d: names that LangBot or a subject
// cannot carry, duplicates, empty texts in either language, config types
// outside FormTypes, a secret item whose name LangBot would not mask (or
// a plain one it would), events outside Events, schemas that are not
// JSON objects, and texts that LangBot would show wrongly: with a
// {placeholder}, or naming one of the plugin's commands with a prefix
// (`!sche`), which is the bot's and not known when the package is built.
func (d Declaration) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	commands := d.CommandNames()
	text := func(what string, t Text) {
		for _, l := range [...]struct{ lang, s string }{{"en_US", t.EnUS}, {"zh_Hans", t.ZhHans}} {
			if strings.TrimSpace(l.s) == "" || strings.HasSuffix(l.s, ".label") || strings.HasSuffix(l.s, ".description") {
				bad("%s: %s text missing (%q)", what, l.lang, l.s)
			}
			// LangBot shows these texts as they are: it knows no
			// placeholder, and a prefix written here would be wrong for
			// every bot with another one (i18n.PrefixArg)
			if ph := i18n.Placeholders(l.s); len(ph) > 0 {
				bad("%s: %s text has placeholders %v, which LangBot shows verbatim", what, l.lang, ph)
			}
			if m := i18n.CommandMentions(l.s, commands...); len(m) > 0 {
				bad("%s: %s text names %s%s with a fixed prefix; name the command without one", what, l.lang, m[0].Prefix, m[0].Word)
			}
		}
	}
	if !wireNameRE.MatchString(d.Plugin) {
		bad("plugin %q: want %s", d.Plugin, wireNameRE)
	}
	for _, n := range [...]struct{ what, v string }{{"meta.name", d.Meta.Name}, {"original author", d.Meta.Original.Author}, {"original name", d.Meta.Original.Name}} {
		if !packageNameRE.MatchString(n.v) {
			bad("%s %q: want %s", n.what, n.v, packageNameRE)
		}
	}
	text("meta.label", d.Meta.Label)
	text("meta.description", d.Meta.Description)
	text("texts.unavailable", d.Texts.Unavailable)
	text("texts.failed", d.Texts.Failed)

	seen := map[string]bool{}
	unique := func(kind, name string) {
		if !itemNameRE.MatchString(name) {
			bad("%s %q: want %s", kind, name, itemNameRE)
		}
		if seen[kind+" "+name] {
			bad("%s %q declared twice", kind, name)
		}
		seen[kind+" "+name] = true
	}
	for _, c := range d.Commands {
		unique("command", c.Name)
		text("command "+c.Name+" label", c.Label)
		text("command "+c.Name+" description", c.Description)
	}
	for _, t := range d.Tools {
		unique("tool", t.Name)
		text("tool "+t.Name+" label", t.Label)
		text("tool "+t.Name+" description", t.Description)
		if strings.TrimSpace(t.LLMPrompt) == "" {
			bad("tool %s: empty llm_prompt", t.Name)
		}
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema["type"] != "object" {
			bad("tool %s: parameters must be a JSON Schema object", t.Name)
		}
	}
	for _, e := range d.Events {
		unique("event", e)
		if !inList(e, Events[:]) {
			bad("event %q: not one of %v", e, Events)
		}
	}
	if d.ObserveEvents && len(d.Events) == 0 {
		bad("observe_events without events")
	}
	if d.EventGate && (d.ObserveEvents || len(d.Events) == 0) {
		bad("event_gate needs events the service decides (no observe_events)")
	}
	for _, p := range d.Pages {
		unique("page", p.ID)
		text("page "+p.ID+" label", p.Label)
	}
	for _, c := range d.Config {
		unique("config", c.Name)
		text("config "+c.Name+" label", c.Label)
		text("config "+c.Name+" description", c.Description)
		if !inList(c.Type, FormTypes[:]) {
			bad("config %s: type %q is not a LangBot form type", c.Name, c.Type)
		}
		if masked := isMasked(c.Name); masked != c.Secret {
			bad("config %s: secret=%v but LangBot masks it=%v (a secret's name must contain one of %v)", c.Name, c.Secret, masked, SecretMarkers)
		}
		if c.Type == "select" {
			if len(c.Options) == 0 {
				bad("config %s: select without options", c.Name)
			}
			ok := false
			for _, o := range c.Options {
				text("config "+c.Name+" option "+o.Name, o.Label)
				ok = ok || o.Name == c.Default
			}
			if !ok {
				bad("config %s: default %v is not an option", c.Name, c.Default)
			}
		} else if len(c.Options) > 0 {
			bad("config %s: options on a %s", c.Name, c.Type)
		}
		if err := checkDefault(c); err != nil {
			bad("config %s: %w", c.Name, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s: %w", ErrDeclaration, d.Plugin, errors.Join(errs...))
	}
	return nil
}

func inList(s string, list []string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isMasked reports whether LangBot masks a config key of this name.
func isMasked(name string) bool {
	n := strings.ToLower(name)
	for _, m := range SecretMarkers {
		if strings.Contains(n, m) {
			return true
		}
	}
	return false
}

// checkDefault reports a default whose JSON type does not fit the item's
// form type.
func checkDefault(c ConfigItem) error {
	ok := false
	switch c.Type {
	case "integer":
		switch v := c.Default.(type) {
		case int, int64:
			ok = true
		case float64:
			ok = v == float64(int64(v))
		}
	case "float":
		switch c.Default.(type) {
		case int, int64, float64:
			ok = true
		}
	case "boolean":
		_, ok = c.Default.(bool)
	case "string", "text", "select":
		_, ok = c.Default.(string)
	case "array[string]":
		_, ok = c.Default.([]string)
	case "file", "array[file]":
		ok = c.Default == nil
	}
	if !ok {
		return fmt.Errorf("default %#v does not fit type %s", c.Default, c.Type)
	}
	return nil
}
