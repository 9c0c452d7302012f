package main

import (
	"encoding/json"

	"github.com/langbot-nats/plugins/services/schenotify"
)

// schenotifyService registers the reminder service with lbctl: lbctl dev
// runs it in process and routes "!sche" and "!dsche" to it.
func schenotifyService() *devService {
	return &devService{
		Plugin:       schenotify.Plugin,
		Build:        schenotify.Build,
		Config:       json.RawMessage(`{"language":"en_US","notify_prefix":"[Notify] "}`),
		CommandWords: []string{schenotify.CommandSche, schenotify.CommandDsche},
	}
}
