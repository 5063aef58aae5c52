package admission

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// ErrNoRoom means the byte budget is spent.
var ErrNoRoom = errors.New("admission: body budget spent")

// ErrBadLength is a reservation of a negative length: a caller with no
// declared length reads through Reader instead.
var ErrBadLength = errors.New("admission: a negative length reserved")

// Bytes bounds the bytes held by request bodies while they are read and
// processed. A body of known length reserves all of it before its first
// byte is read, waiting in arrival order while the budget is spent: the
// client's upload then waits in the kernel's buffers (TCP backpressure)
// instead of being refused and sent again at once, and no two half-read
// bodies can each wait for the other's bytes. A body of unknown length
// takes from the budget as its bytes arrive and fails when it is spent.
// Either way a client that sends slowly holds no gate place (requests take
// those once their body is in).
type Bytes struct {
	sem *semaphore.Weighted
	// held bounds how many bodies of known length this view holds at once
	// (nil: no bound beyond the bytes; WithHeld).
	held *semaphore.Weighted
	max  int64
	used *atomic.Int64 // shared by the views of one budget
}

// NewBytes returns a budget of max bytes.
func NewBytes(max int64) *Bytes {
	return &Bytes{sem: semaphore.NewWeighted(max), max: max, used: new(atomic.Int64)}
}

// WithHeld is a view of the same budget (its bytes shared with b and every
// other view) through which at most n bodies of known length are held at
// once: a body reserved past n waits, unread, as one past the bytes does.
// It is for sources read at disk or data-centre speed (files, a bucket's
// objects), which only need to be read a little ahead of the jobs that
// process them: the bytes alone let many sources far below the largest
// be read ahead, and 10 clients of a 25 MB TIFF with 320 MB of budget held
// 12 at once (RSS 620 MB) and made 3.4-4.3 thumbnails/s, against 4.6-5.1
// with 2 held (bench/results/2026-12-06-read-ahead). Uploads and origins
// keep the bytes alone: a slow client holding one of few places would
// leave the slots idle.
func (b *Bytes) WithHeld(n int64) *Bytes {
	v := *b
	v.held = semaphore.NewWeighted(max(n, 1))
	return &v
}

// Max is the budget's size.
func (b *Bytes) Max() int64 { return b.max }

// Used is the number of bytes taken.
func (b *Bytes) Used() int64 { return b.used.Load() }

// Reader reads r, taking every byte read from the budget; Read fails with
// ErrNoRoom once the budget is spent. Close gives the bytes back.
func (b *Bytes) Reader(r io.Reader) *BytesReader { return &BytesReader{b: b, r: r} }

// Reserve waits until n bytes are free, and a body's place in a WithHeld
// view (or ctx is done: its error), takes them, and returns a reader of r
// that reads its first n bytes on them; bytes beyond n are taken as they
// arrive, as Reader does.
func (b *Bytes) Reserve(ctx context.Context, r io.Reader, n int64) (*BytesReader, error) {
	if n < 0 {
		return nil, ErrBadLength
	}
	if n > b.max {
		return nil, ErrNoRoom
	}
	if b.held != nil && !b.held.TryAcquire(1) {
		if err := b.held.Acquire(ctx, 1); err != nil {
			return nil, err
		}
	}
	if !b.sem.TryAcquire(n) {
		if err := b.sem.Acquire(ctx, n); err != nil {
			if b.held != nil {
				b.held.Release(1)
			}
			return nil, err
		}
	}
	b.used.Add(n)
	return &BytesReader{b: b, r: r, taken: n, reserved: n, held: b.held != nil}, nil
}

// Take takes n bytes if they are free now, without waiting: false when
// they are not. Give gives them back.
func (b *Bytes) Take(n int64) bool {
	if n <= 0 {
		return true
	}
	if !b.sem.TryAcquire(n) {
		return false
	}
	b.used.Add(n)
	return true
}

// Give gives back n bytes Take took.
func (b *Bytes) Give(n int64) {
	if n > 0 {
		b.sem.Release(n)
		b.used.Add(-n)
	}
}

// BytesReader is a body reader that takes from a budget.
type BytesReader struct {
	b               *Bytes
	r               io.Reader
	taken, reserved int64
	held            bool // holds one of a WithHeld view's places (Reserve)
}

func (br *BytesReader) Read(p []byte) (int, error) {
	n, err := br.r.Read(p)
	if n > 0 {
		over := int64(n)
		if br.reserved > 0 {
			use := min(over, br.reserved)
			br.reserved -= use
			over -= use
		}
		if over > 0 {
			if !br.b.sem.TryAcquire(over) {
				return 0, ErrNoRoom
			}
			br.b.used.Add(over)
			br.taken += over
		}
	}
	return n, err
}

// Close gives back what the reader took. Call it once the bytes read are
// no longer held.
func (br *BytesReader) Close() {
	if br.taken > 0 {
		br.b.sem.Release(br.taken)
		br.b.used.Add(-br.taken)
	}
	if br.held {
		br.b.held.Release(1)
	}
	br.taken, br.reserved, br.held = 0, 0, false
}
