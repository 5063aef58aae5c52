// Package bucketsource is the source kind of GET /thumbnail?src=NAME when
// THUMBD_SOURCE is a bucket (s3://BUCKET[/PREFIX]): NAME is an object's key
// under the prefix, so clients' URLs stay the same when the operator moves
// the images from a directory to a bucket.
//
// A name is checked before anything is asked of the bucket. The object's
// identity (for the ETag, merging and the result cache and store keys) is
// its ETag, or its size and Last-Modified when the server sends no ETag
// (gateways serving files placed beside them do so), asked by a HEAD
// (Identify) before the result cache is looked in; with a MaxAge, an
// identity is trusted that long without asking again. The object's size
// is known before a byte is read: over the limit it is refused unread,
// and the source budget is reserved before reading; an answer without a
// length is read as an upload of unknown length is, taking from the
// budget as its bytes come.
package bucketsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Config is the kind's settings.
type Config struct {
	// MaxAge (THUMBD_SOURCE_MAX_AGE) is how long an object's identity is
	// trusted without asking the bucket again: 0 asks on every request (a
	// replaced object is never served stale); more saves a HEAD per
	// request, and a replaced object's old thumbnails may be served that
	// long.
	MaxAge time.Duration
	// MaxIdentities bounds the identities remembered with a MaxAge
	// (default DefaultMaxIdentities).
	MaxIdentities int
}

// DefaultMaxIdentities bounds the identities remembered: about 200 bytes
// each, 2 MB in all.
const DefaultMaxIdentities = 10000

// Bucket is the source bucket.
type Bucket struct {
	limits source.Limits
	client *bucket.Client
	ids    *otter.Cache[string, bucket.Object] // nil: MaxAge 0
}

