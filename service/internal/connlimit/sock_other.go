//go:build !linux

package connlimit

import (
	"net"
	"syscall"
)

// DeferAccept does nothing here: a probe whose head has not come by the
// time its connection is accepted waits for a place as others do.
func DeferAccept(_, _ string, _ syscall.RawConn) error { return nil }

// peek sees nothing here: no connection is taken for a probe's.
func peek(net.Conn, []byte) int { return -1 }

// waitingBound: see the Linux one.
func waitingBound() int { return 1024 }
