package githubkit

import "encoding/json"

// ToolSpec is a tool as the plugin manifest declares it to the host: its
// name, the prompt the LLM reads, and a JSON Schema of its parameters.
type ToolSpec struct {
	Name       string          `json:"name"`
	LLMPrompt  string          `json:"llm_prompt"`
	Parameters json.RawMessage `json:"parameters"`
}

// Tools returns the manifest entries of the three tools (spec §4).
func Tools() []ToolSpec {
	return []ToolSpec{
		{
			Name: ToolRepo,
			LLMPrompt: "Look up one public (or token-visible) GitHub repository: description, stars, forks, watchers, " +
				"open issues, language, licence, default branch, topics and dates. Read-only; GitHub may rate-limit it, " +
				"in which case the result is an error with retry_after_s.",
			Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["repo"],` +
				`"properties":{"repo":{"type":"string","description":"owner/repo or a GitHub repository URL"}}}`),
		},
		{
			Name: ToolIssue,
			LLMPrompt: "Read one GitHub issue or pull request by number: kind, state (open, closed or merged), title, " +
				"author, labels, comment count, dates and the start of its body. Read-only; GitHub may rate-limit it.",
			Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["repo","number"],` +
				`"properties":{"repo":{"type":"string","description":"owner/repo or a GitHub repository URL"},` +
				`"number":{"type":"integer","minimum":1,"description":"issue or pull request number"}}}`),
		},
		{
			Name: ToolSearch,
			LLMPrompt: "Search GitHub repositories, most stars first, and return up to limit results with name, " +
				"description, stars, language and link. Read-only; GitHub's search API has a low rate limit.",
			Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["query"],` +
				`"properties":{"query":{"type":"string","minLength":1,"maxLength":256,"description":"GitHub search syntax, e.g. 'nats language:go'"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":10,"default":5}}}`),
		},
	}
}
