package model

// RecordFacts are what the group recording policy looks at for one message.
type RecordFacts struct {
	Group     bool // a group chat (person chats are always recorded)
	Addressed bool // an At names the bot's account id (known only when the id is)
	Triggered bool // the message hits a trigger word
	TakenOver bool // the session is taken over
	Unread    bool // the session is unhandled
}

// ShouldRecordUser reports whether a user's message is recorded under the
// policy (spec §3.6).
func ShouldRecordUser(policy string, f RecordFacts) bool {
	if !f.Group {
		return true
	}
	switch policy {
	case RecordAddressed:
		return f.Addressed || f.Triggered || f.TakenOver
	case RecordActiveOnly:
		return f.TakenOver || f.Unread || f.Triggered
	}
	return true
}

// ShouldRecordAI reports whether a sent AI reply is recorded under the
// policy (spec §3.6). A blocked reply is never recorded, by the caller.
func ShouldRecordAI(policy string, f RecordFacts) bool {
	if !f.Group || policy != RecordActiveOnly {
		return true
	}
	return f.TakenOver || f.Unread
}
