package reallangbot

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Admin credentials of the booted LangBot (a fresh instance per test).
const (
	adminUser     = "admin@example.com"
	adminPassword = "reallangbot-Passw0rd"
)

// bootTimeout bounds LangBot's start (about 6 s on a 2-core machine
// without load; its first start also runs the database migrations).
const bootTimeout = 180 * time.Second

// LangBot is a running LangBot with its plugin runtime, signed in as its
// first admin in its default workspace.
type LangBot struct {
	// URL is LangBot's HTTP address (http://127.0.0.1:<port>).
	URL string
	// Workspace is the default workspace's uuid (sent as X-Workspace-Id).
	Workspace string

	env    *Env
	dir    string
	token  string
	client *http.Client
	procs  []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

// Boot starts the plugin runtime and LangBot under a test temporary
// directory, waits until LangBot reports its runtime connected, creates
// the first admin and signs in. Cleanup stops both, printing the tail of
// their logs when the test failed.
func Boot(t testing.TB, env *Env) *LangBot {
	t.Helper()
	lb := &LangBot{env: env, dir: t.TempDir(), client: &http.Client{Timeout: 60 * time.Second}}
	t.Cleanup(func() {
		lb.stop()
		if t.Failed() {
			for _, p := range lb.procs {
				t.Logf("%s log (tail, without HTTP access lines):\n%s", p.name, tailString(withoutAccessLines(lb.Logs(p.name)), 8000))
			}
		}
	})
	ports, err := freePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	control, debug, api := ports[0], ports[1], ports[2]
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	shared := []string{"LANGBOT_PLUGIN_RUNTIME_CONTROL_TOKEN=" + hex.EncodeToString(secret),
		// The fake LLM and the services are on loopback: no proxy.
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
	if err := lb.start("runtime", shared, "-m", "langbot_plugin.cli.__init__", "rt",
		"--ws-control-port", strconv.Itoa(control), "--ws-debug-port", strconv.Itoa(debug)); err != nil {
		t.Fatal(err)
	}
	lb.URL = "http://127.0.0.1:" + strconv.Itoa(api)
	lbEnv := append(shared,
		"API__PORT="+strconv.Itoa(api),
		"API__WEBHOOK_PREFIX="+lb.URL,
		"PLUGIN__RUNTIME_WS_URL=ws://127.0.0.1:"+strconv.Itoa(control)+"/control/ws",
		"PLUGIN__ENABLE_MARKETPLACE=false",
		"PLUGIN__DISPLAY_PLUGIN_DEBUG_URL=ws://127.0.0.1:"+strconv.Itoa(debug)+"/plugin/debug/ws",
		"BOX__ENABLED=false",
		"SPACE__URL=",
		"SPACE__DISABLE_TELEMETRY=true",
		"SPACE__DISABLE_MODELS_SERVICE=true",
	)
	if err := lb.start("langbot", lbEnv, filepath.Join(env.Source, "main.py"), "--standalone-runtime"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	if err := lb.waitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.signIn(ctx); err != nil {
		t.Fatal(err)
	}
	return lb
}

// start runs env's python with args in a working directory of its own.
func (lb *LangBot) start(name string, extraEnv []string, args ...string) error {
	dir := filepath.Join(lb.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(lb.dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := lb.env.command(args...)
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	// A process group of its own: stop ends the plugin workers too. If
	// the test binary dies without its cleanup (a -timeout panic), the
	// kernel ends the process with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("reallangbot: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	lb.procs = append(lb.procs, p)
	return nil
}

// stop ends LangBot first, then the runtime, each with SIGTERM and, after
// 10 s, SIGKILL of its whole process group.
func (lb *LangBot) stop() {
	for i := len(lb.procs) - 1; i >= 0; i-- {
		p := lb.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		p.log.Close()
	}
}

// withoutAccessLines drops hypercorn's access log lines ("... 127.0.0.1:port
// GET /path 1.1 200 ..."), which the test's polling makes most of the log.
func withoutAccessLines(log string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(log, "\n") {
		if strings.Contains(line, "] 127.0.0.1:") && strings.Contains(line, " 1.1 ") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// Logs returns what name ("langbot" or "runtime") wrote so far.
func (lb *LangBot) Logs(name string) string {
	data, _ := os.ReadFile(filepath.Join(lb.dir, name+".log"))
	return string(data)
}

func (lb *LangBot) exited() error {
	for _, p := range lb.procs {
		select {
		case <-p.done:
			return fmt.Errorf("reallangbot: %s exited: %s; log tail:\n%s", p.name, p.cmd.ProcessState, tailString(lb.Logs(p.name), 4000))
		default:
		}
	}
	return nil
}

func (lb *LangBot) waitHealthy(ctx context.Context) error {
	for {
		if err := lb.exited(); err != nil {
			return err
		}
		var health struct {
			Resources struct {
				Runtimes struct {
					Connected bool `json:"plugin_runtime_connected"`
				} `json:"runtimes"`
			} `json:"resources"`
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, lb.URL+"/healthz", nil)
		if resp, err := lb.client.Do(req); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&health)
			resp.Body.Close()
			if err == nil && health.Resources.Runtimes.Connected {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reallangbot: LangBot not healthy with its runtime connected: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (lb *LangBot) signIn(ctx context.Context) error {
	if err := lb.Do(ctx, http.MethodPost, "/api/v1/user/init", map[string]string{"user": adminUser, "password": adminPassword}, nil); err != nil {
		return err
	}
	var auth struct {
		Token string `json:"token"`
	}
	if err := lb.Do(ctx, http.MethodPost, "/api/v1/user/auth", map[string]string{"user": adminUser, "password": adminPassword}, &auth); err != nil {
		return err
	}
	lb.token = auth.Token
	var boot struct {
		Workspaces []struct {
			Workspace struct {
				UUID string `json:"uuid"`
			} `json:"workspace"`
		} `json:"workspaces"`
	}
	if err := lb.Do(ctx, http.MethodGet, "/api/v1/workspaces/bootstrap", nil, &boot); err != nil {
		return err
	}
	if len(boot.Workspaces) != 1 {
		return fmt.Errorf("reallangbot: %d workspaces after init, want 1", len(boot.Workspaces))
	}
	lb.Workspace = boot.Workspaces[0].Workspace.UUID
	return nil
}

// APIError is LangBot's answer with a non-zero code or a non-2xx status.
type APIError struct {
	Status int
	Code   int
	Msg    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("reallangbot: LangBot answered HTTP %d code %d: %s", e.Status, e.Code, e.Msg)
}

// Do calls LangBot's HTTP API as the admin: body (when not nil) as JSON,
// the envelope's data decoded into out (when not nil). A non-zero code is
// an *APIError.
func (lb *LangBot) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, lb.URL+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return lb.send(req, out)
}

func (lb *LangBot) send(req *http.Request, out any) error {
	if lb.token != "" {
		req.Header.Set("Authorization", "Bearer "+lb.token)
	}
	if lb.Workspace != "" {
		req.Header.Set("X-Workspace-Id", lb.Workspace)
	}
	resp, err := lb.client.Do(req)
	if err != nil {
		return fmt.Errorf("reallangbot: %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var env struct {
		Code int             `json:"code"`
		Msg  string          `json:"msg"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return &APIError{Status: resp.StatusCode, Code: -1, Msg: tailString(string(raw), 400)}
	}
	if resp.StatusCode/100 != 2 || env.Code != 0 {
		return &APIError{Status: resp.StatusCode, Code: env.Code, Msg: env.Msg}
	}
	if out != nil && len(env.Data) > 0 && string(env.Data) != "null" {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return fmt.Errorf("reallangbot: %s %s: data: %w", req.Method, req.URL.Path, err)
		}
	}
	return nil
}

// Get fetches path as the admin (no envelope): status, content type, body.
func (lb *LangBot) Get(ctx context.Context, path string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, lb.URL+path, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+lb.token)
	req.Header.Set("X-Workspace-Id", lb.Workspace)
	resp, err := lb.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, resp.Header, body, err
}

// Task is LangBot's record of an asynchronous operation.
type Task struct {
	ID      int `json:"id"`
	Runtime struct {
		Done      bool   `json:"done"`
		State     string `json:"state"`
		Exception string `json:"exception"`
	} `json:"runtime"`
}

// Install uploads a package as the web UI's local install does and
// returns the task LangBot started for it.
func (lb *LangBot) Install(ctx context.Context, filename string, archive []byte) (int, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", filename)
	if err != nil {
		return 0, err
	}
	if _, err := fw.Write(archive); err != nil {
		return 0, err
	}
	if err := mw.Close(); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, lb.URL+"/api/v1/plugins/install/local", &buf)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out struct {
		TaskID int `json:"task_id"`
	}
	if err := lb.send(req, &out); err != nil {
		return 0, err
	}
	return out.TaskID, nil
}

// WaitTask polls a task until it is done (LangBot's install waits up to
// 30 s for the plugin; its own bound applies, ctx bounds the rest).
func (lb *LangBot) WaitTask(ctx context.Context, id int) (Task, error) {
	for {
		var task Task
		if err := lb.Do(ctx, http.MethodGet, "/api/v1/system/tasks/"+strconv.Itoa(id), nil, &task); err != nil {
			return task, err
		}
		if task.Runtime.Done {
			return task, nil
		}
		select {
		case <-ctx.Done():
			return task, fmt.Errorf("reallangbot: task %d not done: %w", id, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Plugin is one entry of LangBot's plugin list, as far as the tests read
// it.
type Plugin struct {
	Manifest struct {
		Manifest struct {
			Metadata struct {
				Author string `json:"author"`
				Name   string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Config []struct {
					Name string `json:"name"`
				} `json:"config"`
			} `json:"spec"`
		} `json:"manifest"`
	} `json:"manifest"`
	Status string `json:"status"`
	raw    json.RawMessage
}

// ID returns author/name.
func (p Plugin) ID() string {
	return p.Manifest.Manifest.Metadata.Author + "/" + p.Manifest.Manifest.Metadata.Name
}

// Raw returns the entry as LangBot sent it.
func (p Plugin) Raw() json.RawMessage { return p.raw }

// Plugins lists the installed plugins.
func (lb *LangBot) Plugins(ctx context.Context) ([]Plugin, error) {
	var out struct {
		Plugins []json.RawMessage `json:"plugins"`
	}
	if err := lb.Do(ctx, http.MethodGet, "/api/v1/plugins", nil, &out); err != nil {
		return nil, err
	}
	list := make([]Plugin, 0, len(out.Plugins))
	for _, raw := range out.Plugins {
		var p Plugin
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		p.raw = raw
		list = append(list, p)
	}
	return list, nil
}

// Config reads a plugin's stored config (secrets redacted by LangBot).
func (lb *LangBot) Config(ctx context.Context, id string) (map[string]any, error) {
	var out struct {
		Config map[string]any `json:"config"`
	}
	err := lb.Do(ctx, http.MethodGet, "/api/v1/plugins/"+id+"/config", nil, &out)
	return out.Config, err
}

// SetConfig saves a plugin's config as the form does (LangBot restarts
// the worker with a new runtime revision).
func (lb *LangBot) SetConfig(ctx context.Context, id string, config map[string]any) error {
	return lb.Do(ctx, http.MethodPut, "/api/v1/plugins/"+id+"/config", config, nil)
}

// Uninstall removes a plugin and waits for LangBot's task.
func (lb *LangBot) Uninstall(ctx context.Context, id string) (Task, error) {
	var out struct {
		TaskID int `json:"task_id"`
	}
	if err := lb.Do(ctx, http.MethodDelete, "/api/v1/plugins/"+id, nil, &out); err != nil {
		return Task{}, err
	}
	return lb.WaitTask(ctx, out.TaskID)
}

// PageAPI carries a page call to a plugin, as the plugin's page in the web
// UI does.
func (lb *LangBot) PageAPI(ctx context.Context, id, pageID, endpoint, method string, body any, out any) error {
	return lb.Do(ctx, http.MethodPost, "/api/v1/plugins/"+id+"/page-api",
		map[string]any{"page_id": pageID, "endpoint": endpoint, "method": method, "body": body}, out)
}

// ChatSetup is the AI and the web chat bot of a test: an OpenAI-compatible
// provider at llmURL, its model bound to the default pipeline's local
// agent, and an embed web chat bot on that pipeline.
type ChatSetup struct {
	Pipeline, Bot string
}

// SetUpChat creates the provider, the model, points the default pipeline
// at it and creates the web chat bot.
func (lb *LangBot) SetUpChat(ctx context.Context, llmURL string) (ChatSetup, error) {
	var prov struct {
		UUID string `json:"uuid"`
	}
	if err := lb.Do(ctx, http.MethodPost, "/api/v1/provider/providers", map[string]any{
		"name": "fake-llm", "requester": "openai-chat-completions", "base_url": llmURL, "api_keys": []string{"sk-fake"},
	}, &prov); err != nil {
		return ChatSetup{}, err
	}
	var model struct {
		UUID string `json:"uuid"`
	}
	if err := lb.Do(ctx, http.MethodPost, "/api/v1/provider/models/llm", map[string]any{
		"name": "fake-model", "provider_uuid": prov.UUID, "abilities": []string{}, "extra_args": map[string]any{},
	}, &model); err != nil {
		return ChatSetup{}, err
	}
	var pipe struct {
		UUID string `json:"uuid"`
	}
	if err := lb.Do(ctx, http.MethodPost, "/api/v1/pipelines", map[string]any{"name": "web chat", "description": "reallangbot"}, &pipe); err != nil {
		return ChatSetup{}, err
	}
	setup := ChatSetup{Pipeline: pipe.UUID}
	var cfg map[string]any
	var full map[string]any
	if err := lb.Do(ctx, http.MethodGet, "/api/v1/pipelines/"+setup.Pipeline, nil, &struct {
		Pipeline *map[string]any `json:"pipeline"`
	}{&full}); err != nil {
		return ChatSetup{}, err
	}
	if c, ok := full["config"].(map[string]any); ok {
		cfg = c
	}
	ai, _ := cfg["ai"].(map[string]any)
	agent, _ := ai["local-agent"].(map[string]any)
	if agent == nil {
		return ChatSetup{}, fmt.Errorf("reallangbot: default pipeline has no ai.local-agent: %v", cfg)
	}
	agent["model"] = map[string]any{"primary": model.UUID, "fallbacks": []string{}}
	update := map[string]any{"name": full["name"], "description": full["description"], "config": cfg}
	if err := lb.Do(ctx, http.MethodPut, "/api/v1/pipelines/"+setup.Pipeline, update, nil); err != nil {
		return ChatSetup{}, err
	}
	var bot struct {
		UUID string `json:"uuid"`
	}
	if err := lb.Do(ctx, http.MethodPost, "/api/v1/platform/bots", map[string]any{
		"name": "web chat", "description": "reallangbot", "adapter": "web_page_bot",
		"adapter_config": map[string]any{}, "enable": true, "use_pipeline_uuid": setup.Pipeline,
	}, &bot); err != nil {
		return ChatSetup{}, err
	}
	setup.Bot = bot.UUID
	return setup, nil
}

// SaveBot saves the given fields of a bot as LangBot's bot form does
// (PUT /api/v1/platform/bots/<uuid>). LangBot stores the fields, removes
// the running bot and loads it again from its row (LangBot
// src/langbot/pkg/api/http/service/bot.py:167-182); an error of that
// load comes back as an *APIError after the row is stored.
func (lb *LangBot) SaveBot(ctx context.Context, bot string, fields map[string]any) error {
	return lb.Do(ctx, http.MethodPut, "/api/v1/platform/bots/"+bot, fields, nil)
}

// BindPlugins sets the pipeline's plugin binding: all plugins, or only
// those listed (author/name) when all is false.
func (lb *LangBot) BindPlugins(ctx context.Context, pipeline string, all bool, ids ...string) error {
	bound := []map[string]string{}
	for _, id := range ids {
		for i := range len(id) {
			if id[i] == '/' {
				bound = append(bound, map[string]string{"author": id[:i], "name": id[i+1:]})
				break
			}
		}
	}
	return lb.Do(ctx, http.MethodPut, "/api/v1/pipelines/"+pipeline+"/extensions", map[string]any{
		"enable_all_plugins": all, "bound_plugins": bound, "enable_all_mcp_servers": true, "bound_mcp_servers": []string{},
	}, nil)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// newUUID returns a random version-4 UUID in its text form.
func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
