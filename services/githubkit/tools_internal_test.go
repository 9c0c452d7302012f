package githubkit

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFitResultShrinksInOrder checks the order in which an oversize tool
// result gives way: list entries first, then halves of the long text.
func TestFitResultShrinksInOrder(t *testing.T) {
	label := strings.Repeat("l", 700)
	out := issueResult{Repo: "o/r", Number: 1, Kind: "issue",
		Labels: []string{label, label, label, label, label, label, label, label, label, label},
		Body:   strings.Repeat("\u00e9", 1500)}
	fitResult(&out, out.shrink)
	b, err := json.Marshal(&out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxToolResult {
		t.Fatalf("issue result is %d bytes, over %d", len(b), MaxToolResult)
	}
	if len(out.Labels) == 0 || len(out.Labels) == 10 || out.BodyTruncated || out.Body == "" {
		t.Fatalf("labels should go first and only as many as needed: %d labels, body truncated %v", len(out.Labels), out.BodyTruncated)
	}

	rp := repoResult{FullName: "o/r", Topics: []string{"a", "b"}, Description: strings.Repeat("\u00e9", 9000)}
	fitResult(&rp, rp.shrink)
	if b, _ := json.Marshal(&rp); len(b) > MaxToolResult || len(rp.Topics) != 0 || rp.Description == "" {
		t.Fatalf("repo result: %d bytes, %d topics, description %d bytes", len(b), len(rp.Topics), len(rp.Description))
	}

	is := issueResult{Repo: "o/r", Labels: []string{"x"}, Body: strings.Repeat("b", 9000)}
	fitResult(&is, is.shrink)
	if b, _ := json.Marshal(&is); len(b) > MaxToolResult || len(is.Labels) != 0 || !is.BodyTruncated {
		t.Fatalf("issue result: %d bytes, %d labels, body truncated %v", len(b), len(is.Labels), is.BodyTruncated)
	}

	sr := searchResult{Query: "q"}
	for range 10 {
		sr.Items = append(sr.Items, searchItem{FullName: "o/r", Description: strings.Repeat("d", 1000)})
	}
	fitResult(&sr, sr.shrink)
	if b, _ := json.Marshal(&sr); len(b) > MaxToolResult || len(sr.Items) == 0 || len(sr.Items) == 10 {
		t.Fatalf("search result: %d bytes, %d items", len(b), len(sr.Items))
	}
}
