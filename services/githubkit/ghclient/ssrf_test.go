package ghclient_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/langbot-nats/plugins/services/githubkit/ghclient"
)

// TestSSRFAllowsGlobalUnicastOnly is issue 19's SSRF item: every IANA
// special-purpose block that is not globally reachable is refused, and
// every form that embeds an IPv4 address is judged by that address.
func TestSSRFAllowsGlobalUnicastOnly(t *testing.T) {
	refused := []string{
		// IPv4 special-purpose
		"0.0.0.0", "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.0.1",
		"169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.0.170", "192.0.2.1",
		"192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9",
		"224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.254", "255.255.255.255",
		// IPv6 special-purpose
		"::", "::1", "100::1", "100::ffff:ffff:ffff:ffff", "2001::1", "2001:1::1", "2001:2::1", "2001:3::1",
		"2001:4:112::1", "2001:10::1", "2001:20::1", "2001:1ff:ffff::1", "2001:db8::1", "2001:db8:ffff::1",
		"fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "febf::1", "ff02::1", "ff0e::1",
		"3fff::1", "3fff:fff::1", "5f00::1", "5f00:ffff::1",
		// outside 2000::/3: unallocated, IPv4-translated
		"4000::1", "::ffff:0:808:808", "1::1",
		// IPv4-mapped with an internal IPv4
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0",
		// NAT64 well-known prefix with an internal IPv4
		"64:ff9b::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::10.0.0.1", "64:ff9b::169.254.169.254", "64:ff9b::192.168.0.1",
		// NAT64 local-use prefix: refused whatever it embeds
		"64:ff9b:1::8.8.8.8", "64:ff9b:1:ffff::1",
		// 6to4 with an internal IPv4
		"2002:7f00:1::1", "2002:a00:1::", "2002:a9fe:a9fe::1", "2002:c0a8:101::1", "2002::1",
		// IPv4-compatible (deprecated) with an internal IPv4
		"::127.0.0.1", "::10.0.0.1", "::169.254.169.254", "::0.0.0.2",
	}
	allowed := []string{
		"140.82.112.6", "8.8.8.8", "1.1.1.1", "100.128.0.1", "100.63.255.255", "172.32.0.1", "192.0.1.1",
		"192.88.100.1", "198.20.0.1", "223.255.255.255",
		"2606:50c0:8000::154", "2a00:1450:4001::1", "2001:4860:4860::8888", "2001:200::1",
		"::ffff:140.82.112.6", "64:ff9b::140.82.112.6", "2002:8c52:7006::1", "::8.8.8.8",
	}
	for _, a := range refused {
		if !ghclient.RefusedAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s allowed, want refused", a)
		}
	}
	for _, a := range allowed {
		if ghclient.RefusedAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s refused, want allowed", a)
		}
	}
}

// TestSSRFDialRefusedThroughNAT64 dials a real URL whose address is a
// NAT64 form of the loopback: the guard refuses it at dial time (before
// this work the dial went out and failed as a network error, or reached a
// translator).
func TestSSRFDialRefusedThroughNAT64(t *testing.T) {
	for _, u := range []string{"http://[64:ff9b::7f00:1]:1", "http://[2002:7f00:1::1]:1", "http://[::7f00:1]:1", "http://198.18.0.1:1"} {
		gh := newGH(ghclient.HTTPOptions{})
		_, err := gh.Repo(context.Background(), ghclient.Target{BaseURL: u}, octo)
		if ae := apiErr(t, err); ae.Code != ghclient.CodeConfig || !errors.Is(err, ghclient.ErrBlockedAddress) {
			t.Errorf("%s: %+v %v, want the guard's refusal", u, ae, err)
		}
	}
}

// FuzzSSRFGuard checks the guard against an independent oracle: a refused
// address never is global unicast by the embedded-IPv4 rules, and an
// allowed one is in 2000::/3 or public IPv4.
func FuzzSSRFGuard(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1", "::7f00:1",
		"8.8.8.8", "2606:50c0:8000::154", "fe80::1%eth0", "64:ff9b:1::1", "2001:db8::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return
		}
		blocked := ghclient.RefusedAddr(netip.MustParseAddr(s))
		v4 := ip.Unmap()
		if v4.Is4() {
			if (v4.IsLoopback() || v4.IsPrivate() || v4.IsUnspecified() || v4.IsMulticast() || v4.IsLinkLocalUnicast()) && !blocked {
				t.Fatalf("%s allowed", s)
			}
			return
		}
		b := ip.As16()
		if !blocked && !(b[0]&0xe0 == 0x20 || (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) || ip.Is4In6() ||
			[12]byte(b[:12]) == [12]byte{}) {
			t.Fatalf("%s allowed outside 2000::/3 and the IPv4 forms", s)
		}
		if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
			if !blocked {
				t.Fatalf("%s allowed", s)
			}
		}
		// an embedded IPv4 that is refused refuses its carrier
		for _, emb := range []netip.Addr{netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[2:6]))} {
			if ghclient.RefusedAddr(netip.MustParseAddr(emb.String())) && !blocked {
				switch {
				case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && emb == netip.AddrFrom4([4]byte(b[12:16])):
					t.Fatalf("%s: NAT64 of refused %s allowed", s, emb)
				case b[0] == 0x20 && b[1] == 0x02 && emb == netip.AddrFrom4([4]byte(b[2:6])):
					t.Fatalf("%s: 6to4 of refused %s allowed", s, emb)
				}
			}
		}
	})
}
