package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
)

// AuthCallout is the NATS server's auth callout service for tenant
// credentials (DESIGN 7, docs/operations.md "Tenant credentials"). The
// server is in config mode: the deployment's own users (accounts.conf,
// listed in auth_users) log in as before, and every other login is sent to
// AuthCalloutSubject in the LANGBOT account. The responder checks the user
// and password against the tenant's record in TenantBucket and answers
// with a user JWT signed by the issuer key, placed in the LANGBOT account,
// whose permissions are the tenant's grants (Subjects.TenantGrants) and
// nothing else. An unknown user, a wrong secret or a record it cannot read
// is refused.
//
// Every replica of every service runs one in a queue group, so a login
// works while any service is up. It reads the record on every login, so a
// revoked tenant cannot log in again once its record is gone; its open
// connections are closed by KickUser.
//
// The tenant's JWT does not expire: nats-py closes a connection for good
// when its JWT expires (it reconnects only after a network error), so an
// expiry would stop the LangBot package.
type AuthCallout struct {
	cfg AuthCalloutConfig
	js  jetstream.JetStream

	kvMu sync.Mutex
	kv   jetstream.KeyValue // bound on first use: lbctl setup creates it

	mu     sync.Mutex
	sub    *nats.Subscription
	work   sync.WaitGroup
	sem    chan struct{}
	legacy Part
	logins *prometheus.CounterVec

	// refusedAt rate-limits the refusal log line per user: a revoked
	// package retries its login every second.
	refusedMu sync.Mutex
	refusedAt map[string]time.Time
}

// refusedLogEvery is how often a refusal of the same user is logged.
const refusedLogEvery = time.Minute

// maxRefusedUsers bounds refusedAt; past it the map starts over.
const maxRefusedUsers = 4096

// AuthCalloutConfig configures an AuthCallout.
type AuthCalloutConfig struct {
	Conn     *nats.Conn
	Subjects wire.Subjects
	// IssuerSeed is the seed of the account nkey ("SA...") whose public key
	// is the issuer of the server's auth_callout block.
	IssuerSeed string
	// Account is the account the tenants are placed in: TenantAccount.
	Account string
	Logger  *slog.Logger
	// Now is the clock (claims' issue time); nil: time.Now.
	Now func() time.Time
	// LegacyCheck is how often the responder looks for connections of
	// LegacyPackageUser and warns about them (at start, then at this
	// period); 0: every hour.
	LegacyCheck time.Duration
	// Registerer receives langbot_tenant_logins_total; nil: not exported.
	Registerer prometheus.Registerer
}

// TenantAccount is the account of accounts.conf that tenants are placed in.
const TenantAccount = "LANGBOT"

// AuthCalloutQueue is the queue group of the responders.
const AuthCalloutQueue = "langbot-auth"

// ErrIssuer reports an issuer seed that is not an account nkey seed.
var ErrIssuer = errors.New("bus: auth callout issuer")

// authWorkers bounds the logins handled at once by one responder: each
// reads a KV record, and the server gives a login its auth timeout.
const authWorkers = 16

// NewAuthCallout checks cfg; Start subscribes.
func NewAuthCallout(cfg AuthCalloutConfig) (*AuthCallout, error) {
	if cfg.Conn == nil {
		return nil, errors.New("bus: auth callout: no connection")
	}
	if _, err := IssuerPublicKey(cfg.IssuerSeed); err != nil {
		return nil, err
	}
	if cfg.Account == "" {
		return nil, errors.New("bus: auth callout: no account")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LegacyCheck <= 0 {
		cfg.LegacyCheck = time.Hour
	}
	a := &AuthCallout{cfg: cfg, sem: make(chan struct{}, authWorkers), refusedAt: map[string]time.Time{},
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "langbot_tenant_logins_total", Help: "Tenant logins answered by this process's auth callout responder, by outcome (accepted, claimed, refused).",
		}, []string{"outcome"})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(a.logins); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// IssuerPublicKey returns the public account key ("A...") of an issuer
// seed: what the server's auth_callout block names as issuer.
func IssuerPublicKey(seed string) (string, error) {
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(seed)))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrIssuer, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicAccountKey(pub) {
		return "", fmt.Errorf("%w: not an account key seed", ErrIssuer)
	}
	return pub, nil
}

// NewIssuerSeed returns a new account nkey seed for the auth callout.
func NewIssuerSeed() (string, error) {
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	return string(seed), err
}

