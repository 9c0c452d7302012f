package takeover

import "github.com/langbot-nats/plugins/pkg/binding"

// ViewTakenOver reports what the session view holds for a session: whether
// it is taken over now, and whether the view has an entry at all.
func ViewTakenOver(s *Service, sc binding.Scope, sid string) (takenOver, known bool) {
	e, ok := s.view.lookup(sessionKey(sc, sid))
	return ok && e.takenOver(s.nowMS()), ok
}
