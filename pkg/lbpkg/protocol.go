package lbpkg

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// GeneratedFile is the file of each package in which the builder writes
// the protocol constants (taken from pkg/bus) and the plugin's
// declaration as the forwarding core reads them, so the Python side types
// no subject, header or name of its own.
const GeneratedFile = "langbot_nats/generated.json"

// Timeouts of the forwarder, each below LangBot's own (spec 4).
const (
	CommandTimeout = 30 * time.Second
	ToolTimeout    = 60 * time.Second
	PageTimeout    = 20 * time.Second
	EventTimeout   = 3 * time.Second
	// HostCallTimeout bounds one runtime call of a host action; the
	// service's own host timeout is wire.DefaultHostTimeout.
	HostCallTimeout = 12 * time.Second
	// LLMCallTimeout caps one runtime call of invoke_llm (a model may
	// answer slowly); the service's own deadline, sent as timeout_ms,
	// shortens it. LangBot's SDK default is 120 s.
	LLMCallTimeout = 110 * time.Second
	// AttachRefresh is how often a worker republishes its attach, so a
	// live installation is never taken for gone by a retention rule.
	AttachRefresh = time.Hour
	// ConnectGrace is how long a call waits for a worker's first
	// connection before it answers "unavailable": NATS down at start must
	// not hold a chat command for its whole timeout.
	ConnectGrace = 2 * time.Second
	// AttachBackoffMax caps the retry backoff of an unacknowledged attach.
	AttachBackoffMax = 30 * time.Second
)

// IdempotencyKeys bounds the host-action server's record of idempotency
// keys already sent.
const IdempotencyKeys = 4096

// Placeholders the templates are built with; each is a valid token, so
// the real pkg/bus functions build the subjects, and is then replaced by
// a Python format field.
const (
	phPrefix   = "PHxPREFIX"
	phPlugin   = "phxplugin"
	phEndpoint = "PHxENDPOINT"
	phInst     = "PHxINSTANCE"
	phWS       = "PHxWORKSPACE"
	phInstall  = "PHxINSTALLATION"
	phAction   = "PHxACTION"
	phKind     = "PHxKIND"
	phUser     = "PHxUSER"
)

// protocol is the protocol part of the generated file.
type protocol struct {
	DefaultPrefix string            `json:"default_prefix"`
	Subjects      map[string]string `json:"subjects"`
	Endpoints     map[string]string `json:"endpoints"`
	Attach        string            `json:"attach_kind"`
	Stream        string            `json:"lifecycle_stream"`
	HostActions   []string          `json:"host_actions"`
	Headers       map[string]string `json:"headers"`
	ErrorWords    map[string]string `json:"error_words"`
	// BindingReasons: the reasons of 403 binding_refused on an
	// invocation, by name (not_attached: re-publish the attach).
	BindingReasons map[string]string `json:"binding_reasons"`
	Inbox          map[string]string `json:"inbox_prefix"`
	ScopeToken     string            `json:"scope_token_pattern"`
	// ConnName is the connection's client name: a claimable tenant
	// credential is bound to the instance it names (wire.PackageConnName).
	ConnName    string         `json:"connect_name"`
	AttachMsgID string         `json:"attach_msg_id"`
	ConfigKeys  []string       `json:"package_config_keys"`
	Timeouts    map[string]int `json:"timeouts_ms"`
	IdemKeys    int            `json:"idempotency_keys"`
	// Refusals: reason -> phrases of a platform's permanent refusal in
	// LangBot's exception text (refusals.go).
	Refusals map[string][]string `json:"refusals"`
	// LLMNoModel is the reason of the 404 invoke_llm answers when the
	// workspace has no LLM model.
	LLMNoModel string `json:"llm_no_model_reason"`
	// GateRevoke is the host-action token of an event gate's revocation
	// (wire.ActionGateRevoke), which the core serves itself.
	GateRevoke string `json:"gate_revoke_action"`
}

// template turns a subject built from placeholders into a Python format
// string.
func template(s string) string {
	return strings.NewReplacer(
		phPrefix, "{prefix}", phPlugin, "{plugin}", phEndpoint, "{endpoint}", phAction, "{action}", phKind, "{kind}",
		phInst+"."+phWS+"."+phInstall, "{scope}", phUser, "{user}",
	).Replace(s)
}

