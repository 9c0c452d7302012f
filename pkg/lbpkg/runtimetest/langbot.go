package runtimetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// serve answers one call of the runtime as LangBot does (research 3.9):
// every plugin-origin action must carry the registered binding of its
// installation.
func (r *Runtime) serve(req request) response {
	resp := r.answer(req)
	if resp.Code != 0 {
		r.logf("fake LangBot: %s refused: %s", req.Action, resp.Message)
	}
	return resp
}

func (r *Runtime) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.logs, format+"\n", args...)
}

func (r *Runtime) answer(req request) response {
	var b binding.Binding
	if len(req.Context) > 0 {
		if err := json.Unmarshal(req.Context, &b); err != nil {
			return fail(fmt.Sprintf("ValueError: bad context: %v", err))
		}
	}
	call := HostCall{Action: req.Action, Binding: b, Data: req.Data, At: time.Now()}
	if req.Action == "__ping" {
		return ok(map[string]any{"message": "pong"})
	}
	r.mu.Lock()
	r.calls = append(r.calls, call)
	in := r.installs[b.InstallationUUID]
	custom := r.reply[req.Action]
	var registered binding.Binding
	if in != nil {
		registered = in.Binding // Reconfigure changes it under the lock
	}
	r.mu.Unlock()
	if req.Action == "__file_chunk" {
		return r.receiveChunk(req.Data)
	}
	switch {
	case in == nil:
		return fail("ValueError: Plugin installation " + b.InstallationUUID + " is not registered in this Workspace")
	case b != registered:
		return fail("ValueError: Plugin installation revision or artifact is stale")
	}
	if custom != nil {
		data, err := custom(call)
		if err != nil {
			return fail(err.Error())
		}
		return ok(data)
	}
	switch req.Action {
	case "get_plugin_settings":
		var d struct {
			Author string `json:"plugin_author"`
			Name   string `json:"plugin_name"`
		}
		_ = json.Unmarshal(req.Data, &d)
		r.mu.Lock()
		if in.Author == "" { // installed without a name: LangBot would know it from the manifest
			in.Author, in.Name = d.Author, d.Name
		}
		author, name, cfg, enabled := in.Author, in.Name, in.Config, in.Enabled
		r.mu.Unlock()
		if d.Author != author || d.Name != name {
			return fail("ValueError: Plugin installation binding does not match the active setting")
		}
		return ok(map[string]any{"enabled": enabled, "priority": 0, "plugin_config": cfg, "install_source": "local",
			"install_info": map[string]any{}, "installation_uuid": b.InstallationUUID,
			"runtime_revision": b.RuntimeRevision, "artifact_digest": b.ArtifactDigest})
	case "get_bot_uuid":
		var d struct {
			QueryID int64 `json:"query_id"`
		}
		_ = json.Unmarshal(req.Data, &d)
		r.mu.Lock()
		bot, found := r.queries[d.QueryID]
		r.mu.Unlock()
		if !found {
			return fail(fmt.Sprintf("ValueError: Query with query_id %d not found", d.QueryID))
		}
		return ok(map[string]any{"bot_uuid": bot})
	case "send_message":
		var d struct {
			BotUUID string `json:"bot_uuid"`
		}
		_ = json.Unmarshal(req.Data, &d)
		if _, found := r.bot(d.BotUUID); !found {
			return fail("ValueError: Bot with bot_uuid " + d.BotUUID + " not found")
		}
		return ok(map[string]any{})
	case "get_bot_info":
		var d struct {
			BotUUID string `json:"bot_uuid"`
		}
		_ = json.Unmarshal(req.Data, &d)
		bot, found := r.bot(d.BotUUID)
		if !found {
			return fail("ValueError: Bot with bot_uuid " + d.BotUUID + " not found")
		}
		row := botRow(bot)
		row["adapter_runtime_values"] = map[string]any{"bot_account_id": bot.AccountID, "webhook_url": "", "webhook_full_url": "", "extra_webhook_full_url": ""}
		return ok(map[string]any{"bot": row})
	case "get_llm_models":
		return ok(map[string]any{"llm_models": append([]string{}, r.opts.LLMModels...)})
	case "invoke_llm":
		var d LLMRequest
		_ = json.Unmarshal(req.Data, &d)
		if !slices.Contains(r.opts.LLMModels, d.Model) {
			return fail("LLM model with llm_model_uuid " + d.Model + " not found")
		}
		return ok(LLMReply(FakeLLMAnswer(d)))
	case "get_bots":
		rows := []map[string]any{}
		for _, bot := range r.opts.Bots {
			rows = append(rows, botRow(bot))
		}
		return ok(map[string]any{"bots": rows})
	}
	return fail("ValueError: Action " + req.Action + " not found")
}

