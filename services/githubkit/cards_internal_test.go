package githubkit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/langbot-nats/plugins/pkg/binding"
	"github.com/langbot-nats/plugins/pkg/bus/bustest"
	"github.com/langbot-nats/plugins/pkg/httpserve"
	"github.com/langbot-nats/plugins/pkg/i18n"
	"github.com/langbot-nats/plugins/services/githubkit/events"
	"github.com/langbot-nats/plugins/services/githubkit/fakegithub"
	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// TestCardGoldens renders a card of every kind from the fake's fixtures in
// both languages.
func TestCardGoldens(t *testing.T) {
	cases := []struct {
		name string
		link string
		prep func(f *fakegithub.Server)
	}{
		{"card_repo", "https://github.com/octocat/Hello-World", nil},
		{"card_repo_bare", "github.com/octocat/Hello-World", func(f *fakegithub.Server) {
			f.SetResponse("/repos/octocat/Hello-World", 200, `{"id":1,"full_name":"octocat/Hello-World","description":null,"language":null,"archived":true,"stargazers_count":1,"forks_count":0,"html_url":"https://github.com/octocat/Hello-World"}`)
		}},
		{"card_issue", "https://github.com/octocat/Hello-World/issues/1347", nil},
		{"card_pr_merged", "https://github.com/octocat/Hello-World/pull/1290/files", nil},
		{"card_pr_draft", "https://github.com/octocat/Hello-World/pull/9", func(f *fakegithub.Server) {
			f.SetResponse("/repos/octocat/Hello-World/issues/9", 200, `{"number":9,"state":"open","draft":true,"title":"WIP:\tnew\r\nparser","user":{"login":"hubot"},"comments":1,"labels":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"}],"html_url":"https://github.com/octocat/Hello-World/pull/9","pull_request":{"url":"x"}}`)
		}},
		{"card_release", "https://github.com/octocat/Hello-World/releases/tag/v1.1.0", nil},
		{"card_release_pre", "https://github.com/octocat/Hello-World/releases/tag/v1.1.0-rc.1", nil},
		{"card_commit", "https://github.com/octocat/Hello-World/commit/6dcb09b", nil},
	}
	gh := testGitHub()
	for _, lang := range []string{i18n.EnUS, i18n.ZhHans} {
		x := testTexts(t, lang)
		for _, c := range cases {
			t.Run(lang+"/"+c.name, func(t *testing.T) {
				fake := fakegithub.New(fakegithub.Options{})
				defer fake.Close()
				if c.prep != nil {
					c.prep(fake)
				}
				links := events.ParseLinks(c.link, "")
				if len(links) != 1 {
					t.Fatalf("ParseLinks(%q) = %v", c.link, links)
				}
				cs := &cards{gh: gh}
				st := fakeSettings(fake, "tok")
				f, err := cs.fetch(context.Background(), ghclient.Target{BaseURL: st.APIURL, Token: st.Token}, links[0])
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, lang, c.name, events.ChatSafe(x.card(f)))
			})
		}
	}
}

func TestIsCommand(t *testing.T) {
	for text, want := range map[string]bool{
		"!gh repo https://github.com/o/r": true, "/GH issue o/r 5": true, "！gh": true, "  !!gh x": true,
		"gh https://github.com/o/r": false, "see !gh": false, "!ghx o/r": false, "https://github.com/o/r": false, "": false,
	} {
		if got := isCommand(text); got != want {
			t.Errorf("isCommand(%q) = %v, want %v", text, got, want)
		}
	}
}

func testScope(t testing.TB, name string) binding.Scope {
	t.Helper()
	sc, err := binding.ParseScope("i." + name + ".x")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestCardStateBounds: a full chat map refuses only its own installation's
// new chats, the sweep frees idle ones, the cache evicts its least
// recently used entry, and a queue is served round robin.
func TestCardStateBounds(t *testing.T) {
	clock := bustest.FixedClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := newCardState(CardLimits{Burst: 1, Every: time.Second, RepeatWindow: time.Second, CacheEntries: 2, QueuePerInstallation: 2}, clock.Now)
	a, b := testScope(t, "a"), testScope(t, "b")
	link := []events.Link{{Kind: events.LinkRepo, Repo: ghclient.Repo{Owner: "o", Name: "r"}}}

	for i := range maxCardChats {
		if got, _ := st.take(a, httpserve.LimitKeyOf(fmt.Sprint(i)), link); len(got) != 1 {
			t.Fatalf("chat %d refused below the cap", i)
		}
	}
	if got, limited := st.take(a, httpserve.LimitKeyOf("one more"), link); len(got) != 0 || !limited {
		t.Fatalf("a chat past the cap got %v", got)
	}
	if got, _ := st.take(b, httpserve.LimitKeyOf("one more"), link); len(got) != 1 {
		t.Fatal("another installation's chat was refused")
	}
	clock.Advance(time.Minute)
	if got, _ := st.take(a, httpserve.LimitKeyOf("one more"), link); len(got) != 1 {
		t.Fatal("a new chat refused once the idle ones could be swept")
	}
	st.sweep()
	if _, chats, _ := st.sizes(a); chats != 1 {
		t.Fatalf("%d chats after the sweep, want the one just used", chats)
	}

	for i := range 3 {
		st.store(a, cacheEntry{key: httpserve.LimitKeyOf(fmt.Sprint(i))})
	}
	if _, ok, _ := st.cached(a, httpserve.LimitKeyOf("0")); ok {
		t.Error("the least recently used entry survived a full cache")
	}
	if _, ok, fresh := st.cached(a, httpserve.LimitKeyOf("2")); !ok || !fresh {
		t.Error("the newest entry is not fresh")
	}
	if _, ok, _ := st.cached(b, httpserve.LimitKeyOf("2")); ok {
		t.Error("an entry of one installation is seen by another")
	}
	clock.Advance(time.Hour)
	st.sweep()
	if n, _, entries := st.sizes(a); entries != 0 || n != 0 {
		t.Fatalf("after an idle hour: %d installations, %d entries", n, entries)
	}

	// two installations' jobs alternate; a third job of a is refused
	for _, j := range []*cardJob{{sc: a, idem: "a1"}, {sc: a, idem: "a2"}, {sc: b, idem: "b1"}} {
		if out := st.enqueue(j); out != cardQueued {
			t.Fatalf("enqueue %s = %s", j.idem, out)
		}
	}
	if out := st.enqueue(&cardJob{sc: a, idem: "a3"}); out != cardDropped {
		t.Fatalf("a's third job = %s, want dropped at its cap of 2", out)
	}
	var order []string
	for {
		j, ok := st.next()
		if !ok {
			break
		}
		order = append(order, j.idem)
	}
	if got := strings.Join(order, " "); got != "a1 b1 a2" {
		t.Fatalf("served %q, want round robin", got)
	}
}
