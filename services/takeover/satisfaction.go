package takeover

import (
	"context"
	"strconv"
	"time"
	"unicode"

	"github.com/langbot-nats/plugins/pkg/wire"
	"github.com/langbot-nats/plugins/services/takeover/model"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// Satisfaction after release (satisfaction_survey, off by
// default). When a takeover of a private chat ends, the notices ask the
// user once "How did we do? 1-5" and mark the record's satisfaction as
// waiting for satisfaction_window. The session view carries that mark, so
// the event path sees without storage whether the user's next message is
// the answer: a score from 1 to 5 is blocked from the AI and stored on the
// record; any other message closes the question and the AI answers as
// usual. Group chats are not asked: anyone's number would count.

// Survey outcomes of a user message, as the decision sees them.
const (
	surveyNone  = 0  // no question waits
	surveyClose = -1 // a question waited and this message is no score
)

// surveyWanted reports whether a release of ses asks the question.
func surveyWanted(ses session) bool {
	r := ses.rec
	return ses.set.SatisfactionSurvey && r != nil && r.Type == model.LauncherPerson && r.BotUUID != "" && !model.IsLegacy(r)
}

// askSatisfaction marks the record as waiting for a score, then sends the
// question in the user's language with the notices' retries. A takeover
// started again meanwhile asks nothing.
func (n *notices) askSatisfaction(ctx context.Context, ses session) {
	now := n.now.ms()
	rec, rev, err := n.st.UpdateRecord(ctx, ses.sc, ses.sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil || cur.Takeover.TakenOver(now) {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		r.Satisfaction = &model.Satisfaction{AskedAt: now, Until: now + int64(ses.set.SatisfactionWindow)*1000}
		r.UpdatedAt = now
		return r, nil
	})
	if err != nil {
		n.log.WarnContext(ctx, "the satisfaction question was not asked: the record write failed", "scope", ses.sc.String(), "sid", ses.sid, "err", err)
		return
	}
	if rec == nil || rec.Satisfaction == nil || rec.Satisfaction.AskedAt != now {
		return
	}
	n.view.ApplyRecord(ses.sc, ses.sid, rec, rev)
	question := n.catalog.Text(userLanguage(rec, ses.set), "survey.question", nil)
	askedAt := strconv.FormatInt(now, 10)
	idem := "survey:" + ses.sc.String() + ":" + ses.sid + ":" + askedAt
	msg := wire.SendMessage{BotUUID: rec.BotUUID, TargetType: rec.Type, TargetID: rec.TargetID, MessageChain: wire.Plain(question)}
	sc, b, sid, gen := ses.sc, ses.b, ses.sid, rec.Gen
	n.goBackground(ctx, func(bctx context.Context) {
		for i := 0; ; i++ {
			tctx, cancel := context.WithTimeout(bctx, n.hostTimeout)
			err := n.runner.Host().SendMessage(tctx, b, msg, idem)
			cancel()
			if err == nil {
				break
			}
			if i >= len(n.noticeRetry) {
				n.metrics.noticeFailed.Inc()
				n.log.ErrorContext(bctx, "the satisfaction question was dropped after its retries", "scope", sc.String(), "sid", sid)
				return
			}
			t := time.NewTimer(n.noticeRetry[i])
			select {
			case <-bctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		e := &model.Entry{V: 1, ID: model.EntryID(sc.String(), sid, "survey|", askedAt), Gen: gen, TS: n.now.ms(), Role: model.RoleNotice,
			Parts: []model.Part{{Type: model.PartText, Text: question}}}
		if err := storeEntry(bctx, n.st, sc, sid, e, e.Parts); err != nil {
			n.log.WarnContext(bctx, "a delivered satisfaction question was not recorded", "scope", sc.String(), "sid", sid, "err", err)
			return
		}
		n.publishLive(sc, model.Live{Type: model.LiveMessage, SID: sid, Data: map[string]any{"sid": sid, "gen": gen, "entry": e}})
	})
}

// userLanguage is the language the user writes in, as far as the chat's
// last message shows: Chinese when it holds a Han character, English when
// it holds Latin letters only, else the installation's language.
func userLanguage(rec *model.Record, set model.Settings) string {
	latin := false
	for _, r := range rec.LastPreview.Text {
		if unicode.Is(unicode.Han, r) {
			return model.LanguageZhHans
		}
		if r < unicode.MaxASCII && unicode.IsLetter(r) {
			latin = true
		}
	}
	if latin {
		return model.LanguageEnUS
	}
	return set.Language
}

// surveyAnswer is what a user message means for a waiting question, read
// from the view's head of the session (no storage): a score from 1 to 5,
// surveyClose for any other message, or surveyNone when no question waits
// (or the view is not live: the AI then answers, as it would anyway).
func (rc *recording) surveyAnswer(key, text string, now int64) int {
	if !rc.view.Live() {
		return surveyNone
	}
	e, ok := rc.view.Lookup(key)
	if !ok || e.Head == nil || !e.Head.Satisfaction.Waiting(now) {
		return surveyNone
	}
	if score, ok := model.SurveyScore(text); ok {
		return score
	}
	return surveyClose
}

// settleSurvey stores a decided answer: the score, or the question closed.
// The question must still wait at the event's time, so a redelivered
// event or a later question is left alone.
func (rc *recording) settleSurvey(ctx context.Context, j *recordJob) {
	if j.survey == surveyNone {
		return
	}
	unlock, err := rc.locks.Lock(ctx, store.SessionKey(j.sc, j.sid))
	if err != nil {
		rc.log.WarnContext(ctx, "a satisfaction answer was not stored", "scope", j.sc.String(), "sid", j.sid, "err", err)
		return
	}
	rec, rev, err := rc.st.UpdateRecord(ctx, j.sc, j.sid, func(cur *model.Record) (*model.Record, error) {
		if cur == nil || !cur.Satisfaction.Waiting(j.now) {
			return nil, store.ErrNoChange
		}
		r := cur.Clone()
		if j.survey > 0 {
			r.Satisfaction.Score, r.Satisfaction.AnsweredAt = j.survey, j.now
		} else {
			r.Satisfaction.Until = 0
		}
		return r, nil
	})
	unlock()
	if err != nil {
		rc.log.WarnContext(ctx, "a satisfaction answer was not stored", "scope", j.sc.String(), "sid", j.sid, "err", err)
		return
	}
	rc.view.ApplyRecord(j.sc, j.sid, rec, rev)
	if j.survey > 0 && rec != nil {
		rc.notices.publishLive(j.sc, model.Live{Type: model.LiveSession, SID: j.sid, Data: rc.notices.summary(ctx, j.sc, j.b, j.sid, rec)})
	}
}