// LLMRequest is the data of an invoke_llm call as the SDK sends it.
type LLMRequest struct {
	Model    string `json:"llm_model_uuid"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	Timeout float64 `json:"timeout"`
}

// Prompt returns the content of the request's last user message.
func (q LLMRequest) Prompt() string {
	for i := len(q.Messages) - 1; i >= 0; i-- {
		if m := q.Messages[i]; m.Role == "user" {
			s, _ := m.Content.(string)
			return s
		}
	}
	return ""
}

// FakeLLMAnswer is the fake LLM's default answer: "fake LLM: " and the
// prompt.
func FakeLLMAnswer(q LLMRequest) string { return "fake LLM: " + q.Prompt() }

// LLMReply is LangBot's invoke_llm answer carrying text, for a
// HostReply that scripts the fake LLM.
func LLMReply(text string) map[string]any {
	return map[string]any{"message": map[string]any{"role": "assistant", "content": text}}
}

// LLMRequest decodes the call's data as invoke_llm data.
func (c HostCall) LLMRequest() LLMRequest {
	var q LLMRequest
	_ = json.Unmarshal(c.Data, &q)
	return q
}

// LLMCalls returns the invoke_llm calls so far.
func (r *Runtime) LLMCalls() []HostCall {
	var out []HostCall
	for _, c := range r.HostCalls() {
		if c.Action == "invoke_llm" {
			out = append(out, c)
		}
	}
	return out
}

func botRow(b Bot) map[string]any {
	return map[string]any{"uuid": b.UUID, "name": b.Name, "description": "", "adapter": b.Adapter, "enable": true,
		"use_pipeline_name": "ChatPipeline", "use_pipeline_uuid": "pipeline-1"}
}

func (r *Runtime) bot(id string) (Bot, bool) {
	for _, b := range r.opts.Bots {
		if b.UUID == id {
			return b, true
		}
	}
	return Bot{}, false
}

func ok(data any) response {
	raw, err := json.Marshal(data)
	if err != nil {
		return fail("TypeError: " + err.Error())
	}
	return response{Code: 0, Message: "success", Data: raw, ChunkStatus: statusContinue}
}

func fail(msg string) response {
	return response{Code: 1, Message: msg, Data: json.RawMessage("{}"), ChunkStatus: statusContinue}
}

// receiveChunk stores a file the runtime sends (icons, READMEs, assets).
func (r *Runtime) receiveChunk(data json.RawMessage) response {
	var c struct {
		Key    string `json:"file_key"`
		Length int    `json:"file_length"`
		B64    string `json:"chunk_base64"`
		Index  int    `json:"chunk_index"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return fail("ValueError: bad file chunk")
	}
	part, err := base64.StdEncoding.DecodeString(c.B64)
	if err != nil {
		return fail("ValueError: bad file chunk")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.uploads[c.Key]
	if u == nil || c.Index == 0 {
		u = &upload{total: c.Length}
		r.uploads[c.Key] = u
	}
	u.data = append(u.data, part...)
	return ok(map[string]any{})
}

// File returns a complete file the runtime sent under key.
func (r *Runtime) File(key string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.uploads[key]
	if u == nil || len(u.data) != u.total {
		return nil, false
	}
	return append([]byte(nil), u.data...), true
}

// SetHostReply replaces LangBot's answer to action (send_message,
// get_bot_info, ...) for every installation; nil restores the default.
// The binding check runs first either way.
func (r *Runtime) SetHostReply(action string, f HostReply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f == nil {
		delete(r.reply, action)
		return
	}
	r.reply[action] = f
}

