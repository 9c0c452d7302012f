package deploy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"sigs.k8s.io/yaml"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/wire"
)

// The Compose deployment (compose/): what an operator runs next to
// LangBot's own compose. These tests load it with the Compose
// specification's Go library, as docker compose does, and check the
// deployment policy on the loaded model; each policy rule is also shown to
// fail on a copy with that fault injected.

const (
	composeDir      = "compose"
	accountsConf    = "k8s/base/nats/accounts.conf"
	natsEnvDir      = "/run/secrets/nats-env/"
	ourImagesPrefix = "ghcr.io/langbot-nats/"
)

// composeCopy is a copy of the deployment laid out as in the repository
// (deploy/compose next to deploy/k8s), with the generator's secrets and
// .env written, so that faults can be injected without touching the tree.
type composeCopy struct {
	root    string // the copy's deploy/
	dir     string // the copy's deploy/compose
	secrets string
	envFile string
}

func newComposeCopy(t *testing.T) *composeCopy {
	t.Helper()
	c := &composeCopy{root: filepath.Join(t.TempDir(), "deploy")}
	c.dir = filepath.Join(c.root, composeDir)
	c.secrets = filepath.Join(c.dir, "secrets")
	c.envFile = filepath.Join(c.dir, ".env")
	for _, f := range []string{"compose/compose.yaml", "compose/nats.conf", "compose/gen-secrets.sh", accountsConf} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(c.root, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.generate(t)
	return c
}

// generate runs the shipped generator as an operator would (no arguments:
// secrets/ and .env next to compose.yaml) and returns its output.
func (c *composeCopy) generate(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("sh", filepath.Join(c.dir, "gen-secrets.sh"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TZ=Asia/Shanghai"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gen-secrets.sh: %v\n%s", err, out)
	}
	return string(out)
}

func (c *composeCopy) composeYAML(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// loadCompose loads content as "docker compose -f compose.yaml" in dir
// would, with env as the operator's environment and .env file: schema
// validation, interpolation, path resolution and the library's consistency
// checks (every service's volumes, secrets, configs and networks declared).
func loadCompose(ctx context.Context, dir string, content []byte, env map[string]string) (*types.Project, error) {
	return loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml"), Content: content}},
		Environment: env,
	}, func(o *loader.Options) { o.SetProjectName("langbot-plugins", true) })
}

