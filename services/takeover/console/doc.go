// Package console is the takeover operator console over HTTP: a JSON API on
// the service's console operations, a live feed as Server-Sent Events fed
// from the scope's NATS live subject, operator tokens, and the web page
// itself (plain HTML, CSS and JavaScript embedded with go:embed, so nothing
// needs building).
//
// Every request carries a bearer token "v1.<claims>.<mac>" (see Mint and
// Verify): an HMAC-SHA256 under LANGBOT_CONSOLE_KEY over the claims
// {scope, operator, exp}. The token's scope is the only scope a request
// touches, and its operator is recorded on takeovers, releases and replies.
//
// Routes, under the prefix the handler is mounted at (/console/):
//
//	GET  /console/                the page (index.html, app.js, app.css, i18n/<lang>.json)
//	*    /console/api/<operation> the operations of spec §7.2 (GET: query parameters;
//	                              POST and DELETE: a JSON body; /reply also multipart)
//	GET  /console/api/events      the live feed (text/event-stream)
//
// The same web/ sources are also the console inside LangBot: PageHTML
// inlines them into one self-contained HTML file for HumanTakeover's page,
// and app.js, seeing data-transport="langbot", talks through LangBot's
// langbot:api postMessage protocol and polls instead of HTTP and SSE, keeps
// no storage and shows exports and files in-page (docs/langbot.md).
//
// The package does not import the takeover service (only its pure core,
// services/takeover/model, for the sid form and the raster image check):
// the service implements Operations (services/takeover/console_support.go)
// and mounts the handler, which keeps the dependency one way.
package console
