//go:build tools

// Package tools pins the Jaeger build used by the end-to-end run. It is a
// separate module so that Jaeger's dependency graph never enters the root
// go.mod; e2e/run.sh builds github.com/jaegertracing/jaeger/cmd/jaeger from it.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
