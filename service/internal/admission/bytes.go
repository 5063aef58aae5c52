package admission

import (
	"errors"
	"io"
	"sync"
)

// ErrNoRoom means the byte budget is spent.
var ErrNoRoom = errors.New("admission: body budget spent")

// Bytes bounds the bytes held by request bodies while they are read and
// processed. Bodies take from it as their bytes arrive, so a client that
// sends slowly holds only what it has sent: slow uploads cannot hold the
// gate's places (requests take those once their body is in).
type Bytes struct {
	mu        sync.Mutex
	used, max int64
}

// NewBytes returns a budget of max bytes.
func NewBytes(max int64) *Bytes { return &Bytes{max: max} }

// Max is the budget's size.
func (b *Bytes) Max() int64 { return b.max }

// Used is the number of bytes taken.
func (b *Bytes) Used() int64 { b.mu.Lock(); defer b.mu.Unlock(); return b.used }

// Reader reads r, taking every byte read from the budget; Read fails with
// ErrNoRoom once the budget is spent. Close gives the bytes back.
func (b *Bytes) Reader(r io.Reader) *BytesReader { return &BytesReader{b: b, r: r} }

// BytesReader is a body reader that takes from a budget.
type BytesReader struct {
	b     *Bytes
	r     io.Reader
	taken int64
}

func (br *BytesReader) Read(p []byte) (int, error) {
	n, err := br.r.Read(p)
	if n > 0 {
		br.b.mu.Lock()
		ok := br.b.used+int64(n) <= br.b.max
		if ok {
			br.b.used += int64(n)
			br.taken += int64(n)
		}
		br.b.mu.Unlock()
		if !ok {
			return 0, ErrNoRoom
		}
	}
	return n, err
}

// Close gives back what the reader took. Call it once the bytes read are
// no longer held.
func (br *BytesReader) Close() {
	br.b.mu.Lock()
	br.b.used -= br.taken
	br.b.mu.Unlock()
	br.taken = 0
}
