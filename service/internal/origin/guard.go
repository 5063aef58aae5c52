package origin

import (
	"net/netip"
	"strings"
	"syscall"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// The SSRF guard. It judges the address a socket is about to connect to,
// from net.Dialer's Control hook: after DNS, on every redirect hop and
// every reconnect, before a packet leaves. What a name resolves to at the
// moment of the dial is what counts, so DNS rebinding gains nothing.

// rangeOf is one range the guard refuses, with the name it gives it.
type rangeOf struct {
	prefix netip.Prefix
	what   string
}

func ranges(rs ...string) []rangeOf {
	out := make([]rangeOf, 0, len(rs)/2)
	for i := 0; i < len(rs); i += 2 {
		out = append(out, rangeOf{netip.MustParsePrefix(rs[i]), rs[i+1]})
	}
	return out
}

// Loopback is the name the guard gives loopback addresses, the one range
// THUMBD_ORIGINS_ALLOW_LOOPBACK lets through.
const Loopback = "loopback"

// blockedV4 is every IPv4 range that is not public unicast, from IANA's
// special-purpose registry (RFC 6890 and later). 255.255.255.255 comes
// before 240.0.0.0/4 so that it is named for what it is.
var blockedV4 = ranges(
	"0.0.0.0/8", "this network (unspecified)",
	"10.0.0.0/8", "private (RFC 1918)",
	"100.64.0.0/10", "carrier-grade NAT (RFC 6598)",
	"127.0.0.0/8", Loopback,
	"169.254.0.0/16", "link-local (cloud metadata services live here)",
	"172.16.0.0/12", "private (RFC 1918)",
	"192.0.0.0/24", "IETF protocol assignments",
	"192.0.2.0/24", "documentation (TEST-NET-1)",
	"192.88.99.0/24", "6to4 relay anycast (deprecated)",
	"192.168.0.0/16", "private (RFC 1918)",
	"198.18.0.0/15", "benchmarking (RFC 2544)",
	"198.51.100.0/24", "documentation (TEST-NET-2)",
	"203.0.113.0/24", "documentation (TEST-NET-3)",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

// blockedV6 is every IPv6 range refused outright. The forms that carry an
// IPv4 address are not here: they are judged by the address inside
// (embeddedV4). Whatever is outside 2000::/3 (global unicast) is refused
// too, so a range IANA assigns later starts out blocked.
var blockedV6 = ranges(
	"::/128", "unspecified",
	"::1/128", Loopback,
	"64:ff9b:1::/48", "local-use NAT64 (RFC 8215)",
	"100::/64", "discard-only (RFC 6666)",
	"fc00::/7", "unique local (ULA)",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local (deprecated)",
	"ff00::/8", "multicast",
	"2001:db8::/32", "documentation",
	"3fff::/20", "documentation",
	"2001::/23", "IETF protocol assignments (benchmarking, ORCHID, ...)",
)

var globalUnicast = netip.MustParsePrefix("2000::/3")

// embeddedV4 returns the IPv4 address an IPv6 address carries, in the forms
// that reach an IPv4 host: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
// (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96),
// 6to4 (2002::/16, the 32 bits after the prefix) and Teredo (2001::/32: the
// client's address, stored inverted in the last 32 bits, and the server's,
// in bits 32-63). ok is false for any other address.
func embeddedV4(a netip.Addr) (v4 []netip.Addr, ok bool) {
	b := a.As16()
	last := netip.AddrFrom4([4]byte(b[12:16]))
	zero := func(bs []byte) bool {
		for _, x := range bs {
			if x != 0 {
				return false
			}
		}
		return true
	}
	switch {
	case a.Is4In6():
		return []netip.Addr{last}, true
	case zero(b[:8]) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0:
		return []netip.Addr{last}, true
	case zero(b[:12]): // :: and ::1 are judged before this is asked
		return []netip.Addr{last}, true
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(b[4:12]):
		return []netip.Addr{last}, true
	case b[0] == 0x20 && b[1] == 0x02:
		return []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))}, true
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return []netip.Addr{netip.AddrFrom4(client), netip.AddrFrom4([4]byte(b[4:8]))}, true
	}
	return nil, false
}

// Judge returns why a may not be dialed, or "" when it may. It is a pure
// function of the address (and of whether loopback is let through), so
// that every range is tested without sending a packet anywhere.
func Judge(a netip.Addr, allowLoopback bool) string {
	a = a.WithZone("")
	if a.Is4() {
		return judgeIn(blockedV4, a, allowLoopback)
	}
	if a == netip.IPv6Unspecified() || a == netip.IPv6Loopback() {
		return judgeIn(blockedV6, a, allowLoopback)
	}
	if inner, ok := embeddedV4(a); ok {
		for _, v4 := range inner {
			if why := judgeIn(blockedV4, v4, allowLoopback); why != "" {
				return "an IPv6 form carrying an IPv4 address that is " + why
			}
		}
		return ""
	}
	if why := judgeIn(blockedV6, a, allowLoopback); why != "" {
		return why
	}
	if !globalUnicast.Contains(a) {
		return "not global unicast (reserved)"
	}
	return ""
}

func judgeIn(rs []rangeOf, a netip.Addr, allowLoopback bool) string {
	for _, r := range rs {
		if r.prefix.Contains(a) {
			if r.what == Loopback && allowLoopback {
				return ""
			}
			return r.what
		}
	}
	return ""
}

// guard is net.Dialer's Control hook: it runs once per socket, with the
// literal address about to be connected to, and refuses the connection
// before it is made.
func guard(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &apierr.Error{Code: apierr.OriginAddressBlocked, Message: "The origin's address could not be judged, so it is not dialed.", Cause: err}
		}
		if why := Judge(ap.Addr(), allowLoopback); why != "" {
			return &apierr.Error{Code: apierr.OriginAddressBlocked,
				Message: "The origin resolves to an address thumbd does not connect to: " + why + ".",
				Cause:   &BlockedError{Addr: ap.Addr(), Why: why}}
		}
		return nil
	}
}

// LoopbackHost reports whether host (as Check leaves it: lowercase, no
// trailing dot, an IP literal canonical) names loopback itself: a
// loopback literal, localhost, or a name below .localhost (RFC 6761). Only
// such hosts are let through to loopback by THUMBD_ORIGINS_ALLOW_LOOPBACK.
// A zoned address ("::1%lo") never is: Check lets none through, and the
// switch does not depend on that.
func LoopbackHost(host string) bool {
	if strings.Contains(host, "%") {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().IsLoopback()
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// BlockedError is the guard's refusal, kept as the cause of the answer so
// that the address is logged but never sent to the client.
type BlockedError struct {
	Addr netip.Addr
	Why  string
}

func (e *BlockedError) Error() string { return "address " + e.Addr.String() + " blocked: " + e.Why }
