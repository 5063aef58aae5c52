package origin

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// The guard's decision for every address form, as a pure function: no
// test dials anything outside loopback. want is a word of the reason, or
// "" for an address that may be dialed.
var guardTable = []struct {
	addr string
	want string
}{
	// IPv4: public, and the edges of every blocked range.
	{"1.1.1.1", ""},
	{"8.8.8.8", ""},
	{"93.184.216.34", ""},
	{"9.255.255.255", ""},
	{"11.0.0.0", ""},
	{"0.0.0.0", "unspecified"},
	{"0.1.2.3", "this network"},
	{"10.0.0.1", "private"},
	{"10.255.255.255", "private"},
	{"100.63.255.255", ""},
	{"100.64.0.0", "carrier-grade NAT"},
	{"100.100.100.200", "carrier-grade NAT"}, // Alibaba Cloud's metadata service
	{"100.127.255.255", "carrier-grade NAT"},
	{"100.128.0.0", ""},
	{"126.255.255.255", ""},
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"128.0.0.0", ""},
	{"169.253.255.255", ""},
	{"169.254.0.1", "link-local"},
	{"169.254.169.254", "link-local"}, // AWS, GCP, Azure metadata
	{"169.255.0.0", ""},
	{"172.15.255.255", ""},
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"172.32.0.0", ""},
	{"192.0.0.1", "IETF"},
	{"192.0.0.170", "IETF"},
	{"192.0.2.1", "TEST-NET-1"},
	{"192.88.99.1", "6to4 relay"},
	{"192.167.255.255", ""},
	{"192.168.0.1", "private"},
	{"192.168.255.255", "private"},
	{"192.169.0.0", ""},
	{"198.17.255.255", ""},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"198.20.0.0", ""},
	{"198.51.100.1", "TEST-NET-2"},
	{"203.0.113.1", "TEST-NET-3"},
	{"223.255.255.255", ""},
	{"224.0.0.1", "multicast"},
	{"239.255.255.250", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.254", "reserved"},
	{"255.255.255.255", "broadcast"},

	// IPv6 itself.
	{"2606:4700:4700::1111", ""},
	{"2001:4860:4860::8888", ""},
	{"2a00:1450:4001::1", ""},
	{"2001:200::1", ""},
	{"::", "unspecified"},
	{"::1", "loopback"},
	{"fc00::1", "unique local"},
	{"fd00:ec2::254", "unique local"}, // AWS metadata over IPv6
	{"fe80::1", "link-local"},
	{"fe80::1%eth0", "link-local"},
	{"febf::1", "link-local"},
	{"fec0::1", "site-local"},
	{"feff::1", "site-local"},
	{"ff02::1", "multicast"},
	{"ff05::1:3", "multicast"},
	{"100::1", "discard-only"},
	{"2001:db8::1", "documentation"},
	{"3fff::1", "documentation"},
	{"2001:2::1", "IETF protocol assignments"},  // benchmarking
	{"2001:10::1", "IETF protocol assignments"}, // ORCHID
	{"2001:1ff::1", "IETF protocol assignments"},
	{"4000::1", "not global unicast"},
	{"5f00::1", "not global unicast"},
	{"8000::1", "not global unicast"},
	{"e000::1", "not global unicast"},
	{"64:ff9b:1::a00:1", "local-use NAT64"},

	// IPv6 forms that carry an IPv4 address: judged by the address inside.
	{"::ffff:127.0.0.1", "loopback"}, // IPv4-mapped
	{"::ffff:10.0.0.1", "private"},
	{"::ffff:169.254.169.254", "link-local"},
	{"::ffff:100.64.0.1", "carrier-grade NAT"},
	{"::ffff:8.8.8.8", ""},
	{"::ffff:0:127.0.0.1", "loopback"}, // IPv4-translated (SIIT)
	{"::ffff:0:192.168.1.1", "private"},
	{"::ffff:0:8.8.8.8", ""},
	{"::127.0.0.1", "loopback"}, // IPv4-compatible (deprecated)
	{"::10.0.0.1", "private"},
	{"::2", "this network"},
	{"::8.8.8.8", ""},
	{"64:ff9b::127.0.0.1", "loopback"}, // NAT64
	{"64:ff9b::a00:1", "private"},
	{"64:ff9b::169.254.169.254", "link-local"},
	{"64:ff9b::100.64.0.1", "carrier-grade NAT"},
	{"64:ff9b::8.8.8.8", ""},
	{"2002:7f00:1::", "loopback"}, // 6to4
	{"2002:a00:1::1", "private"},
	{"2002:a9fe:a9fe::1", "link-local"},
	{"2002:c0a8:101::1", "private"},
	{"2002:6440:1::1", "carrier-grade NAT"},
	{"2002:808:808::1", ""},
	// Teredo: 2001:0:SERVER:flags:port:~CLIENT. The classic RFC 4380
	// example's client is 192.0.2.45 (documentation).
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "TEST-NET-1"},
	{"2001:0:4136:e378::80ff:fffe", "loopback"},             // client 127.0.0.1
	{"2001:0:4136:e378::f5ff:fffe", "private"},              // client 10.0.0.1
	{"2001:0:4136:e378::5601:5655", "link-local"},           // client 169.254.169.170
	{"2001:0:a00:1::f7f7:f7f7", "private"},                  // server 10.0.0.1, client 8.8.8.8
	{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", ""},            // client 8.8.8.8, server public
	{"2001:0:4136:e378:8000:63bf:ffff:ffff", "unspecified"}, // client 0.0.0.0
}

