package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/langbot-nats/plugins/pkg/bus"
	"github.com/langbot-nats/plugins/pkg/natsembed"
)

// accountsConf is deploy/k8s/base/nats/accounts.conf, the deployment's
// NATS accounts (natsembed keeps the copy lbctl dev uses too).
var accountsConf = natsembed.Accounts

// Files of the data directory.
const (
	credentialsFile = "credentials.json"
	stateKeyFile    = "state.key"
	consoleKeyFile  = "console.key"
	authIssuerFile  = "auth-issuer.seed"
	storeDir        = "jetstream"
)

// tenantSecret returns the secret of a tenant credential kept in the
// credentials file (only the first tenant's is: lbctl tenant issue prints
// the others once), generating and storing it on first use.
func tenantSecret(dir, tenant string) (string, error) {
	path := filepath.Join(dir, credentialsFile)
	stored := map[string]string{}
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &stored); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	if v, ok := stored[tenant]; ok {
		return v, nil
	}
	v, err := bus.NewTenantSecret()
	if err != nil {
		return "", err
	}
	stored[tenant] = v
	raw, err = json.MarshalIndent(stored, "", "  ")
	if err != nil {
		return "", err
	}
	return v, writeSecret(path, append(raw, '\n'))
}

// storedTenants returns the tenant credentials kept in the credentials
// file, by name.
func storedTenants(dir string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, credentialsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	stored := map[string]string{}
	if err := json.Unmarshal(raw, &stored); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range stored {
		if bus.CheckTenantName(k) == nil {
			out[k] = v
		}
	}
	return out, nil
}

// legacyBlock is the legacy package user's block in accounts.conf, from its
// comment to the block that follows it, and legacyAuthUser its entry in
// auth_users: withoutLegacyUser cuts both.
const (
	legacyBlockStart = "    {\n      # LEGACY:"
	legacyBlockEnd   = "    {\n      # Operators only"
	legacyAuthUser   = " langbot_pkg,"
)

// withoutLegacyUser returns the accounts without the shared legacy user
// langbot_pkg, for -legacy-pkg-user=false.
func withoutLegacyUser(conf string) (string, error) {
	i := strings.Index(conf, legacyBlockStart)
	j := strings.Index(conf, legacyBlockEnd)
	if i < 0 || j < i || strings.Count(conf, legacyAuthUser) != 1 {
		return "", errors.New("the embedded accounts do not have the legacy user's block where expected")
	}
	return strings.Replace(conf[:i]+conf[j:], legacyAuthUser, "", 1), nil
}

// accountUser is one user of accountsConf and the variable its password
// is read from.
type accountUser = natsembed.AccountUser

// accountUsers lists the users of the embedded accounts, in file order.
func accountUsers() ([]accountUser, error) { return usersOf(accountsConf) }

// usersOf lists the users of an accounts file, in file order.
func usersOf(conf string) ([]accountUser, error) {
	out := natsembed.AccountUsers(conf)
	if len(out) == 0 {
		return nil, errors.New("the embedded accounts name no user")
	}
	return out, nil
}

func userNames(us []accountUser) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}

// passwordRe is what the NATS config parser reads back unchanged from an
// environment value (see accounts.conf).
var passwordRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{15,}$`)

func newPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "p" + hex.EncodeToString(b), nil
}

// loadCredentials returns every user's password: from its environment
// variable when set, else from the data directory's credentials file,
// which is created (mode 0600) or completed with generated passwords once
// and then only read.
func loadCredentials(dir string, users []accountUser, getenv func(string) string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, credentialsFile)
	stored := map[string]string{}
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &stored); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	changed := false
	out := map[string]string{}
	for _, u := range users {
		if v := getenv(u.Var); v != "" {
			if !passwordRe.MatchString(v) {
				return nil, fmt.Errorf("%s: a password must start with a letter and have at least 16 of [A-Za-z0-9_-]", u.Var)
			}
			out[u.Name] = v
			continue
		}
		pw, ok := stored[u.Name]
		if !ok {
			if pw, err = newPassword(); err != nil {
				return nil, err
			}
			stored[u.Name] = pw
			changed = true
		}
		if !passwordRe.MatchString(pw) {
			return nil, fmt.Errorf("%s: the password of %s is malformed", path, u.Name)
		}
		out[u.Name] = pw
	}
	if changed {
		raw, err := json.MarshalIndent(stored, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := writeSecret(path, append(raw, '\n')); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadKey returns the key kept in the data directory's file, generating
// it with gen on first use.
func loadKey(dir, file string, gen func() (string, error)) (string, error) {
	path := filepath.Join(dir, file)
	raw, err := os.ReadFile(path)
	if err == nil {
		if k := strings.TrimSpace(string(raw)); k != "" {
			return k, nil
		}
		return "", fmt.Errorf("%s is empty", path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	k, err := gen()
	if err != nil {
		return "", err
	}
	return k, writeSecret(path, []byte(k+"\n"))
}

func newStateKey() (string, error) { return bus.NewKeyString("k1") }

func newConsoleKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// writeSecret writes a file readable by its owner only, through a
// temporary file so that a crash leaves the old one or the new one.
func writeSecret(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