// validateCompose loads content and checks the deployment policy; it
// returns every violation found.
func validateCompose(ctx context.Context, dir string, content []byte, env map[string]string) error {
	p, err := loadCompose(ctx, dir, content, env)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	exists := func(kind, name, path string) {
		if path == "" {
			bad("%s %s: no file", kind, name)
		} else if st, err := os.Stat(path); err != nil || st.IsDir() {
			bad("%s %s: file %s does not exist", kind, name, path)
		}
	}
	for name, s := range p.Secrets {
		if s.External || s.Environment != "" || s.Content != "" {
			bad("secret %s: must be a file written by gen-secrets.sh", name)
		}
		exists("secret", name, s.File)
	}
	for name, c := range p.Configs {
		exists("config", name, c.File)
	}
	for name, n := range p.Networks {
		if n.External && n.Name == "" {
			bad("network %s: external without a name", name)
		}
	}

	// One-shot services: what others wait for with
	// service_completed_successfully. They exit, so they have no health
	// check, and they restart on failure only.
	oneShot := map[string]bool{}
	for _, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionCompletedSuccessfully {
				oneShot[dep] = true
			}
		}
	}
	if len(p.Services) == 0 {
		bad("no services")
	}
	for name, s := range p.Services {
		if err := checkImage(s.Image); err != nil {
			bad("service %s: %v", name, err)
		}
		if s.Build != nil {
			bad("service %s: builds an image; the deployment runs published images", name)
		}
		switch {
		case oneShot[name]:
			if s.Restart != types.RestartPolicyOnFailure {
				bad("service %s (one-shot): restart %q, want on-failure", name, s.Restart)
			}
		case s.Restart != types.RestartPolicyUnlessStopped && s.Restart != types.RestartPolicyAlways:
			bad("service %s: restart %q, want unless-stopped or always", name, s.Restart)
		}
		if !oneShot[name] {
			hc := s.HealthCheck
			switch {
			case hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] == "NONE":
				bad("service %s: no health check", name)
			case strings.HasPrefix(s.Image, ourImagesPrefix):
				// Our images are scratch: /app is the only executable.
				if strings.Join(hc.Test, " ") != "CMD /app -healthcheck" {
					bad("service %s: health check %q; the image has only /app (use CMD /app -healthcheck)", name, hc.Test)
				}
			case hc.Test[0] == "CMD-SHELL" && !strings.Contains(s.Image, "alpine"):
				bad("service %s: shell health check on an image without a known shell", name)
			}
			if hc != nil && (hc.Interval == nil || hc.Timeout == nil || hc.Retries == nil || hc.StartPeriod == nil) {
				bad("service %s: health check without interval, timeout, retries and start_period", name)
			}
		}
		if tz := s.Environment["TZ"]; tz == nil || *tz == "" {
			bad("service %s: TZ not set (from LANGBOT_TZ)", name)
		}
		if len(s.Networks) == 0 {
			bad("service %s: on no network", name)
		}
		// Named volumes are declared (the loader checks that); bind mounts
		// must point at something that exists.
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					bad("service %s: bind mount %s does not exist", name, v.Source)
				}
			}
		}
		// Every NAME_FILE under /run/secrets is a secret mounted there.
		mounted := map[string]bool{}
		for _, sec := range s.Secrets {
			target := sec.Target
			if target == "" {
				target = sec.Source
			}
			if !strings.HasPrefix(target, "/") {
				target = "/run/secrets/" + target
			}
			mounted[target] = true
		}
		for k, v := range s.Environment {
			if strings.HasSuffix(k, "_FILE") && v != nil && strings.HasPrefix(*v, "/run/secrets/") && !mounted[*v] {
				bad("service %s: %s=%s, but no secret is mounted there", name, k, *v)
			}
			if v != nil && regexp.MustCompile(`(?i)(password|_key)$`).MatchString(k) && !strings.HasSuffix(k, "_FILE") {
				bad("service %s: %s in the environment; use a secret and %s_FILE", name, k, k)
			}
		}
	}
	return errors.Join(errs...)
}

func readDotEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	env, err := dotenv.Read(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return env
}

func TestComposeValid(t *testing.T) {
	c := newComposeCopy(t)
	ctx := context.Background()
	env := readDotEnv(t, c.envFile)
	if env["LANGBOT_TZ"] != "Asia/Shanghai" {
		t.Errorf("generated .env: LANGBOT_TZ=%q, want the generator's zone Asia/Shanghai", env["LANGBOT_TZ"])
	}
	if err := validateCompose(ctx, c.dir, c.composeYAML(t), env); err != nil {
		t.Fatal(err)
	}
	// The repository's own file, not only the copy: what "docker compose
	// config" would see once gen-secrets.sh has run.
	p, err := loadCompose(ctx, c.dir, c.composeYAML(t), env)
	if err != nil {
		t.Fatal(err)
	}

	names := p.ServiceNames()
	sort.Strings(names)
	want := []string{"langbot-githubkit", "langbot-nats", "langbot-schenotify", "langbot-setup", "langbot-takeover"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("services %v, want the documented %v", names, want)
	}
	// The names docs/operations.md uses.
	if n := p.Networks["langbot-plugins"]; n.Name != "langbot-plugins" || bool(n.External) {
		t.Errorf("network langbot-plugins = %+v, want the deployment's own, named langbot-plugins", n)
	}
	if v := p.Volumes["langbot-nats-data"]; v.Name != "langbot-nats-data" {
		t.Errorf("volume langbot-nats-data named %q, want langbot-nats-data", v.Name)
	}
	// Only NATS joins LangBot's network, under the documented default name.
	lb, ok := p.Networks["langbot"]
	if !ok || !bool(lb.External) || lb.Name != "docker_langbot_network" {
		t.Errorf("network langbot = %+v, want external docker_langbot_network", lb)
	}
	for name, s := range p.Services {
		_, onLangBot := s.Networks["langbot"]
		if onLangBot != (name == "langbot-nats") {
			t.Errorf("service %s on LangBot's network: %v", name, onLangBot)
		}
		if got := *s.Environment["TZ"]; got != "Asia/Shanghai" {
			t.Errorf("service %s: TZ=%q, want LANGBOT_TZ", name, got)
		}
	}
	// Without LANGBOT_TZ every container falls back to UTC.
	p2, err := loadCompose(ctx, c.dir, c.composeYAML(t), map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range p2.Services {
		if got := *s.Environment["TZ"]; got != "UTC" {
			t.Errorf("service %s without LANGBOT_TZ: TZ=%q, want UTC", name, got)
		}
	}

	// The plugin images are the ones Kubernetes deploys, at the same tag;
	// NATS is the same server image.
	m := render(t, "k8s/overlays/prod")
	for _, svc := range services {
		d := m.deployments[svc]
		if d == nil {
			t.Fatalf("no Deployment %s", svc)
		}
		if got, want := p.Services["langbot-"+svc].Image, d.Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("langbot-%s image %s, Kubernetes deploys %s", svc, got, want)
		}
	}
	if got, want := p.Services["langbot-nats"].Image, m.statefulSets["nats"].Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("langbot-nats image %s, Kubernetes runs %s", got, want)
	}

	checkComposeNATS(t, c, p)
}