// Every form in the table is judged as it should be, and the Dialer hook
// (given the address as the dialer writes it, port and zone included)
// refuses exactly the addresses Judge refuses: none outside the
// allow-list's public addresses is reachable.
func TestGuardTable(t *testing.T) {
	control := guard(false)
	for _, tc := range guardTable {
		a := netip.MustParseAddr(tc.addr)
		got := Judge(a, false)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("Judge(%s) = %q, want %q", tc.addr, got, tc.want)
		}
		for _, port := range []uint16{80, 443, 8080} {
			err := control("tcp", netip.AddrPortFrom(a, port).String(), nil)
			if (err == nil) != (tc.want == "") {
				t.Errorf("control(%s port %d) = %v, want refused: %v", tc.addr, port, err, tc.want != "")
			}
		}
	}
}

// The loopback switch lets loopback through, in every form, and nothing
// else.
func TestGuardAllowLoopback(t *testing.T) {
	for _, tc := range guardTable {
		got := Judge(netip.MustParseAddr(tc.addr), true)
		loopback := tc.want == Loopback
		if loopback && got != "" || !loopback && (got == "") != (tc.want == "") {
			t.Errorf("Judge(%s, allowLoopback) = %q", tc.addr, got)
		}
	}
}

// control, the Dialer hook, refuses what Judge refuses and what it cannot
// parse, with a 403 that names the range but not the address.
func TestControl(t *testing.T) {
	control := guard(false)
	for addr, want := range map[string]apierr.Code{
		"8.8.8.8:443":            "",
		"[2606:4700::1111]:443":  "",
		"127.0.0.1:80":           apierr.OriginAddressBlocked,
		"[::1]:80":               apierr.OriginAddressBlocked,
		"[fe80::1%eth0]:80":      apierr.OriginAddressBlocked,
		"169.254.169.254:80":     apierr.OriginAddressBlocked,
		"[::ffff:10.0.0.1]:8080": apierr.OriginAddressBlocked,
		"example.com:80":         apierr.OriginAddressBlocked,
		"":                       apierr.OriginAddressBlocked,
	} {
		err := control("tcp", addr, nil)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", addr, err)
			}
			continue
		}
		e := apierr.From(err)
		if e.Code != want || e.Status() != 403 {
			t.Errorf("%s: %v", addr, err)
		}
		var blocked *BlockedError
		if errors.As(err, &blocked) && strings.Contains(e.Message, blocked.Addr.String()) {
			t.Errorf("%s: the message %q names the address", addr, e.Message)
		}
	}
	control = guard(true)
	if err := control("tcp4", "127.0.0.1:8080", nil); err != nil {
		t.Errorf("loopback allowed: %v", err)
	}
	if err := control("tcp4", "10.1.2.3:8080", nil); err == nil {
		t.Error("a private address passed with loopback allowed")
	}
}

// Only hosts that name loopback themselves are let through to it by the
// loopback switch: loopback literals, localhost and *.localhost names.
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true, "localhost": true, "images.localhost": true, "a.b.localhost": true,
		"images.example.com": false, "localhost.example.com": false, "xlocalhost": false, "10.0.0.1": false, "::": false,
		"0.0.0.0": false, "": false, "example.localhost.test": false,
		// a zoned address is never loopback for the switch
		"::1%lo": false, "::1%x.localhost": false, "127.0.0.1%lo": false, "::ffff:127.0.0.1%1": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v", host, got)
		}
	}
}
