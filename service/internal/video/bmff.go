package video

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// box is an ISO BMFF box read into memory: its type, where it starts in
// the file (a moof's position is the base of its samples' offsets) and
// its body, after the size and the type.
type box struct {
	typ  string
	at   int64
	head int64 // the header's length: the body starts at at+head
	body []byte
}

// maxChildren bounds the boxes of one parent read in memory: a moov has a
// few dozen, a moof's traf a handful.
const maxChildren = 10_000

// children splits a box's body (or a payload), which starts in the file
// at at, into its boxes; each checked against the parent's end.
func children(b []byte, at int64) ([]box, error) {
	var out []box
	for p := int64(0); p < int64(len(b)); {
		if len(out) == maxChildren {
			return out, fmt.Errorf("%w: more than %d boxes in one", ErrLimit, maxChildren)
		}
		size, head, typ, err := boxHeader(b[p:])
		if err != nil {
			return out, err
		}
		if size == 0 {
			size = int64(len(b)) - p
		}
		if size < head || size > int64(len(b))-p {
			return out, fmt.Errorf("a %q box of %d bytes, past its parent's end", typ, size)
		}
		out = append(out, box{typ: typ, at: at + p, head: head, body: b[p+head : p+size]})
		p += size
	}
	return out, nil
}

// boxHeader reads a box's size (0: to its parent's end), its header's
// length (8, or 16 with a 64-bit size) and its type.
func boxHeader(b []byte) (size, head int64, typ string, err error) {
	if len(b) < 8 {
		return 0, 0, "", errors.New("a box header cut short")
	}
	size, head, typ = int64(binary.BigEndian.Uint32(b)), 8, string(b[4:8])
	if size == 1 {
		if len(b) < 16 {
			return 0, 0, "", fmt.Errorf("a %q box's 64-bit size cut short", typ)
		}
		big := binary.BigEndian.Uint64(b[8:])
		if big > 1<<62 {
			return 0, 0, "", fmt.Errorf("a %q box of %d bytes", typ, big)
		}
		size, head = int64(big), 16
	}
	return size, head, typ, nil
}

// first is the first box of the type.
func first(bs []box, typ string) (box, bool) {
	for _, b := range bs {
		if b.typ == typ {
			return b, true
		}
	}
	return box{}, false
}

// count is how many boxes are of the type.
func count(bs []box, typ string) int {
	n := 0
	for _, b := range bs {
		if b.typ == typ {
			n++
		}
	}
	return n
}

// within is the children of the box reached from bs along the types.
func within(bs []box, types ...string) ([]box, error) {
	for _, t := range types {
		b, ok := first(bs, t)
		if !ok {
			return nil, fmt.Errorf("no %s box", t)
		}
		var err error
		if bs, err = children(b.body, b.at+b.head); err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
	}
	return bs, nil
}

// fields reads big-endian fields from a box's body; the first read past
// its end is remembered and every later read gives zeros.
type fields struct {
	b   []byte
	p   int
	err error
}

// full starts reading a full box: its version and flags.
func full(b box) (version uint8, flags uint32, f *fields) {
	f = &fields{b: b.body}
	v := f.n(4)
	return uint8(v >> 24), uint32(v) & 0xFFFFFF, f
}

// bytes takes the next n bytes.
func (f *fields) bytes(n int) []byte {
	if f.err != nil || n < 0 || n > len(f.b)-f.p {
		if f.err == nil {
			f.err = errors.New("fields cut short")
		}
		return nil
	}
	f.p += n
	return f.b[f.p-n : f.p]
}

// n reads an unsigned integer of size bytes (1 to 8).
func (f *fields) n(size int) uint64 {
	var v uint64
	for _, c := range f.bytes(size) {
		v = v<<8 | uint64(c)
	}
	return v
}

// left is how many bytes are still to be read.
func (f *fields) left() int { return len(f.b) - f.p }

// fileBox is a top-level box's header read from the file.
type fileBox struct {
	typ        string
	at, size   int64
	headLength int64
}

// readFileBox reads the box header at off; a size of 0 runs to the end
// of the file.
func readFileBox(src *source, off int64) (fileBox, error) {
	ahead := int64(headerAhead)
	if src.size-off <= readAhead {
		ahead = readAhead // the file's tail, a moov at the end most often: at once
	}
	b, err := src.read(off, min(16, src.size-off), ahead)
	if err != nil {
		return fileBox{}, err
	}
	size, head, typ, err := boxHeader(b)
	if err != nil {
		return fileBox{}, fmt.Errorf("at %d: %w", off, err)
	}
	if size == 0 {
		size = src.size - off
	}
	if size < head || size > src.size-off {
		return fileBox{}, fmt.Errorf("a %q box of %d bytes at %d, past the file's end at %d", typ, size, off, src.size)
	}
	return fileBox{typ: typ, at: off, size: size, headLength: head}, nil
}

// readBody reads a file box's body whole (under the budget).
func readBody(src *source, fb fileBox) (box, error) {
	b, err := src.read(fb.at+fb.headLength, fb.size-fb.headLength, exact)
	if err != nil {
		return box{}, fmt.Errorf("the %s box: %w", fb.typ, err)
	}
	return box{typ: fb.typ, at: fb.at, head: fb.headLength, body: b}, nil
}