// HostCalls returns the runtime's calls into LangBot so far, in order
// (pings excluded).
func (r *Runtime) HostCalls() []HostCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]HostCall(nil), r.calls...)
}

// Sends returns the send_message calls so far.
func (r *Runtime) Sends() []HostCall {
	var out []HostCall
	for _, c := range r.HostCalls() {
		if c.Action == "send_message" {
			out = append(out, c)
		}
	}
	return out
}

// WaitSends waits until at least n send_message calls arrived, failing the
// test after timeout.
func (r *Runtime) WaitSends(t testing.TB, n int, timeout time.Duration) []HostCall {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := r.Sends()
		if len(s) >= n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtimetest: %d send_message calls after %v, want %d", len(s), timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Plugin is a listed plugin, decoded from LangBot's PluginContainer.
type Plugin struct {
	Author, Name string
	Label        map[string]string
	Status       string
	Components   []Component
	// Raw is the container as the runtime sent it.
	Raw json.RawMessage
}

// Component is one listed component.
type Component struct {
	Kind, Name string
	Label      map[string]string
	Spec       json.RawMessage
}

type container struct {
	Manifest struct {
		Manifest struct {
			Metadata struct {
				Author string            `json:"author"`
				Name   string            `json:"name"`
				Label  map[string]string `json:"label"`
			} `json:"metadata"`
		} `json:"manifest"`
	} `json:"manifest"`
	Status     string `json:"status"`
	Components []struct {
		Manifest struct {
			Manifest struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name  string            `json:"name"`
					Label map[string]string `json:"label"`
				} `json:"metadata"`
				Spec json.RawMessage `json:"spec"`
			} `json:"manifest"`
		} `json:"manifest"`
	} `json:"components"`
}

func decodePlugin(raw json.RawMessage) (Plugin, error) {
	var c container
	if err := json.Unmarshal(raw, &c); err != nil {
		return Plugin{}, err
	}
	m := c.Manifest.Manifest.Metadata
	p := Plugin{Author: m.Author, Name: m.Name, Label: m.Label, Status: c.Status, Raw: raw}
	for _, comp := range c.Components {
		cm := comp.Manifest.Manifest
		p.Components = append(p.Components, Component{Kind: cm.Kind, Name: cm.Metadata.Name, Label: cm.Metadata.Label, Spec: cm.Spec})
	}
	return p, nil
}