// New returns the source bucket read through client, every read through
// limits (the byte budget and size limit every source shares).
func New(client *bucket.Client, limits source.Limits, cfg Config) *Bucket {
	b := &Bucket{limits: limits, client: client}
	if cfg.MaxAge > 0 {
		b.ids = otter.Must(&otter.Options[string, bucket.Object]{
			MaximumSize:      cmpOr(cfg.MaxIdentities, DefaultMaxIdentities),
			ExpiryCalculator: otter.ExpiryWriting[string, bucket.Object](cfg.MaxAge),
		})
	}
	return b
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Check asks whether the bucket exists and takes thumbd's credentials
// (start-up): nil, or the bucket's error code.
func (b *Bucket) Check(ctx context.Context) error { return b.client.Check(ctx) }

// CheckAtStart asks the bucket, beside the service's start (a cold start
// does not wait for it), whether it exists and takes thumbd's credentials,
// within timeout. A refusal or a missing bucket is a configuration error:
// the channel gets it, naming the setting, and the service stops. An
// unreachable bucket is a warning: it may come up later, and src=
// requests answer bucket_unreachable until then. A nil Bucket (no source
// bucket) never fails.
func (b *Bucket) CheckAtStart(ctx context.Context, timeout time.Duration, logger *slog.Logger) <-chan error {
	failed := make(chan error, 1)
	if b == nil {
		return failed
	}
	where := b.client.Location().String()
	go func() {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := b.Check(ctx)
		e := apierr.From(err)
		switch {
		case err == nil:
			logger.Info("source bucket: reachable", "source", where)
		case e.Code == apierr.BucketDenied || e.Code == apierr.BucketNotFound:
			failed <- fmt.Errorf("THUMBD_SOURCE=%s: %s: %w", where, strings.TrimSuffix(e.Message, "."), e.Cause)
		case errors.Is(err, context.Canceled):
			// Shutting down before the answer.
		default:
			logger.Warn("source bucket: not reachable at start-up; src= requests answer 5xx until it is", "source", where, "code", e.Code, "err", e.Cause)
		}
	}()
	return failed
}

// CheckName applies the rules for a source name before the bucket is
// asked: no empty, "." or ".." segment (so no leading "/"), no NUL or
// control byte or backslash, and a key (prefix and name) S3 can hold.
// Everything under the prefix, and nothing else, is reachable.
func (b *Bucket) CheckName(name string) error {
	if !bucket.ValidKey(name) || len(b.client.Location().Prefix)+len(name) > bucket.MaxKey {
		return apierr.New(apierr.BadSourceName, "Parameter \"src\" must name an object of the source bucket: a relative key without empty, \".\" or \"..\" segments or control bytes, at most %d bytes.", bucket.MaxKey-len(b.client.Location().Prefix))
	}
	return nil
}

// Object is the source named name, its name checked here.
func (b *Bucket) Object(name string) (source.Identifiable, error) {
	if err := b.CheckName(name); err != nil {
		return nil, err
	}
	return &object{b: b, name: name}, nil
}

// object is one named object; known once identified.
type object struct {
	b     *Bucket
	name  string
	known *bucket.Object
}

// Identify asks the bucket for the object's identity (a HEAD), or takes
// the one remembered within MaxAge.
func (o *object) Identify(ctx context.Context) (source.Keyed, error) {
	if o.b.ids != nil {
		if obj, ok := o.b.ids.GetIfPresent(o.name); ok {
			return &object{b: o.b, name: o.name, known: &obj}, nil
		}
	}
	obj, err := o.b.client.Stat(ctx, o.name)
	if err != nil {
		return nil, o.named(err)
	}
	if o.b.ids != nil {
		o.b.ids.Set(o.name, obj)
	}
	return &object{b: o.b, name: o.name, known: &obj}, nil
}

// Key is the bucket, the key and the version identified: a replaced
// object is another key, so no cached thumbnail of it is served stale
// (beyond MaxAge, when one is set).
func (o *object) Key() string {
	if o.known == nil {
		return ""
	}
	return o.Identity() + "\x00" + version(*o.known)
}

// Identity is the object without its version: what names all its
// thumbnails, whichever version (the result store's source.Named).
func (o *object) Identity() string {
	loc := o.b.client.Location()
	return "s3\x00" + loc.Bucket + "\x00" + loc.Prefix + o.name
}

// version is the object's ETag, else its size and modification time.
func version(obj bucket.Object) string {
	if obj.ETag != "" {
		return "etag:" + obj.ETag
	}
	return "size:" + strconv.FormatInt(obj.Size, 10) + "\x00" + strconv.FormatInt(obj.LastModified.UnixNano(), 10)
}

// Read reads the object through the budget. Identified, it reads only the
// version identified (If-Match on its ETag) and refuses an object over the
// limit before asking for its bytes; the object replaced since is read
// anew, its thumbnail then not kept (the key names the old version).
func (o *object) Read(ctx context.Context) (*source.Blob, error) {
	if o.known != nil && o.known.Size > o.b.limits.MaxBytes {
		return nil, o.tooLarge()
	}
	var opts bucket.GetOptions
	if o.known != nil {
		opts.IfMatch = o.known.ETag
	}
	r, err := o.b.client.Get(ctx, o.name, opts)
	if errors.Is(err, bucket.ErrChanged) {
		if o.b.ids != nil {
			o.b.ids.Invalidate(o.name)
		}
		r, err = o.b.client.Get(ctx, o.name, bucket.GetOptions{})
	}
	if err != nil {
		return nil, o.named(err)
	}
	defer r.Close()
	return o.readBody(ctx, r, nil)
}

// readBody reads r's body, whose first bytes head were read already,
// through the budget.
func (o *object) readBody(ctx context.Context, r *bucket.Reader, head []byte) (*source.Blob, error) {
	if r.Size > o.b.limits.MaxBytes {
		return nil, o.tooLarge() // closed unread: the rest is not downloaded
	}
	blob, err := o.b.limits.ReadSized(ctx, io.MultiReader(bytes.NewReader(head), r), r.Size, o.identity(r.Object), o.tooLarge)
	if err != nil {
		return nil, o.named(err)
	}
	if o.known != nil && version(r.Object) == version(*o.known) {
		blob.Fresh = source.Freshness{Store: true, Until: time.Unix(1<<62, 0)} // the key holds the version: never stale
	}
	return blob, nil
}

// ReadRanges reads an identified object by range when plan finds the
// ranges a job needs (a video's index and the packets of the frames it
// decodes: source.Ranged). The GET is the one Read makes; its first bytes
// are sniffed before the rest is read. A video is then read by range
// instead, each range a GET of the version identified (Range and
// If-Match), the object of any length and the bytes read within
// MaxBytes. Anything else (an image, an object without an ETag to hold
// the ranges to one version) is read from that same GET, whole, as Read
// reads it; an object replaced meanwhile is read anew, whole.
func (o *object) ReadRanges(ctx context.Context, plan source.Planner) (*source.Blob, error) {
	if plan == nil || o.known == nil || o.known.ETag == "" {
		return o.Read(ctx)
	}
	r, err := o.b.client.Get(ctx, o.name, bucket.GetOptions{IfMatch: o.known.ETag})
	if errors.Is(err, bucket.ErrChanged) {
		return o.changed(ctx)
	}
	if err != nil {
		return nil, o.named(err)
	}
	defer r.Close()
	head := make([]byte, min(max(r.Size, 0), sniffHead))
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, o.named(err)
	}
	at := &objectAt{ctx: ctx, o: o, head: head}
	var spans []thumbjob.Span
	if r.Size > sniffHead {
		spans = plan(at, r.Size)
	}
	switch {
	case at.err != nil:
		return o.changed(ctx) // its ranges failed partway: the object anew
	case len(spans) == 0:
		return o.readBody(ctx, r, head) // not a video: the rest of this GET
	}
	r.Close() // the rest unread: the ranges are read instead
	blob, err := o.b.limits.ReadSpans(ctx, spans, o.known.Size, at.openSpan, o.Identity()+"\x00"+version(*o.known), fmt.Sprintf("video %q", o.name))
	if errors.Is(err, bucket.ErrChanged) {
		return o.changed(ctx)
	}
	if err != nil {
		return nil, o.named(err)
	}
	blob.Fresh = source.Freshness{Store: true, Until: time.Unix(1<<62, 0)} // the key holds the version: never stale
	return blob, nil
}

