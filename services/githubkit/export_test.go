package githubkit

import "net/netip"

// BlockedAddrForTest exposes the SSRF guard's address check.
func BlockedAddrForTest(s string) bool { return blockedAddr(netip.MustParseAddr(s)) }