func buildProtocol(configKeys []string) (protocol, error) {
	sc, err := binding.NewScope(phInst, phWS, phInstall)
	if err != nil {
		return protocol{}, err
	}
	subj := wire.Subjects{Prefix: phPrefix}
	words := map[string]string{}
	for _, e := range []*wire.Error{wire.ErrBadRequest, wire.ErrBindingRefused, wire.ErrNotFound, wire.ErrConflict,
		wire.ErrTooLarge, wire.ErrRateLimited, wire.ErrInternal, wire.ErrUnavailable} {
		words[fmt.Sprint(e.Code)] = e.Word
	}
	reasons := map[string]string{}
	for _, r := range wire.BindingReasons() {
		reasons[r] = r
	}
	endpoints := map[string]string{}
	for _, ep := range wire.Endpoints {
		endpoints[string(ep)] = string(ep)
	}
	p := protocol{
		DefaultPrefix: wire.DefaultPrefix,
		Subjects: map[string]string{
			"invocation": template(subj.Invocation(phPlugin, wire.Endpoint(phEndpoint), sc)),
			"lifecycle":  template(subj.Lifecycle(phPlugin, phKind, sc)),
			"host":       template(subj.HostAction(phAction, sc)),
			// What a worker serves: every host action of its own scope.
			"host_serve": strings.Replace(template(subj.HostAction(phAction, sc)), "{action}", "*", 1),
		},
		Endpoints:   endpoints,
		Attach:      wire.LifecycleAttach,
		Stream:      wire.LifecycleStream,
		HostActions: []string{wire.ActionSendMessage, wire.ActionGetBotInfo, wire.ActionGetBots, wire.ActionInvokeLLM},
		Headers: map[string]string{
			"invocation_id":   wire.HeaderInvocationID,
			"idempotency_key": wire.HeaderIdempotencyKey,
			"service_error":   wire.HeaderServiceError,
			"service_code":    wire.HeaderServiceCode,
			"content_type":    wire.HeaderContentType,
			"msg_id":          "Nats-Msg-Id", // JetStream's duplicate-window header
			"traceparent":     "traceparent", // W3C trace context
		},
		ErrorWords:     words,
		BindingReasons: reasons,
		Inbox: map[string]string{
			"user":    template(wire.InboxPrefixFor(phUser)),
			"default": wire.InboxPrefixFor(""),
		},
		ScopeToken:  fmt.Sprintf(`^[A-Za-z0-9_-]{1,%d}$`, binding.MaxTokenLen),
		ConnName:    template(wire.PackageConnName(phPlugin, sc)),
		AttachMsgID: "{installation_uuid}.{runtime_revision}",
		ConfigKeys:  configKeys,
		Timeouts: map[string]int{
			"command": int(CommandTimeout.Milliseconds()), "tool": int(ToolTimeout.Milliseconds()),
			"page": int(PageTimeout.Milliseconds()), "event": int(EventTimeout.Milliseconds()),
			"host_call": int(HostCallTimeout.Milliseconds()), "llm_call": int(LLMCallTimeout.Milliseconds()), "attach_refresh": int(AttachRefresh.Milliseconds()),
			"attach_backoff_max": int(AttachBackoffMax.Milliseconds()), "connect_grace": int(ConnectGrace.Milliseconds()),
		},
		IdemKeys:   IdempotencyKeys,
		Refusals:   refusalPhrases(),
		LLMNoModel: wire.ReasonNoLLMModel,
		GateRevoke: wire.ActionGateRevoke,
	}
	return p, nil
}

// generated is the whole generated file.
type generated struct {
	Protocol protocol  `json:"protocol"`
	Plugin   genPlugin `json:"plugin"`
}

type genPlugin struct {
	Plugin   string   `json:"plugin"`
	Author   string   `json:"author"`
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	Commands []string `json:"commands"`
	Tools    []string `json:"tools"`
	Events   []string `json:"events"`
	// OptionalEvents are the declared events the listener registers only
	// when the runtime's SDK has them (plugin.OptionalEvents).
	OptionalEvents []string `json:"optional_events"`
	// ObserveEvents is plugin.Declaration.ObserveEvents: the core forwards
	// each event in the background and the listener returns at once.
	ObserveEvents bool `json:"observe_events"`
	// EventGate is plugin.Declaration.EventGate: the core asks the
	// service for a wire.EventGate and lets the events it covers pass at
	// once.
	EventGate       bool           `json:"event_gate"`
	Pages           []string       `json:"pages"`
	DefaultLanguage string         `json:"default_language"`
	Texts           map[string]any `json:"texts"`
	Secrets         []string       `json:"secret_config_keys"`
	// ConfigDefaults are the manifest defaults of every config item: LangBot
	// creates an installation with config {} and the SDK merges no default,
	// so the core fills in what is missing from here.
	ConfigDefaults map[string]any `json:"config_defaults"`
}

// NotConfigured is what every command, tool and page answers while the
// installation's package config cannot be used; the core
// fills {item}, {instance} and {workspace}, so the operator learns which
// setting to fix and which tenant asks (never a value).
var NotConfigured = plugin.Text{
	EnUS:   "Not configured: {item}. Open this plugin's settings in LangBot and fill it in (instance {instance}, workspace {workspace}).",
	ZhHans: "未配置：{item}。请在 LangBot 中打开本插件的设置并填写（实例 {instance}，工作区 {workspace}）。",
}

func (g generator) generated() ([]byte, error) {
	var pkgKeys []string
	for _, c := range PackageConfig() {
		pkgKeys = append(pkgKeys, c.Name)
	}
	p, err := buildProtocol(pkgKeys)
	if err != nil {
		return nil, err
	}
	lang := i18n.EnUS
	if c, ok := g.decl.ConfigItem("language"); ok {
		if s, ok := c.Default.(string); ok {
			lang = s
		}
	}
	gp := genPlugin{
		Plugin: g.decl.Plugin, Author: g.author, Name: g.name, Version: g.version,
		Commands: g.decl.CommandNames(), Tools: []string{}, Events: append([]string{}, g.decl.Events...), Pages: []string{},
		DefaultLanguage: lang,
		Texts:           map[string]any{"unavailable": g.decl.Texts.Unavailable, "failed": g.decl.Texts.Failed, "not_configured": NotConfigured},
		Secrets:         g.decl.SecretFields(),
		ConfigDefaults:  map[string]any{},
		OptionalEvents:  []string{},
		ObserveEvents:   g.decl.ObserveEvents,
		EventGate:       g.decl.EventGate,
	}
	for _, e := range g.decl.Events {
		if slices.Contains(plugin.OptionalEvents[:], e) {
			gp.OptionalEvents = append(gp.OptionalEvents, e)
		}
	}
	for _, c := range g.decl.Config {
		gp.ConfigDefaults[c.Name] = c.Default
	}
	for _, t := range g.decl.Tools {
		gp.Tools = append(gp.Tools, t.Name)
	}
	for _, pg := range g.decl.Pages {
		gp.Pages = append(gp.Pages, pg.ID)
	}
	b, err := json.MarshalIndent(generated{Protocol: p, Plugin: gp}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