// ListPlugins lists the plugins under in's binding, as LangBot does once
// per enabled binding.
func (r *Runtime) ListPlugins(ctx context.Context, in *Installation) ([]Plugin, error) {
	raw, err := r.call(ctx, &in.Binding, "list_plugins", map[string]any{}, timeoutList)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Plugins []json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("runtimetest: list_plugins: %w", err)
	}
	var out []Plugin
	for _, p := range ans.Plugins {
		d, err := decodePlugin(p)
		if err != nil {
			return nil, fmt.Errorf("runtimetest: list_plugins: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// PluginInfo is get_plugin_info for in: nil while the runtime has none.
func (r *Runtime) PluginInfo(ctx context.Context, in *Installation) (*Plugin, error) {
	raw, err := r.call(ctx, &in.Binding, "get_plugin_info", map[string]any{"author": in.Author, "plugin_name": in.Name}, timeoutList)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Plugin json.RawMessage `json:"plugin"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("runtimetest: get_plugin_info: %w", err)
	}
	if len(ans.Plugin) == 0 || string(ans.Plugin) == "null" {
		return nil, nil
	}
	p, err := decodePlugin(ans.Plugin)
	return &p, err
}

// Session is the chat a call comes from.
type Session struct {
	LauncherType string // "person" or "group"
	LauncherID   string
	SenderID     string
	BotUUID      string
}

// id sends a numeric id as a JSON number, as LangBot does for QQ-style ids.
func id(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return s
}

func (r *Runtime) session(s Session) map[string]any {
	now := float64(time.Now().UnixMilli()) / 1000
	return map[string]any{"instance_uuid": r.opts.InstanceUUID, "workspace_uuid": r.opts.WorkspaceUUID, "placement_generation": 1,
		"launcher_type": s.LauncherType, "launcher_id": id(s.LauncherID), "sender_id": id(s.SenderID), "bot_uuid": s.BotUUID,
		"use_prompt_name": "default", "using_conversation": nil, "conversations": []any{}, "create_time": now, "update_time": now}
}

// newQuery registers a query of s's bot, for get_bot_uuid.
func (r *Runtime) newQuery(s Session) (int64, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.query++
	r.queries[r.query] = s.BotUUID
	return r.query, "q-" + hex8(r.query)
}

func hex8(n int64) string { return fmt.Sprintf("%08x", n) }

// CommandReturn is one streamed command answer.
type CommandReturn struct {
	Text        *string `json:"text"`
	ImageBase64 *string `json:"image_base64"`
	ImageURL    *string `json:"image_url"`
	FileURL     *string `json:"file_url"`
	FileName    *string `json:"file_name"`
	Error       any     `json:"error"`
}

// Command runs a chat message such as "!gh help" as LangBot's command
// stage does: one prefix character stripped, the first word the command,
// the rest its params; privilege 1 is a user, 2 an admin. It returns every
// streamed return in order.
func (r *Runtime) Command(ctx context.Context, in *Installation, text string, s Session, privilege int) ([]CommandReturn, error) {
	if len(text) < 2 {
		return nil, fmt.Errorf("runtimetest: command %q too short", text)
	}
	body := text[1:]
	words := strings.Fields(body)
	if len(words) == 0 {
		return nil, fmt.Errorf("runtimetest: command %q has no word", text)
	}
	qid, quuid := r.newQuery(s)
	cc := map[string]any{"instance_uuid": r.opts.InstanceUUID, "workspace_uuid": r.opts.WorkspaceUUID, "placement_generation": 1,
		"query_id": qid, "query_uuid": quuid, "session": r.session(s), "command_text": body, "full_command_text": text,
		"command": words[0], "crt_command": words[0], "params": words[1:], "crt_params": words[1:], "privilege": privilege}
	var out []CommandReturn
	b := in.Binding
	err := r.stream(ctx, &b, "execute_command", map[string]any{"command_context": cc, "include_plugins": nil}, timeoutInvoke,
		func(resp response) bool {
			if resp.ChunkStatus == statusEnd {
				return false
			}
			var ret CommandReturn
			if err := json.Unmarshal(resp.Data, &ret); err == nil {
				out = append(out, ret)
			}
			return true
		})
	return out, err
}

// Texts returns the text of each return ("" for none).
func Texts(rets []CommandReturn) []string {
	var out []string
	for _, r := range rets {
		t := ""
		if r.Text != nil {
			t = *r.Text
		}
		out = append(out, t)
	}
	return out
}

// Tool calls tool with params from s, returning tool_response.
func (r *Runtime) Tool(ctx context.Context, in *Installation, tool string, params any, s Session) (json.RawMessage, error) {
	qid, quuid := r.newQuery(s)
	raw, err := r.call(ctx, &in.Binding, "call_tool", map[string]any{"tool_name": tool, "tool_parameters": params, "session": r.session(s),
		"query_id": qid, "query_uuid": quuid, "include_plugins": nil}, timeoutInvoke)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Response json.RawMessage `json:"tool_response"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("runtimetest: call_tool: %w", err)
	}
	return ans.Response, nil
}

// Event is a pipeline event LangBot emits.
type Event struct {
	// Name: PersonMessageReceived, GroupMessageReceived or
	// NormalMessageResponded.
	Name    string
	Session Session
	// Text is the user's message, or the AI's response for
	// NormalMessageResponded.
	Text string
	// Images are image URLs the user's message carries after its text
	// (MessageReceived events only).
	Images []string
}

// EventResult is the event context as it came back.
type EventResult struct {
	PreventDefault, PreventPostorder bool
	Emitted                          int
	Raw                              json.RawMessage
	// Arrived is when the runtime's answer was read, before this fake
	// decoded it (see response.Arrived).
	Arrived time.Time
}

// Emit sends ev to in's binding and returns the event context LangBot would
// carry on with.
func (r *Runtime) Emit(ctx context.Context, in *Installation, ev Event) (*EventResult, error) {
	qid, quuid := r.newQuery(ev.Session)
	s := ev.Session
	scope := map[string]any{"instance_uuid": r.opts.InstanceUUID, "workspace_uuid": r.opts.WorkspaceUUID, "placement_generation": 1}
	e := map[string]any{"query_uuid": quuid, "event_name": ev.Name, "launcher_type": s.LauncherType,
		"launcher_id": id(s.LauncherID), "sender_id": id(s.SenderID)}
	for k, v := range scope {
		e[k] = v
	}
	now := time.Now().Unix()
	chain := []any{map[string]any{"type": "Source", "id": qid, "timestamp": now}, map[string]any{"type": "Plain", "text": ev.Text}}
	for _, u := range ev.Images {
		chain = append(chain, map[string]any{"type": "Image", "url": u})
	}
	switch ev.Name {
	case "GroupMessageReceived":
		e["message_event"] = map[string]any{"type": "GroupMessage", "sender": map[string]any{"id": id(s.SenderID), "member_name": "user " + s.SenderID,
			"permission": "MEMBER", "group": map[string]any{"id": id(s.LauncherID), "name": "group " + s.LauncherID, "permission": "MEMBER"}, "special_title": ""},
			"message_chain": chain, "time": float64(now)}
		e["message_chain"] = chain
	case "PersonMessageReceived":
		e["message_event"] = map[string]any{"type": "FriendMessage", "sender": map[string]any{"id": id(s.SenderID), "nickname": "user " + s.SenderID, "remark": ""},
			"message_chain": chain, "time": float64(now)}
		e["message_chain"] = chain
	case "NormalMessageResponded":
		e["session"] = r.session(s)
		e["prefix"] = ""
		e["response_text"] = ev.Text
		e["finish_reason"] = "stop"
		e["funcs_called"] = []string{}
	default:
		return nil, fmt.Errorf("runtimetest: event %q not supported", ev.Name)
	}
	ectx := map[string]any{"query_id": qid, "query_uuid": quuid, "eid": qid, "event_name": ev.Name, "event": e,
		"is_prevent_default": false, "is_prevent_postorder": false}
	for k, v := range scope {
		ectx[k] = v
	}
	resp, err := r.callFrame(ctx, &in.Binding, "emit_event", map[string]any{"event_context": ectx, "include_plugins": nil}, timeoutInvoke)
	// The query ends with its answer: the earliest LangBot 4.10.8 drops it
	// (a pipeline that stops at once, pipelinemgr.py's remove_query), so a
	// get_bot_uuid sent after the answer is refused, one sent before it
	// is not (the conn answers it in arrival order).
	r.mu.Lock()
	delete(r.queries, qid)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var ans struct {
		Emitted []json.RawMessage `json:"emitted_plugins"`
		Context struct {
			PreventDefault   bool `json:"is_prevent_default"`
			PreventPostorder bool `json:"is_prevent_postorder"`
		} `json:"event_context"`
	}
	if err := json.Unmarshal(resp.Data, &ans); err != nil {
		return nil, fmt.Errorf("runtimetest: emit_event: %w", err)
	}
	return &EventResult{PreventDefault: ans.Context.PreventDefault, PreventPostorder: ans.Context.PreventPostorder,
		Emitted: len(ans.Emitted), Raw: resp.Data, Arrived: resp.Arrived}, nil
}

// PageResult is a page_api answer: data, or the page's error text.
type PageResult struct {
	Data  json.RawMessage
	Error string
}

// Page calls page_api of in's page pageID.
func (r *Runtime) Page(ctx context.Context, in *Installation, pageID, endpoint, method string, body any) (*PageResult, error) {
	raw, err := r.call(ctx, &in.Binding, "page_api", map[string]any{"plugin_author": in.Author, "plugin_name": in.Name,
		"page_id": pageID, "endpoint": endpoint, "method": method, "body": body}, timeoutPage)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Data  json.RawMessage `json:"data"`
		Error *string         `json:"error"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("runtimetest: page_api: %w", err)
	}
	res := &PageResult{Data: ans.Data}
	if ans.Error != nil {
		res.Error = *ans.Error
	}
	return res, nil
}
