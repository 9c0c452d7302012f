// Command accountsgen writes the deployment's NATS accounts file
// (builtin.Accounts: the service users' permissions from the services'
// declarations, the rest from pkg/bus/accounts.tmpl) to every path it is
// given. go generate ./pkg/natsembed runs it for
// deploy/k8s/base/nats/accounts.conf and pkg/natsembed/accounts.conf;
// TestAccountsFileGenerated fails while either differs from its output.
//
// A deployment with another subject prefix (LANGBOT_SUBJECT_PREFIX)
// writes its own with -prefix:
//
//	go run ./cmd/builtin/accountsgen -prefix acme accounts.conf
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/langbot-nats/plugins/cmd/builtin"
	"github.com/langbot-nats/plugins/pkg/wire"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "accountsgen: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("accountsgen", flag.ContinueOnError)
	prefix := fs.String("prefix", wire.DefaultPrefix, "subject prefix (LANGBOT_SUBJECT_PREFIX)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: accountsgen [-prefix P] FILE [FILE ...]")
	}
	subj, err := wire.NewSubjects(*prefix)
	if err != nil {
		return err
	}
	text, err := builtin.Accounts(subj)
	if err != nil {
		return err
	}
	for _, p := range fs.Args() {
		if err := os.WriteFile(p, text, 0o644); err != nil {
			return err
		}
	}
	return nil
}
