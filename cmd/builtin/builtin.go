// Package builtin names the three services' declarations for the package
// builder: lbctl package and the package tests look them up here by the
// plugin's wire name. It also builds the services offline for the NATS
// permissions they declare (Grants), from which accountsgen writes the
// deployment's accounts file (Accounts). It lives with the commands because
// it lists the services: pkg/ never imports a service
// (docs/architecture.md), and the package tests of pkg/lbpkg reach it from
// their test files only.
package builtin

import (
	"fmt"

	"github.com/langbot-nats/plugins/pkg/plugin"
	"github.com/langbot-nats/plugins/services/githubkit"
	"github.com/langbot-nats/plugins/services/schenotify"
	"github.com/langbot-nats/plugins/services/takeover"
)

// Names lists the plugins in build order.
func Names() []string { return []string{githubkit.Plugin, takeover.Plugin, schenotify.Plugin} }

// Declaration returns the declaration of the named plugin.
func Declaration(name string) (plugin.Declaration, error) {
	switch name {
	case githubkit.Plugin:
		return githubkit.Declaration(), nil
	case takeover.Plugin:
		return takeover.Declaration()
	case schenotify.Plugin:
		return schenotify.Declaration()
	}
	return plugin.Declaration{}, fmt.Errorf("builtin: unknown plugin %q (want one of %v)", name, Names())
}

// Declarations returns every declaration, in Names order.
func Declarations() ([]plugin.Declaration, error) {
	var out []plugin.Declaration
	for _, n := range Names() {
		d, err := Declaration(n)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
