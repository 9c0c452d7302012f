package wire

import (
	"fmt"
	"strings"

	"github.com/langbot-nats/plugins/pkg/binding"
)

// InboxPrefixFor returns the prefix of the reply subjects of a client that
// logs in as user: "_INBOX_<user>", so that the deployment can let each
// user subscribe only to its own replies (DESIGN 7), and NATS's "_INBOX"
// for a client without a user. The LangBot packages and bus.Connect use
// it, so both sides agree on what a tenant may subscribe to.
func InboxPrefixFor(user string) string {
	if user != "" {
		return "_INBOX_" + user
	}
	return "_INBOX"
}

// packageConnPrefix starts every PackageConnName.
const packageConnPrefix = "langbot-"

// PackageConnName is the NATS client name of a LangBot package's
// connection, "langbot-<plugin>@<scope>": it shows in the server's
// connection list, and the first login of a claimable tenant credential
// takes its instance from it.
func PackageConnName(plugin string, sc binding.Scope) string {
	return packageConnPrefix + plugin + "@" + sc.String()
}

// ParsePackageConnName returns the scope of a PackageConnName.
func ParsePackageConnName(name string) (binding.Scope, error) {
	i := strings.LastIndexByte(name, '@')
	if i < 0 || !strings.HasPrefix(name, packageConnPrefix) {
		return binding.Scope{}, fmt.Errorf("wire: %q is not a package connection name", name)
	}
	return binding.ScopeFromTokens(strings.Split(name[i+1:], "."))
}
