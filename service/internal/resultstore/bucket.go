package resultstore

import (
	"context"
	"errors"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/bucket"
)

// Bucket is a result store in an S3 bucket, under the client's prefix.
// Each result is one object, written in one PUT (atomic: a reader sees the
// old object or the new one); its metadata travels as x-amz-meta-*.
type Bucket struct{ Client *bucket.Client }

func (b Bucket) String() string { return b.Client.Location().String() }

func (b Bucket) Get(ctx context.Context, key string, lim Limits) (Object, error) {
	r, err := b.Client.Get(ctx, key, bucket.GetOptions{})
	if bucket.NotFound(err) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, err
	}
	defer r.Close()
	// A size over the bound is refused unread (closed: not downloaded); an
	// answer without Content-Length (Size -1: chunked, or a gateway that
	// serves the object decompressed) is read up to the bound.
	body, release, err := lim.read(ctx, r, r.Size)
	if err != nil {
		return Object{}, err
	}
	// The client gives user metadata in canonical header form
	// ("Fresh-Until"); the store's names are lower case.
	meta := make(map[string]string, len(r.Metadata))
	for k, v := range r.Metadata {
		meta[strings.ToLower(k)] = v
	}
	return Object{ContentType: r.ContentType, Meta: meta, Body: body, release: release}, nil
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
