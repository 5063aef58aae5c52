package video

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
)

// sniffBytes is what Open reads first: the ftyp box or the EBML header
// and, usually, the boxes or elements after it.
const sniffBytes = 4096

// How much a read asks for beyond the bytes wanted, when they are not in
// the last window: a round trip to a bucket costs far more than a few
// KiB, but a walk that hops over mdat boxes or clusters pays the window
// at every hop.
const (
	// headerAhead is for a box's or an element's header: the next
	// headers, and a small moof, are often in the same bytes.
	headerAhead = 4 << 10
	// readAhead is for reading on through data: the start of a file, a
	// cluster's blocks one after the other.
	readAhead = 64 << 10
	// exact reads no more than asked: a box or an element read whole.
	exact = 0
)

// source is the file under a byte budget: every ReadAt counted, none
// past the file's size or the budget, and the last window kept so that
// walking headers costs one read per window, not per header.
type source struct {
	r      io.ReaderAt
	size   int64
	budget int64
	stats  Stats
	win    []byte
	winAt  int64
}

// read returns n bytes at off, reading at least ahead bytes (as far as
// the file goes) when they are not in the last window.
func (s *source) read(off, n, ahead int64) ([]byte, error) {
	if off < 0 || n < 0 || off > s.size || n > s.size-off {
		return nil, fmt.Errorf("%d bytes at %d, past the file's %d", n, off, s.size)
	}
	if off >= s.winAt && off+n <= s.winAt+int64(len(s.win)) {
		return s.win[off-s.winAt : off-s.winAt+n], nil
	}
	want := min(max(n, ahead), s.size-off)
	if remaining := s.budget - s.stats.Bytes; want > remaining && n <= remaining {
		want = remaining // the window shrinks before the budget is exceeded
	}
	b, err := s.readExact(off, want)
	if err != nil {
		return nil, err
	}
	s.win, s.winAt = b, off
	return b[:n], nil
}

// readExact reads exactly n bytes at off, counted against the budget
// before anything is allocated.
func (s *source) readExact(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > s.size || n > s.size-off {
		return nil, fmt.Errorf("%d bytes at %d, past the file's %d", n, off, s.size)
	}
	if n > s.budget-s.stats.Bytes {
		return nil, fmt.Errorf("%w: reading %d bytes more than the %d bytes allowed", ErrLimit, s.stats.Bytes+n-s.budget, s.budget)
	}
	b := make([]byte, n)
	s.stats.Reads++
	s.stats.Bytes += n
	got, err := s.r.ReadAt(b, off)
	if got == len(b) {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("reading %d bytes at %d: %w", n, off, err)
}

// sortedByOffset is a copy of ps in file order.
func sortedByOffset(ps []Packet) []Packet {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b Packet) int { return cmp.Compare(a.Offset, b.Offset) })
	return out
}
