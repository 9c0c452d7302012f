// Package model is takeover's pure core: what a session is and what the
// service decides about it, with no I/O. It holds the stored shapes
// (Record, Entry, Part, TimerBody, ReplyDedupe, Live), session identity
// (SessionKey, SID, launcher ids), the takeover timing (TakeoverState's
// TakeOver, Extend and Release, OnFire, ResumeAction, ScheduleAt), message
// content (ParseChain, ExtractContent, data URLs), trigger matching
// (MatchTrigger), the recording policy (ShouldRecordUser, ShouldRecordAI)
// and the installation settings (ParseSettings, Settings).
//
// Every function here is decided by its arguments and the time it is given.
// It may import the standard library and pkg/settings (the shared, pure
// settings reader) only: no pkg/bus, no NATS, no logging,
// and never package takeover or its store, which import it.
package model
