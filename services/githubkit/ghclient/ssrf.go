package ghclient

import (
	"net/netip"
)

// The SSRF guard is an allow-list: an address is dialled only when it is
// global unicast by the IANA special-purpose address registries (IPv4 and
// IPv6, "Globally Reachable" = True). Every form that embeds an IPv4
// address (IPv4-mapped, IPv4-compatible, NAT64 well-known and local-use
// prefixes, 6to4) is judged by the IPv4 address inside it, so an internal
// address cannot be reached through a translator either.
var (
	// notGlobalV4 are the IPv4 blocks that are not globally reachable.
	notGlobalV4 = prefixes(
		"0.0.0.0/8",          // "this network"
		"10.0.0.0/8",         // private
		"100.64.0.0/10",      // shared address space (CGNAT)
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link local
		"172.16.0.0/12",      // private
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // TEST-NET-1
		"192.88.99.0/24",     // deprecated 6to4 relay anycast
		"192.168.0.0/16",     // private
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // TEST-NET-2
		"203.0.113.0/24",     // TEST-NET-3
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved
		"255.255.255.255/32", // limited broadcast
	)
	// notGlobalV6 are the IPv6 blocks that are not globally reachable and
	// embed no IPv4 address the guard judges instead.
	notGlobalV6 = prefixes(
		"::/128",        // unspecified
		"::1/128",       // loopback
		"100::/64",      // discard-only
		"2001::/23",     // IETF protocol assignments (TEREDO, ORCHID, …): none is allowed
		"2001:db8::/32", // documentation
		"fc00::/7",      // unique local
		"fe80::/10",     // link local
		"ff00::/8",      // multicast
		"3fff::/20",     // documentation
		"5f00::/16",     // segment routing SIDs
	)
	// The forms that carry an IPv4 address: prefix and the byte offset of
	// the IPv4 address inside the 16 bytes.
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")   // IPv4 in bytes 12..15
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215: local use, refused
	sixToFour      = netip.MustParsePrefix("2002::/16")      // IPv4 in bytes 2..5
	v4Compatible   = netip.MustParsePrefix("::/96")          // deprecated; IPv4 in bytes 12..15
	globalUnicast6 = netip.MustParsePrefix("2000::/3")       // the only IPv6 space allocated as global unicast
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// RefusedAddr reports whether the SSRF guard refuses ip: every address
// that is not global unicast. lbctl dev checks a literal API root with it
// before it builds the service.
func RefusedAddr(ip netip.Addr) bool { return blockedAddr(ip) }

// blockedAddr reports whether the SSRF guard refuses ip (spec §2 rule 2):
// true for every address that is not global unicast.
func blockedAddr(ip netip.Addr) bool {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return true
	}
	if ip.Is4In6() {
		return blockedV4(ip.Unmap())
	}
	if ip.Is4() {
		return blockedV4(ip)
	}
	b := ip.As16()
	switch {
	case nat64Local.Contains(ip):
		// local-use NAT64 translates into the operator's own network
		return true
	case nat64WellKnown.Contains(ip):
		return blockedV4(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(ip):
		return blockedV4(netip.AddrFrom4([4]byte(b[2:6])))
	case ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback():
		return true
	case v4Compatible.Contains(ip):
		return blockedV4(netip.AddrFrom4([4]byte(b[12:16])))
	}
	for _, p := range notGlobalV6 {
		if p.Contains(ip) {
			return true
		}
	}
	// outside 2000::/3 nothing is allocated as global unicast (64:ff9b::/96
	// and the embedded forms were judged above)
	return !globalUnicast6.Contains(ip)
}

func blockedV4(ip netip.Addr) bool {
	for _, p := range notGlobalV4 {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