// sniffHead is how much of an object is read before deciding to read it
// by range: as many bytes as a video's container is sniffed from.
const sniffHead = 4096

// changed reads an object replaced since it was identified: anew, whole.
func (o *object) changed(ctx context.Context) (*source.Blob, error) {
	if o.b.ids != nil {
		o.b.ids.Invalidate(o.name)
	}
	return (&object{b: o.b, name: o.name}).Read(ctx)
}

// objectAt reads the identified version of an object by range: reads
// within its first bytes from them, others one GET each. Its first
// failure is kept: the object is then read anew, whole.
type objectAt struct {
	ctx  context.Context
	o    *object
	head []byte // the object's first bytes, read already
	err  error
}

func (a *objectAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= int64(len(a.head)) {
		return copy(p, a.head[off:]), nil
	}
	r, err := a.openSpan(thumbjob.Span{Offset: off, Size: int64(len(p))})
	if err != nil {
		a.err = err
		return 0, err
	}
	defer r.Close()
	n, err := io.ReadFull(r, p)
	if err != nil {
		a.err = err
	}
	return n, err
}

// openSpan opens the body of one span of the version identified.
func (a *objectAt) openSpan(sp thumbjob.Span) (io.ReadCloser, error) {
	r, err := a.o.b.client.Get(a.ctx, a.o.name, bucket.GetOptions{IfMatch: a.o.known.ETag, Offset: sp.Offset, Length: sp.Size})
	if err != nil {
		return nil, err
	}
	if r.Size != sp.Size {
		r.Close()
		return nil, fmt.Errorf("a range of %d bytes at %d answered with %d", sp.Size, sp.Offset, r.Size)
	}
	return r, nil
}

// identity is the identity of obj's bytes (source.Blob.ID), the version
// read, as the key's is: an object replaced gets another ETag, so its
// bytes need no hash. An answer with neither an ETag nor a
// Last-Modified names no version: its bytes are hashed.
func (o *object) identity(obj bucket.Object) string {
	if obj.ETag == "" && obj.LastModified.IsZero() {
		return source.Hashed
	}
	return o.Identity() + "\x00" + version(obj)
}

func (o *object) tooLarge() error {
	return apierr.New(apierr.SourceTooLarge, "Source %q is larger than the %d bytes allowed.", o.name, o.b.limits.MaxBytes)
}

// named gives a missing object's answer the name asked for; other errors
// pass as they are (the pipeline answers the request's own deadline).
func (o *object) named(err error) error {
	var e *apierr.Error
	if errors.As(err, &e) && e.Code == apierr.SourceNotFound {
		return apierr.New(apierr.SourceNotFound, "No source named %q.", o.name)
	}
	return err
}