// Start subscribes to AuthCalloutSubject. ctx bounds the setup only. The
// tenant bucket is bound when it is first needed: a service that starts
// before lbctl setup created it runs, and refuses tenant logins until then.
func (a *AuthCallout) Start(ctx context.Context) error {
	var err error
	if a.js, err = jetstream.New(a.cfg.Conn); err != nil {
		return err
	}
	bctx, cancel := withDefault(ctx)
	if _, err := a.bucket(bctx); err != nil {
		a.cfg.Logger.Warn("no tenant bucket yet: tenant logins are refused until lbctl setup creates it", "bucket", TenantBucket, "err", err)
	}
	cancel()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sub, err = a.cfg.Conn.QueueSubscribe(AuthCalloutSubject, AuthCalloutQueue, a.handle)
	if err != nil {
		return fmt.Errorf("bus: auth callout: %w", err)
	}
	fctx, cancel := withDefault(ctx)
	defer cancel()
	if err := a.cfg.Conn.FlushWithContext(fctx); err != nil {
		return err
	}
	a.legacy = Loop(a.warnLegacy)
	return a.legacy.Start(context.WithoutCancel(ctx))
}

// bucket returns the tenant bucket, binding it on first use.
func (a *AuthCallout) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	a.kvMu.Lock()
	defer a.kvMu.Unlock()
	if a.kv != nil {
		return a.kv, nil
	}
	kv, err := a.js.KeyValue(ctx, TenantBucket)
	if err != nil {
		return nil, err
	}
	a.kv = kv
	return kv, nil
}

// warnLegacy logs, at start and then every LegacyCheck, how many
// connections use the shared legacy user, naming the risk.
func (a *AuthCallout) warnLegacy(ctx context.Context) {
	for {
		n, err := CountUserConns(ctx, a.cfg.Conn, LegacyPackageUser)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			a.cfg.Logger.Debug("legacy user check failed", "err", err)
		case n > 0:
			a.cfg.Logger.Warn("LangBot packages log in as the shared legacy user: whoever holds its password can act as the host of every installation of every tenant; issue tenant credentials (lbctl tenant issue), put them in the plugin forms, then remove the user from accounts.conf (docs/operations.md, Tenant credentials)",
				"user", LegacyPackageUser, "connections", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.LegacyCheck):
		}
	}
}

