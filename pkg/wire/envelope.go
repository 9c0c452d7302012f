package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/settings"
)

// ID is an identifier that LangBot sends as a JSON string or a JSON number
// and that is always kept as text: a number keeps its literal digits
// (123456789012345678 stays exact), null is the empty ID.
type ID string

// UnmarshalJSON accepts a string, a number or null.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return errors.New("wire: empty id")
	case string(b) == "null":
		*id = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ID(s)
		return nil
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*id = ID(n.String())
		return nil
	}
	// the value is never echoed (it may be anything a client sent): its kind is
	kind := "another value"
	switch b[0] {
	case '{':
		kind = "an object"
	case '[':
		kind = "an array"
	case 't', 'f':
		kind = "a boolean"
	}
	return &EnvelopeError{Field: "id", Reason: "id must be a string or a number, not " + kind}
}

// String returns the id's text.
func (id ID) String() string { return string(id) }

// Session is LangBot's session of a command or tool invocation.
type Session struct {
	LauncherType string `json:"launcher_type"` // person or group
	LauncherID   ID     `json:"launcher_id"`
	SenderID     ID     `json:"sender_id"`
	BotUUID      string `json:"bot_uuid"`
}

// Launcher types.
const (
	LauncherPerson = "person"
	LauncherGroup  = "group"
)

// Command is the body field of a command invocation.
type Command struct {
	Name      string   `json:"name"`
	Params    []string `json:"params"`
	FullText  string   `json:"full_text"`
	Prefix    string   `json:"prefix,omitempty"`
	Session   Session  `json:"session"`
	Privilege int      `json:"privilege"`
	QueryUUID ID       `json:"query_uuid,omitempty"`
}

// Event is the body field of an event invocation. Data holds the event's
// own fields, decoded by the service that understands the event.
type Event struct {
	Name      string          `json:"name"`
	BotUUID   string          `json:"bot_uuid"`
	Data      json.RawMessage `json:"data"`
	QueryUUID ID              `json:"query_uuid,omitempty"`
	// WantGate asks the service to put its current EventGate in the
	// reply (a package without one, or whose gate is about to expire).
	WantGate bool `json:"want_gate,omitempty"`
	// Passed says the host has already let the event pass by its
	// EventGate: the reply's decision cannot be applied any more, and the
	// service records the event as what happened (an AI reply was sent).
	Passed bool `json:"passed,omitempty"`
}

// Tool is the body field of a tool invocation.
type Tool struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
	Session    Session         `json:"session"`
	QueryUUID  ID              `json:"query_uuid,omitempty"`
}

// Page is the body field of a page invocation. Caller is filled only by
// hosts that know the end user.
type Page struct {
	PageID   string          `json:"page_id"`
	Endpoint string          `json:"endpoint"`
	Method   string          `json:"method"`
	Body     json.RawMessage `json:"body,omitempty"`
	Caller   json.RawMessage `json:"caller,omitempty"`
}

// Request is the body of every invocation: the binding, the installation's
// config snapshot, and exactly one of the endpoint fields.
type Request struct {
	Binding binding.Binding `json:"binding"`
	Config  json.RawMessage `json:"config"`
	Command *Command        `json:"command,omitempty"`
	Event   *Event          `json:"event,omitempty"`
	Tool    *Tool           `json:"tool,omitempty"`
	Page    *Page           `json:"page,omitempty"`
}

// ErrEnvelope matches every refusal of DecodeRequest (errors.Is).
var ErrEnvelope = errors.New("wire: malformed request")

// EnvelopeError is DecodeRequest's refusal of a body. Its Reason is the
// text the caller gets in the 400 reply: fixed words, field names and JSON
// positions, never a value of the body nor a Go error chain, so a caller
// cannot make the service echo what it sent (chat text, tokens).
type EnvelopeError struct {
	// Field is the part of the envelope at fault: "body", "binding",
	// "config", "id", an endpoint's field ("command", ...) or the JSON
	// field of a value of the wrong type.
	Field string
	// Reason says what is wrong with it, as the caller reads it.
	Reason string
}

