package bus

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/langbot-nats/plugins/pkg/wire"
)

// accountsTemplate is the accounts file around the users' permissions:
// the header, the legacy, admin and system users, and the auth callout.
//
//go:embed accounts.tmpl
var accountsTemplate string

// ErrAccounts reports service grants RenderAccounts cannot write.
var ErrAccounts = errors.New("bus: accounts")

// LegacyPackageGrants are the permissions of LegacyPackageUser under
// subjects s: a tenant's (Tenant.Grants) on every tenant's scopes.
func LegacyPackageGrants(s wire.Subjects) UserGrants {
	var inv []string
	for _, ep := range wire.Endpoints {
		inv = append(inv, s.InvocationTenant(ep, "*", "*"))
	}
	return UserGrants{User: LegacyPackageUser,
		Publish: []GrantGroup{
			{Why: "Invocations (request/reply): the four endpoints of any plugin,\nscope of three tokens.", Subjects: inv},
			{Why: "attach only, as a JetStream publish to " + wire.LifecycleStream + ": the\nstream's PubAck comes back on the inbox below, so no\n$JS.API subject is needed. The packages never revoke.",
				Subjects: []string{s.LifecycleTenant(wire.LifecycleAttach, "*", "*")}},
		},
		Subscribe: []GrantGroup{
			{Why: "Serve host actions (queue group per installation).", Subjects: []string{s.HostAll()}},
			{Why: "Replies to its own requests and the PubAcks of its attaches.", Subjects: []string{wire.InboxPrefixFor(LegacyPackageUser) + ".>"}},
		},
		Responses: "Answer the host actions it received (one reply each).",
	}
}

// With returns g with more groups appended to its publish and subscribe
// grants (the auth callout's, AuthCalloutGrants, for a service process).
func (g UserGrants) With(publish, subscribe []GrantGroup) UserGrants {
	g.Publish = append(append([]GrantGroup(nil), g.Publish...), publish...)
	g.Subscribe = append(append([]GrantGroup(nil), g.Subscribe...), subscribe...)
	return g
}

// PasswordVar is the environment variable an accounts file user's password
// is read from: "<USER>_PASSWORD".
func PasswordVar(user string) string { return strings.ToUpper(user) + "_PASSWORD" }

// RenderAccounts writes the deployment's NATS accounts file
// (deploy/k8s/base/nats/accounts.conf) for subjects s: the host, the
// given service users (Runner.Grants with AuthCalloutGrants, in order),
// the legacy package user, the operators' users and the auth callout,
// whose auth_users lists every user of the file. A user named like
// another, or not a plain NATS user name, is refused.
func RenderAccounts(s wire.Subjects, services []UserGrants) ([]byte, error) {
	s, err := wire.NewSubjects(s.Prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAccounts, err)
	}
	host, legacy := HostGrants(s), LegacyPackageGrants(s)
	var list []string
	for _, g := range services {
		list = append(list, g.User)
	}
	tmpl, err := template.New("accounts").Funcs(template.FuncMap{
		"user": func(g UserGrants) string { return "    {\n" + userBody(g) + "    }\n" },
		"body": userBody,
	}).Parse(accountsTemplate)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAccounts, err)
	}
	var b bytes.Buffer
	err = tmpl.Execute(&b, map[string]any{
		"Account":         TenantAccount,
		"Prefix":          s.Prefix,
		"Invocations":     s.InvocationsAll(),
		"HostAll":         s.HostAll(),
		"LifecycleStream": wire.LifecycleStream,
		"TenantBucket":    TenantBucket,
		"TenantPrefix":    TenantNamePrefix,
		"ServiceList":     strings.Join(list, ", "),
		"Host":            host,
		"Services":        services,
		"Legacy":          legacy,
		"AuthUsers":       authUsersMark,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAccounts, err)
	}
	// every user of the file logs in with its password: a user left out
	// of auth_users would be sent to the callout
	var names []string
	seen := map[string]bool{}
	for _, m := range userLineRE.FindAllSubmatch(b.Bytes(), -1) {
		n := string(m[1])
		if !pluginRE.MatchString(n) || seen[n] {
			return nil, fmt.Errorf("%w: user %q: want a unique name of [a-z0-9_]", ErrAccounts, n)
		}
		seen[n] = true
		names = append(names, n)
	}
	return bytes.Replace(b.Bytes(), []byte(authUsersMark), []byte(strings.Join(names, ", ")), 1), nil
}

// authUsersMark stands for the auth_users list until every user is known.
const authUsersMark = "<auth users>"

// userLineRE finds the users of an accounts file.
var userLineRE = regexp.MustCompile(`(?m)^\s*user:\s*(\S+)\s*$`)

// userBody writes the user, password and permissions lines of one user.
func userBody(g UserGrants) string {
	var b strings.Builder
	fmt.Fprintf(&b, "      user: %s\n      password: $%s\n      permissions: {\n", g.User, PasswordVar(g.User))
	for _, dir := range []struct {
		name   string
		groups []GrantGroup
	}{{"publish", g.Publish}, {"subscribe", g.Subscribe}} {
		fmt.Fprintf(&b, "        %s: {\n          allow: [\n", dir.name)
		for _, gr := range dir.groups {
			comment(&b, "            ", gr.Why)
			for _, subj := range gr.Subjects {
				fmt.Fprintf(&b, "            %q,\n", subj)
			}
		}
		b.WriteString("          ]\n        }\n")
	}
	if g.Responses != "" {
		comment(&b, "        ", g.Responses)
		b.WriteString("        allow_responses: true\n")
	}
	b.WriteString("      }\n")
	return b.String()
}

func comment(b *strings.Builder, indent, text string) {
	for line := range strings.SplitSeq(text, "\n") {
		fmt.Fprintf(b, "%s# %s\n", indent, line)
	}
}
