// Command accountsgen writes the deployment's NATS accounts file
// (builtin.Accounts: the service users' permissions from the services'
// declarations, the rest from pkg/bus/accounts.tmpl) to every path it is
// given. go generate ./pkg/natsembed runs it for
// deploy/k8s/base/nats/accounts.conf and pkg/natsembed/accounts.conf;
// TestAccountsFileGenerated fails while either differs from its output.
package main

import (
	"fmt"
	"os"

	"github.com/langbot-nats/plugins/cmd/builtin"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "accountsgen: %v\n", err)
		os.Exit(1)
	}
}

func run(paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("usage: accountsgen FILE...")
	}
	text, err := builtin.Accounts()
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := os.WriteFile(p, text, 0o644); err != nil {
			return err
		}
	}
	return nil
}
