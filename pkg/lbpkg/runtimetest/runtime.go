package runtimetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// LangBot's timeouts for what it sends (research 3.2), used when the
// caller's ctx has no deadline of its own.
const (
	timeoutPing      = 10 * time.Second
	timeoutReconcile = 300 * time.Second
	timeoutApply     = 120 * time.Second
	timeoutList      = 10 * time.Second
	timeoutPage      = 30 * time.Second
	timeoutInvoke    = 180 * time.Second
	readyWait        = 30 * time.Second // an install fails unless initialized by then
	fileChunkBytes   = 16 * 1024
)

// Options configure the fake LangBot.
type Options struct {
	// InstanceUUID and WorkspaceUUID of every binding (defaults:
	// "instance_00000000000000000000000000000001", "default").
	InstanceUUID, WorkspaceUUID string
	// Bots LangBot knows (get_bots, get_bot_info, send_message); default one
	// bot "bot-1".
	Bots []Bot
	// LLMModels are the LLM model uuids LangBot lists (get_llm_models);
	// none by default, so invoke_llm finds no model. invoke_llm with a
	// listed model answers FakeLLMAnswer unless SetHostReply scripts it.
	LLMModels []string
	// Env is added to the runtime process's environment.
	Env []string
	// WorkDir holds one working directory per launch of the runtime
	// (Start: a test temporary directory).
	WorkDir string
}

// Bot is a bot row as LangBot returns it.
type Bot struct {
	UUID, Name, Adapter, AccountID string
}

// Installation is one plugin installation as LangBot holds it.
type Installation struct {
	Author, Name string
	// Binding is the installation's current binding (its revision grows on
	// every Reconfigure).
	Binding binding.Binding
	Config  map[string]any
	Enabled bool
	archive []byte
}

// Scope returns the installation's scope text, instance.workspace.installation.
func (i *Installation) Scope() string {
	return i.Binding.InstanceUUID + "." + i.Binding.WorkspaceUUID + "." + i.Binding.InstallationUUID
}

// HostCall is one call of the runtime into LangBot.
type HostCall struct {
	Action  string
	Binding binding.Binding // the context it carried
	Data    json.RawMessage
	At      time.Time
}

// HostReply decides LangBot's answer to a host call: data, or an error
// whose text becomes the answer's message.
type HostReply func(c HostCall) (any, error)

// Runtime is a running SDK runtime with LangBot's side attached.
type Runtime struct {
	py   *Python
	opts Options

	mu       sync.Mutex
	proc     *process
	installs map[string]*Installation
	queries  map[int64]string // query_id -> bot_uuid, for get_bot_uuid
	calls    []HostCall
	uploads  map[string]*upload // files the runtime sends LangBot
	reply    map[string]HostReply
	query    int64
	logs     bytes.Buffer
}

type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	conn  *conn
	wait  chan struct{}
}

type upload struct {
	data  []byte
	total int
}

// Start starts the runtime and performs LangBot's handshake (see Launch);
// t.Cleanup stops it, printing the runtime's log when the test failed.
func Start(t testing.TB, py *Python, opts Options) *Runtime {
	t.Helper()
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := Launch(ctx, py, opts)
	if err != nil {
		t.Fatalf("runtimetest: start: %v", err)
	}
	t.Cleanup(func() {
		r.Close()
		if t.Failed() {
			t.Logf("runtime log (tail):\n%s", tail([]byte(r.Logs()), 6000))
		}
	})
	return r
}

