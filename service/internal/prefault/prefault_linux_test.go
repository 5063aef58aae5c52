package prefault

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fresh is n bytes of anonymous memory that no page of is present yet.
func fresh(t testing.TB, n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	// Small pages only: where transparent huge pages are always on, one
	// fault could map 2 MiB around the buffer and fail the page counts.
	if err := unix.Madvise(b, unix.MADV_NOHUGEPAGE); err != nil {
		t.Fatal(err)
	}
	return b
}

// present counts b's pages that are mapped (b page-aligned).
func present(t *testing.T, b []byte) int {
	vec := make([]byte, (len(b)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// Write maps every whole page of the buffer and none outside it, before
// a byte is written, and changes no byte; a buffer left alone stays
// unmapped (the control: the kernel does not map ahead on its own).
func TestWriteMapsWholePages(t *testing.T) {
	page := os.Getpagesize()
	const pages = 64
	mem := fresh(t, (pages+2)*page)
	if got := present(t, mem); got != 0 {
		t.Fatalf("fresh memory: %d pages present", got)
	}
	// A buffer that starts and ends inside a page: only its whole pages.
	Write(mem[page+1 : (pages+1)*page+1 : (pages+1)*page+1])
	if got := present(t, mem[:page]); got != 0 {
		t.Errorf("the page before the buffer's first whole page was mapped")
	}
	if got := present(t, mem[2*page:(pages+1)*page]); got != pages-1 {
		t.Errorf("%d of the buffer's %d whole pages mapped", got, pages-1)
	}
	if got := present(t, mem[(pages+1)*page:]); got != 0 {
		t.Errorf("the page after the buffer was mapped")
	}
	if !bytes.Equal(mem, make([]byte, len(mem))) {
		t.Errorf("Write changed the bytes")
	}
	control := fresh(t, pages*page)
	if got := present(t, control); got != 0 {
		t.Errorf("control: %d pages present", got)
	}
}

// The capacity counts, not the length: a buffer is made empty and read
// into; and a buffer under minBytes is left to fault.
func TestWriteUsesTheCapacity(t *testing.T) {
	page := os.Getpagesize()
	mem := fresh(t, 2*minBytes)
	Write(mem[:0])
	if got := present(t, mem); got != len(mem)/page {
		t.Errorf("an empty buffer of %d bytes' capacity: %d of %d pages mapped", len(mem), got, len(mem)/page)
	}
	small := fresh(t, minBytes/2)
	Write(small)
	if got := present(t, small); got != 0 {
		t.Errorf("a buffer under minBytes: %d pages mapped", got)
	}
}

// Go's own heap, the buffers it is used on: their whole pages are mapped
// and the buffer is usable after.
func TestWriteOnTheGoHeap(t *testing.T) {
	b := make([]byte, 0, 4<<20)
	Write(b)
	whole := wholePages(b[:cap(b)])
	if got, want := present(t, whole), len(whole)/os.Getpagesize(); got != want || want == 0 {
		t.Errorf("%d of the buffer's %d whole pages mapped", got, want)
	}
	b = append(b, bytes.Repeat([]byte{7}, 4<<20)...)
	if b[0] != 7 || b[len(b)-1] != 7 {
		t.Fatal("the buffer is not usable after Write")
	}
}

// BenchmarkFill fills 16 MiB of fresh memory, page by page as a read
// does, with and without Write first: the cost of a fault against a page
// populated in bulk.
func BenchmarkFill(b *testing.B) {
	const n = 16 << 20
	for _, pre := range []bool{false, true} {
		name := "faults"
		if pre {
			name = "prefault"
		}
		b.Run(name, func(b *testing.B) {
			page := os.Getpagesize()
			for b.Loop() {
				b.StopTimer()
				mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if pre {
					Write(mem)
				}
				for i := 0; i < n; i += page {
					mem[i] = 1
				}
				b.StopTimer()
				unix.Munmap(mem)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n/page)/1000, "µs/page")
		})
	}
}
