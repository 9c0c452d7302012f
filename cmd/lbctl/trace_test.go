package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// pollTraceJSON has the shape Jaeger v2 (v1.76.0) returns from
// /api/traces/<id> for a githubkit poll, as recorded by the e2e run and cut
// down: a root consumer span linked to the subscription's trace, two
// children in start order reversed, and one span whose parent was never
// exported.
const pollTraceJSON = `{"data":[{"traceID":"0d23675d74504fda6b869e343b2f9082","spans":[
 {"traceID":"0d23675d74504fda6b869e343b2f9082","spanID":"c3","operationName":"send langbot.host.send_message.*.*.*",
  "references":[{"refType":"CHILD_OF","traceID":"0d23675d74504fda6b869e343b2f9082","spanID":"a1"}],
  "startTime":1764410000002000,"duration":900,"tags":[{"key":"span.kind","type":"string","value":"client"}],"processID":"p1"},
 {"traceID":"0d23675d74504fda6b869e343b2f9082","spanID":"a1","operationName":"process langbot.githubkit.poll.>",
  "references":[{"refType":"FOLLOWS_FROM","traceID":"08d663a17d30e5b025349aeb6f0452dc","spanID":"77"}],
  "startTime":1764410000000000,"duration":4200,"tags":[{"key":"span.kind","type":"string","value":"consumer"}],"processID":"p1"},
 {"traceID":"0d23675d74504fda6b869e343b2f9082","spanID":"b2","operationName":"GET /repos/{owner}/{repo}/events",
  "references":[{"refType":"CHILD_OF","traceID":"0d23675d74504fda6b869e343b2f9082","spanID":"a1"}],
  "startTime":1764410000000400,"duration":1250,"tags":[{"key":"span.kind","type":"string","value":"client"},
  {"key":"otel.status_code","type":"string","value":"ERROR"},{"key":"otel.status_description","type":"string","value":"timeout"}],"processID":"p1"},
 {"traceID":"0d23675d74504fda6b869e343b2f9082","spanID":"d4","operationName":"githubkit.poll",
  "references":[{"refType":"CHILD_OF","traceID":"0d23675d74504fda6b869e343b2f9082","spanID":"ff"}],
  "startTime":1764410001500000,"duration":2000000,"tags":[],"processID":"p2"}
 ],
 "processes":{"p1":{"serviceName":"githubkit","tags":[]},"p2":{"serviceName":"githubkit-2","tags":[]}}}]}`

func TestPrintTraceTree(t *testing.T) {
	var doc struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.Unmarshal([]byte(pollTraceJSON), &doc); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printTraceTree(&out, &doc.Data[0], false)
	want := `trace 0d23675d74504fda6b869e343b2f9082: 4 spans, githubkit, githubkit-2, 3.500s
├─ githubkit [consumer] process langbot.githubkit.poll.>  +0µs 4.20ms
│    ↪ linked to trace 08d663a17d30e5b025349aeb6f0452dc span 77
│  ├─ githubkit [client] GET /repos/{owner}/{repo}/events  +400µs 1.25ms ERROR (timeout)
│  └─ githubkit [client] send langbot.host.send_message.*.*.*  +2.00ms 900µs
└─ githubkit-2 [internal] githubkit.poll  +1.500s 2.000s
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTraceArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no id", nil},
		{"not hex", []string{"xyz"}},
		{"wrong length", []string{"abcd"}},
		{"extra argument", []string{"0d23675d74504fda6b869e343b2f9082", "more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(t.Context(), append([]string{"trace"}, tc.args...),
				stdio{out: &out, err: &errb, getenv: func(string) string { return "" }})
			if code == 0 {
				t.Errorf("exit 0, want an error; stdout:\n%s", out.String())
			}
		})
	}
}