// Launch starts the runtime under opts.WorkDir and performs LangBot's
// handshake: ping, set_runtime_config, the legacy binding's list and an
// empty reconcile. Close stops it.
func Launch(ctx context.Context, py *Python, opts Options) (*Runtime, error) {
	if opts.InstanceUUID == "" {
		opts.InstanceUUID = "instance_00000000000000000000000000000001"
	}
	if opts.WorkspaceUUID == "" {
		opts.WorkspaceUUID = "default"
	}
	if len(opts.Bots) == 0 {
		opts.Bots = []Bot{{UUID: "bot-1", Name: "Bot One", Adapter: "aiocqhttp", AccountID: "10001"}}
	}
	if opts.WorkDir == "" {
		return nil, errors.New("runtimetest: Options.WorkDir is required")
	}
	r := &Runtime{py: py, opts: opts, installs: map[string]*Installation{},
		queries: map[int64]string{}, uploads: map[string]*upload{}, reply: map[string]HostReply{}}
	if err := r.launch(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// launch starts the process and replays LangBot's connect sequence,
// installing every installation it holds (a reconnect).
func (r *Runtime) launch(ctx context.Context) error {
	// The runtime also opens a debug WebSocket listener; port 0 lets each
	// runtime's listener bind a free port of its own, so that tests can run
	// side by side (a port picked here could be taken before it binds).
	cmd := exec.Command(r.py.Exe, "-m", "langbot_plugin.cli.__init__", "rt", "-s", "--ws-debug-port", "0")
	// A fresh working directory (the runtime keeps its data/ there) on
	// every launch: a restarted runtime knows only what LangBot replays.
	dir, err := os.MkdirTemp(r.opts.WorkDir, "runtime-")
	if err != nil {
		return err
	}
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"), r.opts.Env...)
	cmd.Stderr = logWriter{r}
	// Its own process group, so that stop can end the workers it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, stdin: stdin, wait: make(chan struct{})}
	p.conn = newConn(stdin, r.serve)
	go func() {
		p.conn.read(stdout)
		_ = cmd.Wait()
		close(p.wait)
	}()
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()

	if _, err := r.call(ctx, nil, "__ping", map[string]any{}, timeoutPing); err != nil {
		return err
	}
	cfg := map[string]any{
		"runtime_identity": map[string]any{"instance_uuid": r.opts.InstanceUUID, "runtime_id": r.opts.InstanceUUID + ":plugin-runtime"},
		"worker_policy": map[string]any{"max_cpus": 1.0, "max_memory_mb": 512, "max_pids": 128, "max_open_files": 256,
			"max_file_size_mb": 512, "require_hard_limits": false},
		"runtime_profile": "oss_dev",
	}
	if _, err := r.call(ctx, nil, "set_runtime_config", cfg, timeoutPing); err != nil {
		return err
	}
	legacy := r.legacyBinding()
	if _, err := r.call(ctx, &legacy, "list_plugins", map[string]any{}, timeoutList); err != nil {
		return err
	}
	r.mu.Lock()
	var all []*Installation
	for _, in := range r.installs {
		all = append(all, in)
	}
	r.mu.Unlock()
	missing, err := r.reconcile(ctx, all)
	if err != nil {
		return err
	}
	for _, in := range all {
		if !missing[in.Binding.InstallationUUID] {
			continue
		}
		if err := r.apply(ctx, in, true); err != nil {
			return err
		}
	}
	return nil
}

// legacyBinding is the OSS bridge binding LangBot lists first (research 3.3).
func (r *Runtime) legacyBinding() binding.Binding {
	sum := sha256.Sum256([]byte("legacy"))
	return binding.Binding{InstanceUUID: r.opts.InstanceUUID, WorkspaceUUID: r.opts.WorkspaceUUID, PlacementGeneration: 1,
		InstallationUUID: "4626681b-425a-5ce2-97d3-b0d63a27198f", RuntimeRevision: 1, ArtifactDigest: hex.EncodeToString(sum[:])}
}

func (r *Runtime) reconcile(ctx context.Context, ins []*Installation) (map[string]bool, error) {
	entries := []map[string]any{}
	for _, in := range ins {
		entries = append(entries, map[string]any{"binding": in.Binding, "enabled": in.Enabled})
	}
	raw, err := r.call(ctx, nil, "reconcile_plugin_installations", map[string]any{"installations": entries}, timeoutReconcile)
	if err != nil {
		return nil, err
	}
	var ans struct {
		Missing []string `json:"missing_artifacts"`
		Failed  []any    `json:"failed_installations"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("runtimetest: reconcile answer: %w", err)
	}
	if len(ans.Failed) > 0 {
		return nil, fmt.Errorf("runtimetest: reconcile failed installations: %v", ans.Failed)
	}
	out := map[string]bool{}
	for _, id := range ans.Missing {
		out[id] = true
	}
	return out, nil
}

// Install uploads archive as a new installation of author/name with
// config, applies it and waits until the runtime reports it initialized,
// as LangBot's install does. Empty author and name are learnt from the
// worker's get_plugin_settings (LangBot reads them from the manifest).
func (r *Runtime) Install(ctx context.Context, archive []byte, author, name string, config map[string]any) (*Installation, error) {
	sum := sha256.Sum256(archive)
	in := &Installation{Author: author, Name: name, Config: config, Enabled: true, archive: archive,
		Binding: binding.Binding{InstanceUUID: r.opts.InstanceUUID, WorkspaceUUID: r.opts.WorkspaceUUID, PlacementGeneration: 1,
			InstallationUUID: newUUID(), RuntimeRevision: 1, ArtifactDigest: hex.EncodeToString(sum[:])}}
	if in.Config == nil {
		in.Config = map[string]any{}
	}
	r.mu.Lock()
	r.installs[in.Binding.InstallationUUID] = in
	var all []*Installation
	for _, x := range r.installs {
		all = append(all, x)
	}
	r.mu.Unlock()
	missing, err := r.reconcile(ctx, all)
	if err != nil {
		return nil, err
	}
	if !missing[in.Binding.InstallationUUID] {
		return nil, fmt.Errorf("runtimetest: reconcile did not ask for the artifact of %s", in.Binding.InstallationUUID)
	}
	if err := r.apply(ctx, in, true); err != nil {
		return nil, err
	}
	return in, nil
}

// apply uploads the artifact (when upload) and applies in's binding, then
// waits for initialized.
func (r *Runtime) apply(ctx context.Context, in *Installation, upload bool) error {
	data := map[string]any{"enabled": in.Enabled}
	if upload {
		key, err := r.uploadFile(ctx, in, in.archive, ".lbpkg")
		if err != nil {
			return err
		}
		data["artifact_file_key"] = key
	}
	raw, err := r.call(ctx, &in.Binding, "apply_plugin_installation", data, timeoutApply)
	if err != nil {
		return err
	}
	var ans struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil || ans.State != "starting" {
		return fmt.Errorf("runtimetest: apply answered %s", raw)
	}
	return r.WaitReady(ctx, in)
}

// WaitReady polls get_plugin_info until the installation is initialized
// (LangBot gives it 30 s).
func (r *Runtime) WaitReady(ctx context.Context, in *Installation) error {
	deadline := time.Now().Add(readyWait)
	for {
		r.mu.Lock()
		named := in.Author != ""
		r.mu.Unlock()
		if named {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("runtimetest: installation %s never asked for its settings in %v", in.Binding.InstallationUUID, readyWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	for {
		p, err := r.PluginInfo(ctx, in)
		if err != nil {
			return err
		}
		if p != nil && p.Status == "initialized" {
			return nil
		}
		if time.Now().After(deadline) {
			status := "absent"
			if p != nil {
				status = p.Status
			}
			return fmt.Errorf("runtimetest: %s/%s not initialized after %v (status %s)", in.Author, in.Name, readyWait, status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// uploadFile sends data by __file_chunk, each chunk acknowledged before the
// next, under in's binding; it returns the file key.
func (r *Runtime) uploadFile(ctx context.Context, in *Installation, data []byte, ext string) (string, error) {
	sum := sha256.Sum256(data)
	key := hex.EncodeToString(sum[:])[:16] + "-" + hex.EncodeToString(randomBytes(16)) + ext
	n := max(1, (len(data)+fileChunkBytes-1)/fileChunkBytes)
	for i := range n {
		part := data[i*fileChunkBytes : min(len(data), (i+1)*fileChunkBytes)]
		chunk := map[string]any{"file_key": key, "file_length": len(data), "chunk_base64": base64.StdEncoding.EncodeToString(part),
			"chunk_index": i, "chunk_amount": n, "chunk_size": len(part)}
		if _, err := r.call(ctx, &in.Binding, "__file_chunk", chunk, timeoutPing); err != nil {
			return "", err
		}
	}
	return key, nil
}

// Reconfigure saves a new config: the revision grows by one and the
// runtime restarts the worker under the new binding (apply without an
// artifact), as LangBot's config save does.
func (r *Runtime) Reconfigure(ctx context.Context, in *Installation, config map[string]any) error {
	r.mu.Lock()
	in.Config = config
	in.Binding.RuntimeRevision++
	r.mu.Unlock()
	return r.apply(ctx, in, false)
}

// Remove uninstalls in.
func (r *Runtime) Remove(ctx context.Context, in *Installation) error {
	_, err := r.call(ctx, &in.Binding, "remove_plugin_installation", map[string]any{}, timeoutApply)
	r.mu.Lock()
	delete(r.installs, in.Binding.InstallationUUID)
	r.mu.Unlock()
	return err
}

// Restart stops the runtime process and starts a new one, replaying every
// installation with its current binding, as LangBot does on a reconnect.
func (r *Runtime) Restart(ctx context.Context) error {
	r.Close()
	return r.launch(ctx)
}

// Close stops the runtime and its workers.
func (r *Runtime) Close() {
	r.mu.Lock()
	p := r.proc
	r.proc = nil
	r.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.stdin.Close() // the runtime exits when LangBot's side of stdio closes
	select {
	case <-p.wait:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.wait
	}
	// Workers are the runtime's children; any left behind are ended by
	// the process group this runtime leads.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.conn.wg.Wait()
}

// Logs returns everything the runtime and its workers wrote to stderr.
func (r *Runtime) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

type logWriter struct{ r *Runtime }

func (w logWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.logs.Write(p)
}

// Call sends action with data under in's binding (none when in is nil) and
// returns the answer's data; an error answer is an *ActionError.
func (r *Runtime) Call(ctx context.Context, in *Installation, action string, data any) (json.RawMessage, error) {
	var b *binding.Binding
	if in != nil {
		bb := in.Binding
		b = &bb
	}
	return r.call(ctx, b, action, data, timeoutInvoke)
}

// CallWithBinding is Call with an explicit binding (a stale one, say).
func (r *Runtime) CallWithBinding(ctx context.Context, b binding.Binding, action string, data any) (json.RawMessage, error) {
	return r.call(ctx, &b, action, data, timeoutInvoke)
}

func (r *Runtime) call(ctx context.Context, b *binding.Binding, action string, data any, timeout time.Duration) (json.RawMessage, error) {
	resp, err := r.callFrame(ctx, b, action, data, timeout)
	return resp.Data, err
}

// callFrame is call's whole answer frame: its data and when it arrived.
func (r *Runtime) callFrame(ctx context.Context, b *binding.Binding, action string, data any, timeout time.Duration) (response, error) {
	var out response
	err := r.stream(ctx, b, action, data, timeout, func(resp response) bool {
		out = resp
		return false
	})
	return out, err
}

func (r *Runtime) stream(ctx context.Context, b *binding.Binding, action string, data any, timeout time.Duration, each func(response) bool) error {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p == nil {
		return errClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var bind json.RawMessage
	if b != nil {
		raw, err := json.Marshal(b)
		if err != nil {
			return err
		}
		bind = raw
	}
	return p.conn.call(ctx, action, data, bind, each)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return b
}

// newUUID returns a random version-4 UUID in its text form.
func newUUID() string {
	b := randomBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
