package lbpkg_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/lbpkg"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// forwarderScript runs a built package's forwarder (nats-py) with the
// config a LangBot form gives it, as a worker does: connect, attach, one
// command; it then serves host actions until stdin closes.
const forwarderScript = `
import asyncio, json, sys
sys.path[:0] = sys.argv[1:]
from langbot_nats import protocol as p
from langbot_nats.forwarder import Forwarder

async def main():
    cfg = json.loads(sys.stdin.readline())
    fw = Forwarder(p.load(), cfg.pop("binding"), cfg, None)
    fw.start()
    for _ in range(300):
        if fw.attach_acks:
            break
        await asyncio.sleep(0.1)
    print("ATTACHED", fw.attach_acks, flush=True)
    reply = await fw.request("command", {"name": "sche", "params": [], "full_text": "!sche"}, 10)
    print("REPLY", json.dumps(reply), flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await fw.close()

asyncio.run(main())
`

// TestForwarderTenantCredential: the package's own NATS client, nats-py,
// logs in with the claimable first tenant credential typed into the form
// (user, password; the inbox prefix _INBOX_<user> the forwarder sets), the
// login binds the credential to the package's instance, and everything a
// worker does works: attach (JetStream publish, PubAck on its inbox), an
// invocation, and answering a host action.
func TestForwarderTenantCredential(t *testing.T) {
	python, path := pythonEnv(t)
	srv := bustest.NewAccountsServer(t, "../../deploy/k8s/base/nats/accounts.conf")
	srv.StartAuthCallout(t, "schenotify")
	kv := srv.TenantBucket(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ten, secret, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: bus.FirstTenant, Claim: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	svc := srv.ConnAs(t, "schenotify")
	sub, err := svc.Subscribe("langbot.plugin.schenotify.command.>", func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"returns":[{"text":"served"}]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	var decl = declarations(t)[0]
	for _, d := range declarations(t) {
		if d.Plugin == "schenotify" {
			decl = d
		}
	}
	pkg, err := lbpkg.Build(decl, lbpkg.Options{WheelPath: wheelPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := pkg.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, append([]string{"-B", "-c", forwarderScript, dir}, path...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	form := `{"nats_url":"` + srv.URL() + `","nats_user":"` + ten.Name + `","nats_password":"` + secret + `",` +
		`"subject_prefix":"langbot","binding":{"instance_uuid":"inst-py","workspace_uuid":"default","placement_generation":1,` +
		`"installation_uuid":"ins-py1","runtime_revision":1,"artifact_digest":"` + strings.Repeat("a", 64) + `"}}` + "\n"
	if _, err := io.WriteString(stdin, form); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	next := func(want string) string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the forwarder stopped before %s", want)
		}
		if !strings.HasPrefix(lines.Text(), want) {
			t.Fatalf("forwarder: %q, want %s", lines.Text(), want)
		}
		return lines.Text()
	}
	if got := next("ATTACHED"); got == "ATTACHED 0" {
		t.Fatal("the attach was never acknowledged")
	}
	if got := next("REPLY"); !strings.Contains(got, "served") {
		t.Fatalf("invocation: %s", got)
	}
	got, _, err := bus.LookupTenant(ctx, kv, ten.Name)
	if err != nil || got.Instance != "inst-py" {
		t.Fatalf("after the package's login: %+v %v, want bound to inst-py", got, err)
	}
	// A host action reaches the worker's queue group and its answer comes
	// back (no runtime here: it answers 503, which is an answer).
	m, err := svc.RequestWithContext(ctx, "langbot.host.get_bots.inst-py.default.ins-py1",
		[]byte(`{"binding":{},"plugin":"schenotify","data":{}}`))
	if err != nil {
		t.Fatalf("host action: %v", err)
	}
	if m.Header.Get(wire.HeaderServiceError) == "" && len(m.Data) == 0 {
		t.Fatalf("host action: empty answer")
	}
	_ = stdin.Close()

	// Without a valid credential the package's log says which one to
	// issue, and never the password it was given.
	refused := exec.CommandContext(ctx, python, append([]string{"-B", "-c", refusedScript, dir}, path...)...)
	refused.Dir = dir
	refused.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	refused.Stdin = strings.NewReader(strings.Replace(form, secret, "sNotTheSecret0123456789abcdef", 1))
	out, err := refused.CombinedOutput()
	if err != nil {
		t.Fatalf("refused login run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "lbctl tenant issue --instance inst-py") || strings.Contains(string(out), "sNotTheSecret") {
		t.Fatalf("the package's log on a refused login:\n%s", out)
	}
}

// refusedScript starts a forwarder with the form on stdin for a few
// seconds, its log on stderr.
const refusedScript = `
import asyncio, json, sys
sys.path[:0] = sys.argv[1:]
from langbot_nats import protocol as p
from langbot_nats.forwarder import Forwarder

async def main():
    cfg = json.loads(sys.stdin.readline())
    fw = Forwarder(p.load(), cfg.pop("binding"), cfg, None)
    fw.start()
    await asyncio.sleep(3)
    await fw.close()

asyncio.run(main())
`
