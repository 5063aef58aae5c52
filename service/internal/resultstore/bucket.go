package resultstore

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/bucket"
)

// Bucket is a result store in an S3 bucket, under the client's prefix.
// Each result is one object, written in one PUT (atomic: a reader sees the
// old object or the new one); its metadata travels as x-amz-meta-*.
type Bucket struct{ Client *bucket.Client }

func (b Bucket) String() string { return b.Client.Location().String() }

func (b Bucket) Get(ctx context.Context, key string, max int64) (Object, error) {
	r, err := b.Client.Get(ctx, key, bucket.GetOptions{})
	if bucket.NotFound(err) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, err
	}
	defer r.Close()
	if r.Size > max {
		return Object{}, errTooLarge(r.Size, max) // closed unread: not downloaded
	}
	var body []byte
	if r.Size >= 0 {
		body = make([]byte, r.Size)
		_, err = io.ReadFull(r, body)
	} else {
		// No Content-Length (a chunked answer, a gateway that serves the
		// object decompressed): read up to the bound, and one byte more
		// to know it was passed.
		body, err = io.ReadAll(io.LimitReader(r, max+1))
		if err == nil && int64(len(body)) > max {
			return Object{}, errTooLarge(int64(len(body)), max)
		}
	}
	if err != nil {
		return Object{}, err
	}
	// The client gives user metadata in canonical header form
	// ("Fresh-Until"); the store's names are lower case.
	meta := make(map[string]string, len(r.Metadata))
	for k, v := range r.Metadata {
		meta[strings.ToLower(k)] = v
	}
	return Object{ContentType: r.ContentType, Meta: meta, Body: body}, nil
}

func (b Bucket) Put(ctx context.Context, key string, o Object) error {
	return b.Client.Put(ctx, key, o.Body, o.ContentType, o.Meta)
}

// Check asks for the bucket (a HEAD): credentials refused and a missing
// bucket are the operator's to fix; anything else may pass.
func (b Bucket) Check(ctx context.Context) error {
	err := b.Client.Check(ctx)
	var e *apierr.Error
	if errors.As(err, &e) && (e.Code == apierr.BucketDenied || e.Code == apierr.BucketNotFound) {
		return &RefusedError{err}
	}
	return err
}