// Stop unsubscribes and waits for the logins in hand, giving up when ctx
// is done.
func (a *AuthCallout) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.sub != nil {
		_ = a.sub.Unsubscribe()
		a.sub = nil
	}
	legacy := a.legacy
	a.legacy = nil
	a.mu.Unlock()
	if legacy != nil {
		if err := legacy.Stop(ctx); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	go func() { a.work.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ Part = (*AuthCallout)(nil)

// handle hands one request to a worker; a full pool drops it (the server
// refuses the login after its auth timeout and the client retries).
func (a *AuthCallout) handle(m *nats.Msg) {
	select {
	case a.sem <- struct{}{}:
	default:
		a.cfg.Logger.Warn("auth callout busy: login dropped")
		return
	}
	a.mu.Lock()
	if a.sub == nil { // stopping: Stop may be waiting for the work
		a.mu.Unlock()
		<-a.sem
		return
	}
	a.work.Add(1)
	a.mu.Unlock()
	go func() {
		defer a.work.Done()
		defer func() { <-a.sem }()
		a.answer(m)
	}()
}

func (a *AuthCallout) answer(m *nats.Msg) {
	log := a.cfg.Logger
	if m.Reply == "" {
		return
	}
	req, err := jwt.DecodeAuthorizationRequestClaims(string(m.Data))
	if err != nil {
		log.Warn("auth callout: bad request", "err", err)
		return
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(a.cfg.IssuerSeed)))
	if err != nil {
		log.Error("auth callout: issuer", "err", err)
		return
	}
	defer kp.Wipe()
	user := req.ConnectOptions.Username
	ujwt, claimed, reason := a.authorize(req, kp)
	resp := jwt.NewAuthorizationResponseClaims(req.UserNkey)
	resp.Audience = req.Server.ID
	resp.IssuedAt = a.cfg.Now().Unix()
	switch {
	case reason != "":
		// the client sees "Authorization Violation"; the reason is for the
		// operator (the server logs it too). Never the secret.
		a.logins.WithLabelValues("refused").Inc()
		if a.logRefusal(user, reason) {
			log.Warn("tenant login refused", "user", safeUser(user), "reason", reason, "client", req.ClientInformation.Host)
		}
		resp.Error = "not authorized"
	case claimed:
		a.logins.WithLabelValues("claimed").Inc()
		resp.Jwt = ujwt
	default:
		a.logins.WithLabelValues("accepted").Inc()
		resp.Jwt = ujwt
		log.Info("tenant login", "user", user, "client", req.ClientInformation.Host)
	}
	token, err := resp.Encode(kp)
	if err != nil {
		log.Error("auth callout: encode response", "err", err)
		return
	}
	if err := m.Respond([]byte(token)); err != nil {
		log.Warn("auth callout: respond", "err", err)
	}
}

// logRefusal reports whether a refusal of user for reason is logged now:
// once per refusedLogEvery for each user and reason.
func (a *AuthCallout) logRefusal(user, reason string) bool {
	key := safeUser(user) + "\x00" + reason
	now := a.cfg.Now()
	a.refusedMu.Lock()
	defer a.refusedMu.Unlock()
	if last, ok := a.refusedAt[key]; ok && now.Sub(last) < refusedLogEvery {
		return false
	}
	if len(a.refusedAt) >= maxRefusedUsers {
		clear(a.refusedAt)
	}
	a.refusedAt[key] = now
	return true
}

// safeUser is a user name fit for a log line: a tenant's name, or a note
// that it was not one (a mistyped password pasted as the user must not
// reach the log).
func safeUser(u string) string {
	if CheckTenantName(u) == nil {
		return u
	}
	return fmt.Sprintf("(not a tenant name, %d characters)", len(u))
}

// authorize checks the login and returns the tenant's user JWT and whether
// this login claimed the credential, or a reason for refusing it.
func (a *AuthCallout) authorize(req *jwt.AuthorizationRequestClaims, kp nkeys.KeyPair) (string, bool, string) {
	user, secret := req.ConnectOptions.Username, req.ConnectOptions.Password
	if CheckTenantName(user) != nil {
		return "", false, "not a tenant user"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	kv, err := a.bucket(ctx)
	if err != nil {
		return "", false, "no tenant bucket (lbctl setup creates it): " + err.Error()
	}
	t, rev, err := LookupTenant(ctx, kv, user)
	if errors.Is(err, ErrTenantNotFound) {
		return "", false, "no such tenant"
	}
	if err != nil {
		return "", false, "tenant record unreadable: " + err.Error()
	}
	if !t.matches(secret) {
		return "", false, "wrong secret"
	}
	claimed := t.Claimable()
	if claimed {
		if t, err = a.claim(ctx, kv, t, rev, req.ClientInformation.Name); err != nil {
			return "", false, err.Error()
		}
	}
	g, err := t.Grants(a.cfg.Subjects)
	if err != nil {
		return "", false, err.Error()
	}
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Name = t.Name // the server shows it as the connection's user
	uc.Audience = a.cfg.Account
	uc.IssuedAt = a.cfg.Now().Unix()
	uc.Pub.Allow.Add(g.Publish...)
	uc.Sub.Allow.Add(g.Subscribe...)
	uc.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	token, err := uc.Encode(kp)
	if err != nil {
		return "", false, "encode: " + err.Error()
	}
	return token, claimed, ""
}

// claim binds a claimable credential to the instance of the package that
// logs in with it (its connection name, PackageConnName), by CAS, so two
// first logins at once cannot bind it twice.
func (a *AuthCallout) claim(ctx context.Context, kv jetstream.KeyValue, t Tenant, rev uint64, connName string) (Tenant, error) {
	sc, err := wire.ParsePackageConnName(connName)
	if err != nil {
		return Tenant{}, errors.New("unclaimed credential: the first login must come from a LangBot package")
	}
	now := a.cfg.Now().UTC()
	t.Instance, t.ClaimedAt = sc.Instance(), &now
	raw, err := json.Marshal(t)
	if err != nil {
		return Tenant{}, err
	}
	if _, err := kv.Update(ctx, t.Name, raw, rev); err != nil {
		return Tenant{}, fmt.Errorf("claim: %w", err)
	}
	a.cfg.Logger.Info("tenant credential claimed", "user", t.Name, "instance", t.Instance)
	return t, nil
}
