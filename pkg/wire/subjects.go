package wire

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// DefaultPrefix is the subject prefix unless configured otherwise.
const DefaultPrefix = "langbot"

// Endpoint names one of the four invocation kinds of DESIGN 3.1.
type Endpoint string

// The invocation endpoints.
const (
	EndpointCommand Endpoint = "command"
	EndpointEvent   Endpoint = "event"
	EndpointTool    Endpoint = "tool"
	EndpointPage    Endpoint = "page"
)

// Endpoints lists the invocation endpoints in a fixed order.
var Endpoints = [...]Endpoint{EndpointCommand, EndpointEvent, EndpointTool, EndpointPage}

// Lifecycle message kinds (DESIGN 3.2).
const (
	LifecycleAttach = "attach"
	LifecycleRevoke = "revoke"
)

// Host actions (DESIGN 3.4).
const (
	ActionSendMessage = "send_message"
	ActionGetBotInfo  = "get_bot_info"
	ActionGetBots     = "get_bots"
	// ActionInvokeLLM asks the host's LLM for one answer (data InvokeLLM,
	// reply LLMAnswer); the LangBot packages forward it to the SDK's
	// get_llm_models and invoke_llm.
	ActionInvokeLLM = "invoke_llm"
	// ActionGateRevoke is not a host action but a notice on the same
	// subject space, published without a reply: the installation's
	// EventGate is void from its receipt (a chat became watched).
	ActionGateRevoke = "gate_revoke"
)

// DefaultHostTimeout bounds a host action whose caller set no earlier
// deadline; the LangBot packages wait as long for the host's reply.
const DefaultHostTimeout = 15 * time.Second

// ReasonNoLLMModel refines the 404 not_found a host answers invoke_llm
// with when the installation's workspace has no LLM model (or not the one
// named): no retry helps until an operator adds one.
const ReasonNoLLMModel = "no_llm_model"

// Reasons of a send_message the chat platform refused for good (a 4xx
// host error other than 403 and 429, docs/protocol.md "Host actions"): a
// retry would be refused again, so a sender waits for the chat's next
// incoming message instead.
const (
	// RefusalNotPermitted: the bot may not message this target (blocked,
	// not a friend or member, muted, no permission on the platform).
	RefusalNotPermitted = "not_permitted"
	// RefusalOutsideReplyWindow: the platform lets a bot answer only
	// within a window after the user's last message.
	RefusalOutsideReplyWindow = "outside_reply_window"
	// RefusalUnsupportedTarget: the adapter cannot send proactively to
	// this kind of target at all.
	RefusalUnsupportedTarget = "unsupported_target"
)

// LifecycleStream is the JetStream stream of lifecycle messages (DESIGN 3.2).
const LifecycleStream = "LANGBOT_LIFECYCLE"

// ErrSubject is returned when a subject does not have the expected shape.
var ErrSubject = errors.New("wire: malformed subject")

// ErrKey is returned when a key part is not key-safe.
var ErrKey = errors.New("wire: malformed key")

// keyTokenRE is the charset of one KV key or subject token built from
// service ids; free text must go through binding.Token first.
var keyTokenRE = regexp.MustCompile(`^[-_=A-Za-z0-9]{1,256}$`)

// CheckID reports whether id can be one token of a key or subject.
func CheckID(id string) error {
	if !keyTokenRE.MatchString(id) {
		return fmt.Errorf("%w: token %q (encode free text with binding.Token)", ErrKey, id)
	}
	return nil
}

// Subjects builds and parses every subject of the protocol under one prefix.
// The zero value uses DefaultPrefix.
type Subjects struct {
	// Prefix is the first subject token, "langbot" when empty.
	Prefix string
}

// NewSubjects returns Subjects for prefix, which must be one valid token.
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if err := binding.CheckToken(prefix); err != nil {
		return Subjects{}, fmt.Errorf("wire: subject prefix: %w", err)
	}
	return Subjects{Prefix: prefix}, nil
}

