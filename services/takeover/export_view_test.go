package takeover

import (
	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/services/takeover/store"
)

// ViewTakenOver reports what the session view holds for a session: whether
// it is taken over now, and whether the view has an entry at all.
func ViewTakenOver(s *Service, sc binding.Scope, sid string) (takenOver, known bool) {
	e, ok := s.view.Lookup(store.SessionKey(sc, sid))
	return ok && e.TakenOver(s.now.ms()), ok
}

// ViewRevision returns the record revision the session view holds for a
// session, and whether the view is live.
func ViewRevision(s *Service, sc binding.Scope, sid string) (rev uint64, live bool) {
	e, _ := s.view.Lookup(store.SessionKey(sc, sid))
	return e.Rev, s.view.Live()
}
