package connlimit

import (
	"net"
	"syscall"
)

// DeferAccept is a net.ListenConfig's Control: the kernel hands the
// listener a connection only once its first bytes have come
// (TCP_DEFER_ACCEPT, as nginx's "deferred"), so that a probe's head is in
// the socket's buffer when the connection is accepted (probe.go). One
// that sends nothing is handed over after about a second all the same.
func DeferAccept(_, _ string, rc syscall.RawConn) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, 1)
	}); cerr != nil {
		return cerr
	}
	return err
}

// peek copies the bytes waiting in c's socket into buf without taking
// them and without waiting: how many (0: the client closed), or -1 when
// none wait or c is no socket. It does not take c's read lock, so it
// never waits for a read in flight.
func peek(c net.Conn, buf []byte) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	_ = rc.Control(func(fd uintptr) {
		m, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == nil {
			n = m
		}
	})
	return n
}

// waitingBound is how many connections may wait, accepted, for a place:
// as many as Linux's listen backlog holds by default (somaxconn, 4096),
// within a quarter of the descriptors the process may open.
func waitingBound() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return int(min(4096, max(lim.Cur/4, 64)))
}