func (s Subjects) p() string {
	if s.Prefix == "" {
		return DefaultPrefix
	}
	return s.Prefix
}

func join(parts ...string) string { return strings.Join(parts, ".") }

// Invocation is "<prefix>.plugin.<plugin>.<endpoint>.<scope>".
func (s Subjects) Invocation(plugin string, ep Endpoint, sc binding.Scope) string {
	return join(s.p(), "plugin", plugin, string(ep), sc.String())
}

// InvocationAll is the wildcard an endpoint of a plugin serves:
// "<prefix>.plugin.<plugin>.<endpoint>.*.*.*".
func (s Subjects) InvocationAll(plugin string, ep Endpoint) string {
	return join(s.p(), "plugin", plugin, string(ep), "*.*.*")
}

// PluginAll is every invocation of one plugin, the subject space its
// service serves: "<prefix>.plugin.<plugin>.>".
func (s Subjects) PluginAll(plugin string) string { return join(s.p(), "plugin", plugin, ">") }

// InvocationsAll is every invocation of every plugin, the subject space a
// host invokes: "<prefix>.plugin.>".
func (s Subjects) InvocationsAll() string { return join(s.p(), "plugin", ">") }

// ParseInvocation returns the plugin, endpoint and scope of an invocation
// subject.
func (s Subjects) ParseInvocation(subject string) (plugin string, ep Endpoint, sc binding.Scope, err error) {
	t := strings.Split(subject, ".")
	if len(t) != 7 || t[0] != s.p() || t[1] != "plugin" {
		return "", "", binding.Scope{}, fmt.Errorf("%w: %q is not an invocation", ErrSubject, subject)
	}
	sc, err = binding.ScopeFromTokens(t[4:7])
	if err != nil {
		return "", "", binding.Scope{}, err
	}
	return t[2], Endpoint(t[3]), sc, nil
}

// Lifecycle is "<prefix>.lifecycle.<plugin>.<kind>.<scope>".
func (s Subjects) Lifecycle(plugin, kind string, sc binding.Scope) string {
	return join(s.p(), "lifecycle", plugin, kind, sc.String())
}

// LifecycleAll is the subject space of the lifecycle stream.
func (s Subjects) LifecycleAll() string { return join(s.p(), "lifecycle", ">") }

// LifecycleFilter is the filter of a plugin's lifecycle consumer.
func (s Subjects) LifecycleFilter(plugin string) string {
	return join(s.p(), "lifecycle", plugin, ">")
}

// ParseLifecycle returns the plugin, kind and scope of a lifecycle subject.
func (s Subjects) ParseLifecycle(subject string) (plugin, kind string, sc binding.Scope, err error) {
	t := strings.Split(subject, ".")
	if len(t) != 7 || t[0] != s.p() || t[1] != "lifecycle" {
		return "", "", binding.Scope{}, fmt.Errorf("%w: %q is not a lifecycle subject", ErrSubject, subject)
	}
	sc, err = binding.ScopeFromTokens(t[4:7])
	if err != nil {
		return "", "", binding.Scope{}, err
	}
	return t[2], t[3], sc, nil
}

// HostAction is "<prefix>.host.<action>.<scope>".
func (s Subjects) HostAction(action string, sc binding.Scope) string {
	return join(s.p(), "host", action, sc.String())
}

// HostActionAll is the wildcard of one host action over all scopes.
func (s Subjects) HostActionAll(action string) string { return join(s.p(), "host", action, "*.*.*") }

// HostAll is the subject space a host serves.
func (s Subjects) HostAll() string { return join(s.p(), "host", ">") }

// ParseHostAction returns the action and scope of a host-action subject.
func (s Subjects) ParseHostAction(subject string) (action string, sc binding.Scope, err error) {
	t := strings.Split(subject, ".")
	if len(t) != 6 || t[0] != s.p() || t[1] != "host" {
		return "", binding.Scope{}, fmt.Errorf("%w: %q is not a host action", ErrSubject, subject)
	}
	sc, err = binding.ScopeFromTokens(t[3:6])
	if err != nil {
		return "", binding.Scope{}, err
	}
	return t[2], sc, nil
}

