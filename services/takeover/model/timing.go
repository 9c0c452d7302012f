package model

// The takeover timing of spec §6 as pure functions of a record and a clock
// reading in Unix milliseconds.

// TakenOver reports whether the takeover holds at now: active and now before
// the deadline (spec §6 rule 1). A passed deadline counts as released before
// anything is written.
func (t TakeoverState) TakenOver(now int64) bool {
	return t.Active && now < t.ExpiresAt
}

// Remaining is the whole seconds left at now, never negative (spec §6 rule 2).
func (t TakeoverState) Remaining(now int64) int64 {
	if !t.TakenOver(now) {
		return 0
	}
	return max(0, (t.ExpiresAt-now)/1000)
}

// Transition says what a timing action did to the takeover.
type Transition int

const (
	// Unchanged: the action changed nothing (a release of an inactive
	// takeover, an extension-only action on an inactive one).
	Unchanged Transition = iota
	// Started: inactive to active; the takeover notice goes out.
	Started
	// Extended: active, deadline moved.
	Extended
	// Released: active to inactive; the release notice goes out.
	Released
)

// TakeOver starts or extends the takeover (spec §6 start/extend): via is
// ViaConsole, ViaTrigger or ViaReply; operator is the acting operator (""
// for a trigger, which leaves the stored operator on an extension). It
// returns Started or Extended; the caller schedules expiry at ExpiresAt.
func (t *TakeoverState) TakeOver(now, timeoutMS int64, via, operator string) Transition {
	if t.TakenOver(now) {
		t.LastHumanAt = now
		t.ExpiresAt = now + timeoutMS
		if via != ViaTrigger {
			t.Operator = operator
		}
		return Extended
	}
	*t = TakeoverState{
		Active:      true,
		StartedAt:   now,
		LastHumanAt: now,
		ExpiresAt:   now + timeoutMS,
		Operator:    operator,
		Via:         via,
	}
	return Started
}

// Extend extends a takeover that holds at now, and does nothing otherwise
// (a reply with takeover_on_reply false).
func (t *TakeoverState) Extend(now, timeoutMS int64, operator string) Transition {
	if !t.TakenOver(now) {
		return Unchanged
	}
	return t.TakeOver(now, timeoutMS, ViaReply, operator)
}

// Release ends the takeover by an operator (reason manual) or by expiry
// (reason timeout, by ""). A takeover whose deadline passed before a manual
// release is recorded as a timeout at its deadline. Releasing an inactive
// takeover is Unchanged.
func (t *TakeoverState) Release(now int64, by, reason string) Transition {
	if !t.Active {
		return Unchanged
	}
	t.Active = false
	if now >= t.ExpiresAt {
		now, by, reason = t.ExpiresAt, "", ReasonTimeout
	}
	t.ReleasedAt = now
	t.ReleasedBy = by
	t.ReleaseReason = reason
	return Released
}

// ScheduleAt is the time an expiry schedule fires for a deadline: expiresAt
// rounded up to the whole second (spec §6 rule 4).
func ScheduleAt(expiresAt int64) int64 {
	if r := expiresAt % 1000; r != 0 {
		if expiresAt > 0 {
			return expiresAt - r + 1000
		}
		return expiresAt - r
	}
	return expiresAt
}

// FireAction is what the expiry consumer does with a fired schedule.
type FireAction int

const (
	// FireAck: nothing to do (no record, inactive, or authority not active).
	FireAck FireAction = iota
	// FireNakUntil: the fire came before the deadline it was armed for (the
	// service's clock is behind); nak with a delay until the deadline.
	FireNakUntil
	// FireRearm: the takeover was extended; republish the schedule for the
	// record's deadline and ack.
	FireRearm
	// FireRelease: CAS the release with reason timeout, publish, notify, ack.
	FireRelease
)

// OnFire decides a fired schedule (spec §6 rule 5, cases b-d; case a's
// authority check is the caller's). firedExpiresAt is the deadline carried
// by the timer body.
func OnFire(r *Record, firedExpiresAt, now int64) FireAction {
	if r == nil || !r.Takeover.Active {
		return FireAck
	}
	if now < r.Takeover.ExpiresAt {
		if r.Takeover.ExpiresAt == firedExpiresAt {
			return FireNakUntil
		}
		return FireRearm
	}
	return FireRelease
}

// ResumeAction is what the resume sweep does with one active record (spec §6
// rule 6): release a passed deadline, otherwise re-arm its schedule.
func ResumeAction(r *Record, now int64) FireAction {
	if r == nil || !r.Takeover.Active {
		return FireAck
	}
	if r.Takeover.ExpiresAt <= now {
		return FireRelease
	}
	return FireRearm
}
