package settings_test

import (
	"encoding/json"
	"fmt"

	"github.com/langbot-nats/plugins/pkg/settings"
)

func ExampleReader() {
	r := settings.Read(json.RawMessage(`{"poll_interval": "30", "language": " en_US ", "subscribe_requires_admin": "maybe"}`))
	poll := r.Int("poll_interval", 120, settings.Ints{Min: 60, Max: 3600, Strings: true})
	lang := r.String("language", "zh_Hans", settings.Strings{Trim: true, EmptyIsDefault: true})
	admin := r.Bool("subscribe_requires_admin", false, settings.Bools{})
	fmt.Println(poll, lang, admin)
	for _, w := range r.Warnings() {
		fmt.Printf("%s: %s (used %s)\n", w.Field, w.Reason, w.Used)
	}
	// Output:
	// 60 en_US false
	// poll_interval: below minimum, clamped (used 60)
	// subscribe_requires_admin: invalid, default used (used false)
}
