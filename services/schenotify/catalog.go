package schenotify

import (
	"embed"
	"strconv"
	"strings"
	"time"

	"github.com/langbot-nats/plugins/pkg/i18n"
)

//go:embed messages/*.json
var messagesFS embed.FS

// Catalog loads the embedded en_US and zh_Hans message catalogues.
func Catalog() (*i18n.Catalog, error) { return i18n.Load(messagesFS, "messages") }

// coarseDuration renders d with its two largest units in lang, e.g.
// "2 h 5 min"; under a second is "0 s".
func coarseDuration(cat *i18n.Catalog, lang string, d time.Duration) string {
	d = d.Truncate(time.Second)
	units := []struct {
		key string
		v   time.Duration
	}{{"dur.days", 24 * time.Hour}, {"dur.hours", time.Hour}, {"dur.minutes", time.Minute}, {"dur.seconds", time.Second}}
	var parts []string
	for i, u := range units {
		n := d / u.v
		if n == 0 && !(len(parts) == 0 && i == len(units)-1) {
			if len(parts) > 0 {
				break
			}
			continue
		}
		parts = append(parts, cat.Text(lang, u.key, map[string]string{"n": strconv.FormatInt(int64(n), 10)}))
		d -= n * u.v
		if len(parts) == 2 {
			break
		}
	}
	return strings.Join(parts, " ")
}

// weekday is the localized day name.
func weekday(cat *i18n.Catalog, lang string, d time.Weekday) string {
	return cat.Text(lang, "weekday."+strings.ToLower(d.String()), nil)
}
