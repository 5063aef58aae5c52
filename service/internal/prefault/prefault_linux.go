package prefault

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Write makes the whole pages of b[:cap(b)] present and writable before b
// is written (MADV_POPULATE_WRITE, Linux 5.14 and later). Where the kernel
// refuses, it does nothing: the pages then fault in as they are written,
// as without it. b must be memory of this process's own (the Go heap, an
// anonymous mapping): the advice writes nothing, but it would allocate the
// pages of a file mapping.
func Write(b []byte) {
	b = b[:cap(b)]
	if len(b) < minBytes {
		return
	}
	page := os.Getpagesize()
	off := (page - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(page))) % page
	n := (len(b) - off) &^ (page - 1)
	if n <= 0 {
		return
	}
	_ = unix.Madvise(b[off:off+n], unix.MADV_POPULATE_WRITE)
}
