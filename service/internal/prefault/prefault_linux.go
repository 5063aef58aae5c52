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
	if whole := wholePages(b); len(whole) > 0 {
		_ = unix.Madvise(whole, unix.MADV_POPULATE_WRITE)
	}
}

// wholePages is the part of b made of whole pages: madvise takes an
// aligned start, and a page b shares with other memory is left alone.
func wholePages(b []byte) []byte {
	page := os.Getpagesize()
	off := (page - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(page))) % page
	if off >= len(b) {
		return nil
	}
	return b[off : off+(len(b)-off)&^(page-1)]
}
