package main

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
)

// fakeDNS is a DNS server on 127.0.0.1 that answers every query of its
// address's type (A for IPv4, AAAA for IPv6) with that address, and every
// other query with no record (every query, for the zero netip.Addr: a name
// without an address), and a resolver that asks only it: DNS rebinding is
// tested without any other resolver being asked.
type fakeDNS struct {
	resolver *net.Resolver
	queries  atomic.Int32
}

func startFakeDNS(t *testing.T, answer netip.Addr) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	d := &fakeDNS{}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], answer); resp != nil {
				d.queries.Add(1)
				pc.WriteTo(resp, from)
			}
		}
	}()
	d.resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	return d
}

// dnsAnswer answers query (RFC 1035 wire format) with addr for a question
// of addr's type, and with no record for any other (any, when addr is not
// valid); nil for a packet that is not a query of one question.
func dnsAnswer(query []byte, addr netip.Addr) []byte {
	if len(query) < 12 || query[2]&0x80 != 0 || binary.BigEndian.Uint16(query[4:6]) != 1 {
		return nil
	}
	end := 12
	for end < len(query) && query[end] != 0 {
		end += int(query[end]) + 1
	}
	end += 5 // the root label, QTYPE, QCLASS
	if end > len(query) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(query[end-4 : end-2])
	var want uint16 // no record
	switch {
	case addr.Is4():
		want = 1 // A
	case addr.Is6():
		want = 28 // AAAA
	}
	resp := append([]byte{}, query[:end]...)
	resp[2], resp[3] = 0x81, 0x80 // a response, recursion desired and available, no error
	binary.BigEndian.PutUint16(resp[6:8], 0)
	binary.BigEndian.PutUint16(resp[8:10], 0)
	binary.BigEndian.PutUint16(resp[10:12], 0) // the query's EDNS record is not echoed
	if want != 0 && qtype == want {
		binary.BigEndian.PutUint16(resp[6:8], 1)
		rdata := addr.AsSlice()
		resp = append(resp, 0xc0, 12) // the name: a pointer to the question's
		resp = binary.BigEndian.AppendUint16(resp, want)
		resp = binary.BigEndian.AppendUint16(resp, 1) // IN
		resp = binary.BigEndian.AppendUint32(resp, 0) // TTL
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
		resp = append(resp, rdata...)
	}
	return resp
}

func TestFakeDNSResolves(t *testing.T) {
	d := startFakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	addrs, err := d.resolver.LookupNetIP(context.Background(), "ip", "images.rebind.test")
	if err != nil || len(addrs) != 1 || addrs[0].Unmap() != netip.MustParseAddr("127.0.0.1") || d.queries.Load() == 0 {
		t.Fatalf("%v %v (%d queries)", addrs, err, d.queries.Load())
	}
	d = startFakeDNS(t, netip.MustParseAddr("::1"))
	if addrs, err := d.resolver.LookupNetIP(context.Background(), "ip", "images.rebind.test"); err != nil || len(addrs) != 1 || addrs[0] != netip.IPv6Loopback() {
		t.Fatalf("AAAA: %v %v", addrs, err)
	}
	d = startFakeDNS(t, netip.Addr{})
	if addrs, err := d.resolver.LookupNetIP(context.Background(), "ip", "images.rebind.test"); err == nil || d.queries.Load() == 0 {
		t.Fatalf("a name without an address: %v %v", addrs, err)
	}
}