// accountsUsers returns each user of the shipped accounts file with the
// variable its password is read from.
func accountsUsers(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(accountsConf)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]string{}
	for _, sm := range regexp.MustCompile(`(?m)^\s*user:\s*(\S+)\s*\n\s*password:\s*\$([A-Z0-9_]+)\s*$`).FindAllStringSubmatch(string(b), -1) {
		users[sm[1]] = sm[2]
	}
	if len(users) < 5 {
		t.Fatalf("accounts.conf: found users %v, want at least host, the three services and admin", users)
	}
	return users
}

// checkComposeNATS proves the NATS side end to end: the server loads the
// deployment's nats.conf with accounts.conf and the generated secrets
// exported exactly as the container's entrypoint does; JetStream syncs
// every write and stores on the named volume; every user of accounts.conf
// logs in with its generated password, and a wrong one is refused.
func checkComposeNATS(t *testing.T, c *composeCopy, p *types.Project) {
	nats0 := p.Services["langbot-nats"]
	exported := map[string]string{} // variable -> secret
	for _, s := range nats0.Secrets {
		if v, ok := strings.CutPrefix(s.Target, natsEnvDir); ok {
			exported[v] = s.Source
			if s.Source != strings.ToLower(v) {
				t.Errorf("langbot-nats: secret %s exported as %s; the generator names the file after the variable", s.Source, v)
			}
		}
	}
	users := accountsUsers(t)
	for user, v := range users {
		if _, ok := exported[v]; !ok {
			t.Errorf("accounts.conf user %s reads $%s, which langbot-nats does not export (add the secret to compose.yaml and gen-secrets.sh)", user, v)
		}
	}
	// The plugin services log in as their own users with their own secret.
	for _, svc := range services {
		s := p.Services["langbot-"+svc]
		if u := s.Environment["NATS_USER"]; u == nil || *u != svc {
			t.Errorf("langbot-%s: NATS_USER is not %s", svc, svc)
		}
		if f := s.Environment["NATS_PASSWORD_FILE"]; f == nil || *f != "/run/secrets/"+strings.ToLower(users[svc]) {
			t.Errorf("langbot-%s: NATS_PASSWORD_FILE is not the secret of $%s", svc, users[svc])
		}
	}

	var dataTarget string
	for _, v := range nats0.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Source == "langbot-nats-data" {
			dataTarget = v.Target
		}
	}
	if dataTarget == "" {
		t.Fatal("langbot-nats: the named volume langbot-nats-data is not mounted")
	}

	// The container's layout: nats.conf and accounts.conf side by side.
	etc := t.TempDir()
	for _, cf := range nats0.Configs {
		src := p.Configs[cf.Source].File
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(etc, filepath.Base(cf.Target)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	passwords := map[string]string{}
	for v, secret := range exported {
		b, err := os.ReadFile(p.Secrets[secret].File)
		if err != nil {
			t.Fatal(err)
		}
		val := strings.TrimSuffix(string(b), "\n")
		t.Setenv(v, val)
		passwords[v] = val
	}
	opts, err := server.ProcessConfigFile(filepath.Join(etc, "nats.conf"))
	if err != nil {
		t.Fatalf("compose nats.conf with generated secrets: %v", err)
	}
	if !opts.JetStream || !opts.SyncAlways {
		t.Errorf("JetStream %v, sync_interval always %v: want both", opts.JetStream, opts.SyncAlways)
	}
	// issue 33 (bus.MaxPendingFor in the main module; docs/operations.md)
	if want := 8*int64(opts.MaxPayload) + 64<<20; opts.MaxPending < want {
		t.Errorf("max_pending %d, want at least 8 x max_payload + 64 MiB = %d", opts.MaxPending, want)
	}
	if !strings.HasPrefix(opts.StoreDir, dataTarget+"/") {
		t.Errorf("store_dir %s is not on the volume mounted at %s", opts.StoreDir, dataTarget)
	}
	if opts.NoAuthUser != "" {
		t.Errorf("no_auth_user %q: unauthenticated clients must be refused", opts.NoAuthUser)
	}
	opts.StoreDir = t.TempDir()
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", server.RANDOM_PORT, 0
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	for user, v := range users {
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, passwords[v]), nats.Timeout(5*time.Second))
		if err != nil {
			t.Errorf("user %s with its generated password: %v", user, err)
			continue
		}
		if err := nc.Flush(); err != nil {
			t.Errorf("user %s: %v", user, err)
		}
		nc.Close()
	}
	checkComposeTenant(t, p, s.ClientURL(), passwords)
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("host", "p"+hex.EncodeToString(b))); err == nil {
		nc.Close()
		t.Error("a wrong password was accepted")
	}
	if nc, err := nats.Connect(s.ClientURL()); err == nil {
		nc.Close()
		t.Error("a client without credentials was accepted")
	}
}