func (e *EnvelopeError) Error() string { return ErrEnvelope.Error() + ": " + e.Reason }

// Is makes every EnvelopeError match ErrEnvelope.
func (e *EnvelopeError) Is(target error) bool { return target == ErrEnvelope }

// refuse returns the EnvelopeError of field with reason.
func refuse(field, reason string) *EnvelopeError { return &EnvelopeError{Field: field, Reason: reason} }

// DecodeRequest decodes and checks an invocation body for endpoint ep: valid
// JSON object, a complete binding, a config object (or absent), and the
// endpoint's field present with a name. Every refusal is an *EnvelopeError.
func DecodeRequest(ep Endpoint, body []byte) (*Request, error) {
	// encoding/json would turn invalid UTF-8 into U+FFFD silently, so a
	// corrupted name or text would be stored as something else.
	if !utf8.Valid(body) {
		return nil, refuse("body", "body is not valid UTF-8")
	}
	// json.Unmarshal rejects data after the object, and decodes in place
	// where a Decoder would first copy the body into a buffer of its own:
	// this runs for every invocation.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return nil, refuse("body", "body is a JSON array, expected an object")
	}
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, jsonRefusal(err)
	}
	if err := r.Binding.Validate(); err != nil {
		if errors.Is(err, binding.ErrInvalidScope) {
			return nil, refuse("binding", "the binding's instance, workspace or installation id is not a valid token")
		}
		return nil, refuse("binding", "the binding is invalid (generation and revision must be >= 1, the digest printable)")
	}
	if len(r.Config) == 0 || string(r.Config) == "null" {
		r.Config = json.RawMessage("{}")
	} else if r.Config[0] != '{' {
		return nil, refuse("config", "config must be an object")
	} else if err := settings.CheckSizes(r.Config); err != nil {
		var size *settings.SizeError
		if errors.As(err, &size) {
			return nil, refuse("config", size.Detail()) // names the field and the cap, never the value
		}
		return nil, refuse("config", "malformed request body")
	}
	var name string
	switch ep {
	case EndpointCommand:
		if r.Command == nil {
			return nil, refuse("command", "missing command")
		}
		name = r.Command.Name
	case EndpointEvent:
		if r.Event == nil {
			return nil, refuse("event", "missing event")
		}
		name = r.Event.Name
		if len(r.Event.Data) == 0 || string(r.Event.Data) == "null" {
			r.Event.Data = json.RawMessage("{}")
		}
	case EndpointTool:
		if r.Tool == nil {
			return nil, refuse("tool", "missing tool")
		}
		name = r.Tool.Name
		if len(r.Tool.Parameters) == 0 || string(r.Tool.Parameters) == "null" {
			r.Tool.Parameters = json.RawMessage("{}")
		}
	case EndpointPage:
		if r.Page == nil {
			return nil, refuse("page", "missing page")
		}
		name = r.Page.Endpoint
	default:
		return nil, refuse("endpoint", "unknown endpoint")
	}
	if strings.TrimSpace(name) == "" {
		return nil, refuse(string(ep), string(ep)+" has no name")
	}
	return &r, nil
}

// jsonRefusal names what json.Unmarshal found wrong with a body by its
// position or field, never by the value: its own texts quote the body.
func jsonRefusal(err error) *EnvelopeError {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return refuse("body", fmt.Sprintf("malformed JSON at byte %d", syn.Offset))
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		if typ.Field == "" {
			return refuse("body", "the body must be a JSON object")
		}
		return refuse(typ.Field, fmt.Sprintf("field %q has the wrong type", typ.Field))
	}
	var env *EnvelopeError // an ID's own refusal
	if errors.As(err, &env) {
		return env
	}
	return refuse("body", "malformed request body")
}

// Return is one message of a command reply.
type Return struct {
	Text string `json:"text"`
}

// CommandReply is the reply to a command; a command may return several
// messages.
type CommandReply struct {
	Returns []Return `json:"returns"`
}

