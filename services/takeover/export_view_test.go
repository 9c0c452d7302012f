package takeover

import "github.com/langbot-nats/plugins/pkg/binding"

// ViewTakenOver reports what the session view holds for a session: whether
// it is taken over now, and whether the view has an entry at all.
func ViewTakenOver(s *Service, sc binding.Scope, sid string) (takenOver, known bool) {
	e, ok := s.view.lookup(sessionKey(sc, sid))
	return ok && e.takenOver(s.nowMS()), ok
}

// ViewRevision returns the record revision the session view holds for a
// session, and whether the view is live.
func ViewRevision(s *Service, sc binding.Scope, sid string) (rev uint64, live bool) {
	e, _ := s.view.lookup(sessionKey(sc, sid))
	return e.rev, s.view.live()
}
