package thumbjob

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Span is a byte range of a source file: Size bytes at Offset.
type Span struct {
	Offset int64 `json:"o"`
	Size   int64 `json:"n"`
}

// ErrNotRead is a read of a ranged source outside the spans read from
// it: the job asked for bytes its plan did not (a refusal, never a
// guess at the bytes between).
var ErrNotRead = errors.New("outside the byte ranges read from the source")

// MergeSpans is spans sorted by offset, those that overlap or touch made
// one, empty ones dropped.
func MergeSpans(spans []Span) []Span {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b Span) int { return cmp.Compare(a.Offset, b.Offset) })
	var out []Span
	for _, sp := range s {
		if sp.Size <= 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Offset+out[n-1].Size >= sp.Offset {
			out[n-1].Size = max(out[n-1].Offset+out[n-1].Size, sp.Offset+sp.Size) - out[n-1].Offset
			continue
		}
		out = append(out, sp)
	}
	return out
}

// SpanBytes is the spans' bytes in all.
func SpanBytes(spans []Span) int64 {
	var n int64
	for _, s := range spans {
		n += s.Size
	}
	return n
}

// ReaderAt reads the source as its file: Bytes whole, or, for a ranged
// source (Spans), the file of Size bytes of which only the spans were
// read, their bytes one after the other in Bytes. A read that is not
// inside one span fails with ErrNotRead.
func (s Source) ReaderAt() (io.ReaderAt, int64) {
	if len(s.Spans) == 0 {
		return bytes.NewReader(s.Bytes), int64(len(s.Bytes))
	}
	return spanReader{s.Spans, s.Bytes, s.Size}, s.Size
}

// CheckSpans reports whether a ranged source's spans are ordered, apart,
// within its Size and exactly as long as its Bytes (a cell checks what
// its supervisor sent).
func (s Source) CheckSpans() error {
	if len(s.Spans) == 0 {
		return nil
	}
	var end int64
	for i, sp := range s.Spans {
		if sp.Offset < 0 || sp.Size <= 0 || i > 0 && sp.Offset <= end || sp.Offset > s.Size || sp.Size > s.Size-sp.Offset {
			return fmt.Errorf("span %d (%d bytes at %d) is out of order, empty or past the %d-byte file", i, sp.Size, sp.Offset, s.Size)
		}
		end = sp.Offset + sp.Size
	}
	if n := SpanBytes(s.Spans); n != int64(len(s.Bytes)) {
		return fmt.Errorf("spans of %d bytes with %d bytes", n, len(s.Bytes))
	}
	return nil
}

type spanReader struct {
	spans []Span
	b     []byte
	size  int64
}

func (r spanReader) ReadAt(p []byte, off int64) (int, error) {
	var at int64 // the span's bytes' place in b
	for _, s := range r.spans {
		if off >= s.Offset && off+int64(len(p)) <= s.Offset+s.Size {
			return copy(p, r.b[at+off-s.Offset:]), nil
		}
		at += s.Size
	}
	if off >= r.size {
		return 0, io.EOF
	}
	return 0, fmt.Errorf("%d bytes at %d: %w", len(p), off, ErrNotRead)
}