// Tenant subjects (DESIGN 7). A tenant is one LangBot instance, or one
// workspace of it; workspace "*" stands for every workspace of the
// instance. These are the wildcards a tenant credential is limited to
// (TenantGrants), never subjects anyone publishes on.

// InvocationTenant is "<prefix>.plugin.*.<endpoint>.<instance>.<workspace>.*":
// the invocations of one endpoint of every plugin within a tenant.
func (s Subjects) InvocationTenant(ep Endpoint, instance, workspace string) string {
	return join(s.p(), "plugin", "*", string(ep), instance, workspace, "*")
}

// LifecycleTenant is "<prefix>.lifecycle.*.<kind>.<instance>.<workspace>.*".
func (s Subjects) LifecycleTenant(kind, instance, workspace string) string {
	return join(s.p(), "lifecycle", "*", kind, instance, workspace, "*")
}

// HostTenant is "<prefix>.host.*.<instance>.<workspace>.*": every host
// action of a tenant's installations.
func (s Subjects) HostTenant(instance, workspace string) string {
	return join(s.p(), "host", "*", instance, workspace, "*")
}

// Internal is a plugin's internal subject
// "<prefix>.<plugin>.<kind>.<scope>[.<id>...]"; each id must pass CheckID.
func (s Subjects) Internal(plugin, kind string, sc binding.Scope, ids ...string) (string, error) {
	if sc.IsZero() {
		return "", fmt.Errorf("%w: zero scope", binding.ErrInvalidScope)
	}
	for _, id := range ids {
		if err := CheckID(id); err != nil {
			return "", err
		}
	}
	return join(append([]string{s.p(), plugin, kind, sc.String()}, ids...)...), nil
}

// InternalAll is the wildcard of one kind of a plugin's internal subjects:
// "<prefix>.<plugin>.<kind>.>".
func (s Subjects) InternalAll(plugin, kind string) string {
	return join(s.p(), plugin, kind, ">")
}

// InternalRoot is every internal subject of a plugin, of any kind:
// "<prefix>.<plugin>.>".
func (s Subjects) InternalRoot(plugin string) string { return join(s.p(), plugin, ">") }

// InternalShard is the wildcard of one shard of a kind whose subjects carry
// a shard token right after the scope (a scope is always three tokens):
// "<prefix>.<plugin>.<kind>.*.*.*.<shard>.>". It lets one stream per shard
// hold the kind, so that no stream interleaves every installation's
// subjects.
func (s Subjects) InternalShard(plugin, kind, shard string) string {
	return join(s.p(), plugin, kind, "*.*.*", shard, ">")
}

// InternalScope is the wildcard of one kind within one scope:
// "<prefix>.<plugin>.<kind>.<scope>.>".
func (s Subjects) InternalScope(plugin, kind string, sc binding.Scope) string {
	return join(s.p(), plugin, kind, sc.String(), ">")
}

// ParseInternal splits an internal subject of plugin into its kind, scope and
// trailing ids.
func (s Subjects) ParseInternal(plugin, subject string) (kind string, sc binding.Scope, ids []string, err error) {
	t := strings.Split(subject, ".")
	if len(t) < 6 || t[0] != s.p() || t[1] != plugin {
		return "", binding.Scope{}, nil, fmt.Errorf("%w: %q is not a %s subject", ErrSubject, subject, plugin)
	}
	sc, err = binding.ScopeFromTokens(t[3:6])
	if err != nil {
		return "", binding.Scope{}, nil, err
	}
	for _, id := range t[6:] {
		if err := CheckID(id); err != nil {
			return "", binding.Scope{}, nil, fmt.Errorf("%w: %w", ErrSubject, err)
		}
	}
	return t[2], sc, t[6:], nil
}