// EventReply is the reply to an event.
type EventReply struct {
	PreventDefault    bool        `json:"prevent_default"`
	PreventPostorder  bool        `json:"prevent_postorder"`
	ReplyMessageChain []Component `json:"reply_message_chain,omitempty"`
	// Gate, when the request asked for it and the service can tell, is
	// the rule by which the host may let this installation's events pass
	// at once, without waiting for a decision (docs/protocol.md, "Event
	// gate").
	Gate *EventGate `json:"gate,omitempty"`
}

// EventGate is a service's promise, valid for TTLMillis from its receipt
// unless revoked (ActionGateRevoke) or the host's connection drops, that
// it would answer an event with no effect when all of these hold: the
// event's name is in Events; its chat (launcher type and id, under any
// bot) is not in Loud; and, for a message, the pattern Words (a Python
// regular expression; empty: none) does not match the text of its Plain
// components joined in order. Such an event is let pass at once and
// forwarded in the background with Passed set.
type EventGate struct {
	TTLMillis int         `json:"ttl_ms"`
	Events    []string    `json:"events"`
	Loud      [][2]string `json:"loud"`
	Words     string      `json:"words"`
}

// ToolReply is the reply to a tool call.
type ToolReply struct {
	Result any `json:"result"`
}

// PageReply is the reply to a page call.
type PageReply struct {
	Data any `json:"data"`
}

// Component is one element of LangBot's message chain. Only the fields of
// its Type are set.
type Component struct {
	Type   string `json:"type"`
	Text   string `json:"text,omitempty"`
	URL    string `json:"url,omitempty"`
	Base64 string `json:"base64,omitempty"`
	Name   string `json:"name,omitempty"`
	Target ID     `json:"target,omitempty"`
}

// Plain returns a one-component chain holding text.
func Plain(text string) []Component { return []Component{{Type: "Plain", Text: text}} }

// SendMessage is the data of the send_message host action.
type SendMessage struct {
	BotUUID      string      `json:"bot_uuid"`
	TargetType   string      `json:"target_type"`
	TargetID     string      `json:"target_id"`
	MessageChain []Component `json:"message_chain"`
}

// InvokeLLM is the data of the invoke_llm host action: one completion,
// without tools. The messages are chat text: neither side logs them.
type InvokeLLM struct {
	// Model is the LLM model uuid to use; empty lets the host choose (the
	// LangBot packages take the first model get_llm_models lists).
	Model string `json:"llm_model_uuid,omitempty"`
	// Messages is the conversation, oldest first.
	Messages []LLMMessage `json:"messages"`
	// TimeoutMS bounds the host's own call of the model, so the host gives
	// up before the caller does; 0 lets the host use its default.
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

// LLM message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// LLMMessage is one message of an invoke_llm conversation (LangBot's
// provider Message with text content).
type LLMMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// LLMAnswer is the reply of invoke_llm: the answer's text and the model
// that wrote it.
type LLMAnswer struct {
	Text  string `json:"text"`
	Model string `json:"llm_model_uuid"`
}

// BotInfo is the reply of get_bot_info.
type BotInfo struct {
	UUID                 string         `json:"uuid"`
	Name                 string         `json:"name"`
	Adapter              string         `json:"adapter"`
	AdapterRuntimeValues map[string]any `json:"adapter_runtime_values,omitempty"`
}

// HostRequest is the body of every host action (DESIGN 3.4).
type HostRequest struct {
	Binding binding.Binding `json:"binding"`
	Plugin  string          `json:"plugin"`
	Data    json.RawMessage `json:"data"`
}

// Attach is the body of a lifecycle attach message.
type Attach struct {
	Binding binding.Binding `json:"binding"`
	Config  json.RawMessage `json:"config"`
	Enabled bool            `json:"enabled"`
}

// Revoke reasons (DESIGN 3.2).
const (
	ReasonUninstall        = "uninstall"
	ReasonWorkspaceRemoved = "workspace_removed"
	ReasonDisable          = "disable"
	ReasonUpgrade          = "upgrade"
	ReasonConfigChange     = "config_change"
)

// Revoke is the body of a lifecycle revoke message.
type Revoke struct {
	Binding binding.Binding `json:"binding"`
	Reason  string          `json:"reason"`
}
