package thumbjob

import (
	"errors"
	"io"
	"slices"
	"testing"
)

func TestMergeSpans(t *testing.T) {
	got := MergeSpans([]Span{{100, 10}, {0, 4}, {4, 4}, {105, 20}, {50, 0}, {200, 1}})
	if want := []Span{{0, 8}, {100, 25}, {200, 1}}; !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// TestRangedReaderAt: a ranged source reads inside its spans only; a
// read that strays (between spans, across two, before the first) is
// ErrNotRead, never bytes of another place; past the file, EOF.
func TestRangedReaderAt(t *testing.T) {
	s := Source{Bytes: []byte("abcdXYZ"), Spans: []Span{{0, 4}, {100, 3}}, Size: 200}
	if err := s.CheckSpans(); err != nil {
		t.Fatal(err)
	}
	r, size := s.ReaderAt()
	if size != 200 {
		t.Errorf("size %d", size)
	}
	for _, c := range []struct {
		off  int64
		n    int
		want string
	}{{0, 4, "abcd"}, {1, 2, "bc"}, {100, 3, "XYZ"}, {102, 1, "Z"}} {
		p := make([]byte, c.n)
		if n, err := r.ReadAt(p, c.off); err != nil || string(p[:n]) != c.want {
			t.Errorf("%d at %d: %q, %v; want %q", c.n, c.off, p[:n], err, c.want)
		}
	}
	for _, c := range []struct {
		off int64
		n   int
	}{{3, 2}, {4, 1}, {50, 10}, {99, 2}, {101, 3}} {
		if _, err := r.ReadAt(make([]byte, c.n), c.off); !errors.Is(err, ErrNotRead) {
			t.Errorf("%d at %d: %v, want ErrNotRead", c.n, c.off, err)
		}
	}
	if _, err := r.ReadAt(make([]byte, 1), 200); err != io.EOF {
		t.Errorf("past the end: %v", err)
	}
	for _, bad := range []Source{
		{Bytes: []byte("abc"), Spans: []Span{{0, 4}}, Size: 10},              // fewer bytes than the spans
		{Bytes: []byte("abcdefgh"), Spans: []Span{{4, 4}, {0, 4}}, Size: 10}, // out of order
		{Bytes: []byte("abcd"), Spans: []Span{{8, 4}}, Size: 10},             // past the file
		{Bytes: []byte("abcdefgh"), Spans: []Span{{0, 4}, {2, 4}}, Size: 10}, // overlapping
	} {
		if bad.CheckSpans() == nil {
			t.Errorf("%+v passed its check", bad.Spans)
		}
	}
}
