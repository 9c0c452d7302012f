// Package httpserve is how every HTTP server of this project runs: the
// service binaries' server (console, webhook receiver, health and
// metrics), its metrics-only server, githubkit's own webhook listener and
// lbctl dev's server all come from Listen, so none lacks a timeout or a
// bound on the request bodies it holds.
//
// Two things bound a slow or heavy client (150 connections
// that each sent 1,000,000 of 1,048,576 webhook body bytes and stalled
// raised a service from 28 MB to 200 MB and were never closed):
//
//   - Timeouts: a request's headers and body must arrive within
//     ReadTimeout, its answer must be written within WriteTimeout, and an
//     idle keep-alive connection is closed after IdleTimeout. A long-lived
//     response (Server-Sent Events) lifts the read deadline and renews
//     the write deadline before each write (Stream), so a client that
//     stops reading is still cut off.
//   - A byte budget (Budget): a request's body is admitted before a byte
//     of it is read, for its declared length (or the route's limit when
//     the length is unknown), and refused at once when the bodies being
//     read already hold the budget. Memory then grows with the budget,
//     not with the number of connections. Listen applies one budget to
//     the whole server; a handler that reads large bodies (the takeover
//     console, the webhook receiver) keeps a budget of its own with its
//     route's limit, so it is bounded on whatever server mounts it.
package httpserve
