package source

import (
	"context"
	"io"
	"strconv"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// Upload is the request body of POST /thumbnail.
type Upload struct {
	Limits
	Body   io.Reader
	Length int64 // Content-Length; -1 when unknown
}

// Read reads the body. A declared length over the limit is refused before
// a byte is read; a body that turns out longer is refused when it passes
// the limit, and in both cases the connection is closed rather than
// drained. The body is read before the request takes an admission place:
// a client that sends slowly holds only the bytes it sent, never a place.
// Its identity is its keyed hash: an upload has no other.
func (u Upload) Read(ctx context.Context) (*Blob, error) {
	if u.Length > u.MaxBytes {
		return nil, u.tooLarge()
	}
	var blob *Blob
	var err error
	if u.Length >= 0 {
		blob, err = u.Limits.ReadSized(ctx, u.Body, u.Length, Hashed, u.tooLarge)
	} else {
		blob, err = u.Limits.Read(u.Body, Hashed, u.tooLarge)
	}
	if ctx.Err() != nil && err == ctx.Err() {
		return nil, err // the deadline or the client's leaving: the pipeline answers
	}
	if err == nil || apierr.From(err).Code != apierr.Internal {
		return blob, err
	}
	return nil, apierr.New(apierr.BadParameter, "The request body could not be read: %s.", err)
}

func (u Upload) tooLarge() error {
	return &apierr.Error{Code: apierr.BodyTooLarge, CloseConnection: true,
		Message: apierr.Sentence(BodyTooLargeMessage(u.MaxBytes))}
}

// BodyTooLargeMessage is the 413's sentence, shared with POST /hash.
func BodyTooLargeMessage(max int64) string {
	return "The request body is larger than the " + strconv.FormatInt(max, 10) + " bytes allowed."
}