// TestComposeGenerator: one file per declared secret in the formats the
// consumers parse, no secret on its output, kept on a rerun, and fresh
// values on another host.
func TestComposeGenerator(t *testing.T) {
	c := newComposeCopy(t)
	var y struct {
		Secrets map[string]struct{ File string } `json:"secrets"`
	}
	if err := yaml.Unmarshal(c.composeYAML(t), &y); err != nil {
		t.Fatal(err)
	}
	if len(y.Secrets) == 0 {
		t.Fatal("compose.yaml declares no secrets")
	}
	first := map[string]string{}
	password := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{31,}$`)
	stateKey := regexp.MustCompile(`^([A-Za-z0-9_-]{1,32})=([A-Za-z0-9+/]+=*)$`)
	for name, s := range y.Secrets {
		if s.File != "./secrets/"+name {
			t.Errorf("secret %s: file %s, want ./secrets/%s", name, s.File, name)
			continue
		}
		path := filepath.Join(c.secrets, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("secret %s: gen-secrets.sh wrote no file: %v", name, err)
			continue
		}
		if st.Mode().Perm()&0o022 != 0 {
			t.Errorf("secret %s: mode %v is writable by others", name, st.Mode())
		}
		b, _ := os.ReadFile(path)
		v := strings.TrimSuffix(string(b), "\n")
		first[name] = v
		switch {
		case strings.HasSuffix(name, "_password"), name == "jetstream_key":
			if !password.MatchString(v) {
				t.Errorf("secret %s: not a password the NATS config accepts from the environment", name)
			}
		case strings.HasSuffix(name, "_state_key"):
			sm := stateKey.FindStringSubmatch(v)
			if sm == nil {
				t.Errorf("secret %s: not <id>=<base64 key>", name)
			} else if k, err := base64.StdEncoding.DecodeString(sm[2]); err != nil || len(k) != 32 {
				t.Errorf("secret %s: key is not 32 bytes of base64", name)
			}
		case name == "console_key":
			if k, err := base64.StdEncoding.DecodeString(v); err != nil || len(k) < 32 {
				t.Errorf("secret %s: not base64 of at least 32 bytes", name)
			}
		case name == "auth_issuer":
			if !nkeys.IsValidPublicAccountKey(v) {
				t.Errorf("secret %s: not a public account nkey", name)
			}
		case name == "auth_issuer_seed":
			kp, err := nkeys.FromSeed([]byte(v))
			if err != nil {
				t.Errorf("secret %s: not an nkey seed: %v", name, err)
				break
			}
			pub, _ := kp.PublicKey()
			if b, _ := os.ReadFile(filepath.Join(c.secrets, "auth_issuer")); pub != strings.TrimSpace(string(b)) {
				t.Errorf("secret %s: its public key is not auth_issuer", name)
			}
		case name == "tenant_first_secret":
			if !regexp.MustCompile(`^s[0-9a-f]{64}$`).MatchString(v) {
				t.Errorf("secret %s: not s and 64 hex digits", name)
			}
		default:
			t.Errorf("secret %s: the test does not know its format", name)
		}
	}
	if st, err := os.Stat(c.secrets); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("secrets directory: %v %v, want mode 0700", st.Mode(), err)
	}

	out := c.generate(t)
	for name, v := range first {
		b, _ := os.ReadFile(filepath.Join(c.secrets, name))
		if strings.TrimSuffix(string(b), "\n") != v {
			t.Errorf("secret %s changed on a rerun; stored data would become unreadable", name)
		}
		if strings.Contains(out, v) {
			t.Errorf("gen-secrets.sh printed the secret %s", name)
		}
	}
	if !strings.Contains(out, "kept") {
		t.Errorf("rerun output does not say the files were kept:\n%s", out)
	}

	other := newComposeCopy(t)
	for name, v := range first {
		b, _ := os.ReadFile(filepath.Join(other.secrets, name))
		if strings.TrimSuffix(string(b), "\n") == v {
			t.Errorf("secret %s is the same on two hosts: not generated", name)
		}
	}
}

// TestComposeFaults injects one fault at a time into a copy and expects
// validateCompose to report it.
func TestComposeFaults(t *testing.T) {
	c := newComposeCopy(t)
	ctx := context.Background()
	env := readDotEnv(t, c.envFile)
	if err := validateCompose(ctx, c.dir, c.composeYAML(t), env); err != nil {
		t.Fatalf("the unmodified copy fails: %v", err)
	}
	svc := func(m map[string]any, name string) map[string]any {
		return m["services"].(map[string]any)[name].(map[string]any)
	}
	tests := []struct {
		name  string
		edit  func(m map[string]any)             // on the parsed compose.yaml
		files func(t *testing.T, c *composeCopy) // on the copy's files
		want  string
	}{
		{name: "missing volume", want: "langbot-nats-data",
			edit: func(m map[string]any) { delete(m, "volumes") }},
		{name: "unpinned image", want: "no tag",
			edit: func(m map[string]any) { svc(m, "langbot-takeover")["image"] = "ghcr.io/langbot-nats/takeover" }},
		{name: "latest image", want: "not a pinned version",
			edit: func(m map[string]any) { svc(m, "langbot-nats")["image"] = "nats:latest" }},
		{name: "missing health check", want: "langbot-schenotify: no health check",
			edit: func(m map[string]any) { delete(svc(m, "langbot-schenotify"), "healthcheck") }},
		{name: "disabled health check", want: "langbot-nats: no health check",
			edit: func(m map[string]any) { svc(m, "langbot-nats")["healthcheck"] = map[string]any{"disable": true} }},
		{name: "health check needing a shell", want: "the image has only /app",
			edit: func(m map[string]any) {
				svc(m, "langbot-githubkit")["healthcheck"].(map[string]any)["test"] = "wget -q -O- http://127.0.0.1:8080/readyz"
			}},
		{name: "missing restart policy", want: "langbot-githubkit: restart",
			edit: func(m map[string]any) { delete(svc(m, "langbot-githubkit"), "restart") }},
		{name: "missing secret declaration", want: "console_key",
			edit: func(m map[string]any) { delete(m["secrets"].(map[string]any), "console_key") }},
		{name: "secret not mounted", want: "LANGBOT_STATE_KEY_FILE",
			edit: func(m map[string]any) { svc(m, "langbot-githubkit")["secrets"] = []any{"githubkit_password"} }},
		{name: "missing secret file", want: "takeover_state_key",
			files: func(t *testing.T, c *composeCopy) {
				if err := os.Remove(filepath.Join(c.secrets, "takeover_state_key")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "missing config file", want: "accounts.conf",
			files: func(t *testing.T, c *composeCopy) {
				if err := os.Remove(filepath.Join(c.root, accountsConf)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "secret in the environment", want: "NATS_PASSWORD in the environment",
			edit: func(m map[string]any) {
				svc(m, "langbot-schenotify")["environment"].(map[string]any)["NATS_PASSWORD"] = "x"
			}},
		{name: "no TZ", want: "TZ not set",
			edit: func(m map[string]any) { delete(svc(m, "langbot-setup")["environment"].(map[string]any), "TZ") }},
		{name: "undeclared network", want: "langbot",
			edit: func(m map[string]any) { delete(m["networks"].(map[string]any), "langbot") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newComposeCopy(t)
			content := fc.composeYAML(t)
			if tt.edit != nil {
				var m map[string]any
				if err := yaml.Unmarshal(content, &m); err != nil {
					t.Fatal(err)
				}
				tt.edit(m)
				b, err := yaml.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				content = b
			}
			if tt.files != nil {
				tt.files(t, fc)
			}
			err := validateCompose(ctx, fc.dir, content, env)
			if err == nil {
				t.Fatal("validation passed")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not name %q: %v", tt.want, err)
			}
		})
	}
}

// checkComposeTenant runs the tenant path on the Compose NATS with the
// generated secrets: langbot-setup's lbctl setup (as host) creates the
// lifecycle stream, the tenant bucket and t-first from
// tenant_first_secret, a service answers
// logins with auth_issuer_seed (whose public key NATS has as AUTH_ISSUER),
// and a LangBot package logs in with what gen-secrets.sh says goes in the
// form.
func checkComposeTenant(t *testing.T, p *types.Project, url string, passwords map[string]string) {
	t.Helper()
	read := func(secret string) string {
		b, err := os.ReadFile(p.Secrets[secret].File)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	host, err := bus.Connect(ctx, bus.ConnConfig{URL: url, User: "host", Password: passwords["HOST_PASSWORD"]})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	js, err := jetstream.New(host)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.EnsureLifecycleStream(ctx, js, wire.Subjects{}, 1); err != nil {
		t.Fatalf("setup: lifecycle stream: %v", err)
	}
	kv, err := bus.EnsureTenantBucket(ctx, js, 1)
	if err != nil {
		t.Fatalf("setup: tenant bucket: %v", err)
	}
	if _, _, err := bus.IssueTenant(ctx, kv, bus.IssueRequest{Name: bus.FirstTenant, Claim: true, Secret: read("tenant_first_secret"), IfBucketNew: true}, time.Now()); err != nil {
		t.Fatalf("setup: first tenant: %v", err)
	}
	svc, err := bus.Connect(ctx, bus.ConnConfig{URL: url, User: "takeover", Password: passwords["TAKEOVER_PASSWORD"]})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ac, err := bus.NewAuthCallout(bus.AuthCalloutConfig{Conn: svc, IssuerSeed: read("auth_issuer_seed"), Account: "LANGBOT"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ac.Stop(context.Background()) }()
	sc, err := binding.ParseScope("inst-compose.default.ins-1")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.UserInfo(bus.FirstTenant, read("tenant_first_secret")), nats.Name(wire.PackageConnName("takeover", sc)),
		nats.CustomInboxPrefix(wire.InboxPrefixFor(bus.FirstTenant)), nats.Timeout(10*time.Second))
	if err != nil {
		t.Fatalf("t-first with tenant_first_secret: %v", err)
	}
	defer nc.Close()
	tjs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tjs.Publish(ctx, wire.Subjects{}.Lifecycle("takeover", wire.LifecycleAttach, sc), []byte(`{}`)); err != nil {
		t.Fatalf("t-first attach: %v", err)
	}
}
