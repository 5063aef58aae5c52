package connlimit

import (
	"bytes"
	"net"
)

// The probes' reserve. A liveness probe opens a new connection each time
// (a kubelet's does), and past the cap a new connection waits behind
// every client already waiting for a place: with closed-loop clients
// that is hundreds, drained at the rate thumbnails finish, so the probe
// timed out (10 of 12 at 1 s, 500 clients, no settings). Knative and
// load balancers probe the serving port, so an admin port does not
// answer it. Instead, a connection arriving while others wait is looked
// at before it waits: its first bytes are peeked from the socket, not
// read (the listener asks the kernel to hand over a connection only once
// its first bytes have come: DeferAccept), and when they are the whole
// head of a GET or HEAD of a probe path without a body it is served at
// once, in one of probeReserve places of its own beyond the cap, for one
// request. Anything else waits as before, unread; so does a probe whose
// head has not come whole yet, or that finds the reserve taken.

// probeReserve is how many probe connections may be served past the cap
// at once: a probe's answer takes microseconds and its connection closes
// after it, so a few places serve a kubelet's probes, a load balancer's
// and a scrape together.
const probeReserve = 8

// isProbe peeks at c's first bytes (into buf, which bounds the head)
// and says whether they are the whole head of a probe of one of paths.
func isProbe(c net.Conn, buf []byte, paths []string) bool {
	n := peek(c, buf)
	return n > 0 && probeHead(buf[:n], paths)
}

// probeHead: head holds a whole request head, a GET or a HEAD of one of
// paths (a query allowed) over HTTP/1, with no body.
func probeHead(head []byte, paths []string) bool {
	end := bytes.Index(head, []byte("\r\n\r\n"))
	if end < 0 {
		return false
	}
	line, fields, _ := bytes.Cut(head[:end+2], []byte("\r\n"))
	method, rest, _ := bytes.Cut(line, []byte(" "))
	target, proto, _ := bytes.Cut(rest, []byte(" "))
	path, _, _ := bytes.Cut(target, []byte("?"))
	if string(method) != "GET" && string(method) != "HEAD" || !bytes.HasPrefix(proto, []byte("HTTP/1.")) || !known(path, paths) {
		return false
	}
	for len(fields) > 0 {
		var field []byte
		field, fields, _ = bytes.Cut(fields, []byte("\r\n"))
		name, value, _ := bytes.Cut(field, []byte(":"))
		name, value = bytes.TrimSpace(name), bytes.TrimSpace(value)
		if bytes.EqualFold(name, []byte("Transfer-Encoding")) || bytes.EqualFold(name, []byte("Content-Length")) && string(value) != "0" {
			return false // a body would hold the place while it comes
		}
	}
	return true
}

func known(path []byte, paths []string) bool {
	for _, p := range paths {
		if string(path) == p {
			return true
		}
	}
	return false
}
