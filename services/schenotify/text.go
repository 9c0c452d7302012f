package schenotify

import (
	"strconv"
	"strings"

	"github.com/langbot-nats/plugins/services/schenotify/when"
)

// Cuts of a reminder's message in replies.
const (
	listPreviewRunes = 100
	toolPreviewRunes = 200
)

// preview is a message on one line (line breaks become spaces) cut to n
// code points plus "…".
func preview(msg string, n int) string {
	msg = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\u2028", " ", "\u2029", " ").Replace(msg)
	return cutRunes(msg, n)
}

// atoiStrict parses a decimal with an optional sign, ASCII digits only.
func atoiStrict(s string) (int, bool) {
	t := strings.TrimLeft(s, "+-")
	if len(s)-len(t) > 1 || t == "" {
		return 0, false
	}
	for i := 0; i < len(t); i++ {
		if !isDigit(t[i]) {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		// Too large: far beyond any list, keep the sign.
		if s[0] == '-' {
			return -1 << 31, true
		}
		return 1 << 31, true
	}
	return n, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// fail builds a validation failure of the service's own checks (sessions,
// caps, ids); the time checks build theirs in package when.
func fail(code, field string, args map[string]string) *when.Failure {
	return &when.Failure{Code: code, Field: field, Args: args}
}
