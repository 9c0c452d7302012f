// Package events is githubkit's pure core: what a chat sees of GitHub.
// It turns GitHub's repository events and workflow runs into push lines
// (FromEvent, Texts.EventLine, Texts.PushMessage, Texts.CILine), renders
// the gh command's cards and lists (Texts), parses what users type
// (ParseCommand, ParseRepo, ParseSubscription with its filter words and
// refinements, ParseLinks for link cards) and decides which events a
// subscription shows (Matches, Refine).
//
// Every text comes from the service's message catalogue, handed in through
// NewTexts; nothing here reads config, storage or the clock.
//
// # Extending
//
// A new event kind is a filter word in filters.go, its payload fields in
// activity.go (Activity, FromEvent), its line in eventfmt.go (one entry of
// the per-kind formatter table) and its catalogue keys; the golden files
// in ../testdata/golden show every line.
//
// # Imports
//
// This package may import ../ghclient (the raw Event, WorkflowRun and
// APIError types), pkg/i18n, go-github's types and the standard library;
// never pkg/bus, NATS or the service root (TestImportsAsDocumented).
package events
