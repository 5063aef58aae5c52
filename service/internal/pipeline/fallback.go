package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Fallback is the image made in place of a source that could not be read
// (THUMBD_FALLBACK_IMAGE_*, imgproxy's IMGPROXY_FALLBACK_IMAGE_*): the
// request's own job runs on it, as imgproxy processes its fallback image
// with the URL's options.
type Fallback struct {
	Image []byte
	// Status is the answer's status; 0: the error's own.
	Status int
	// TTL is the answer's Cache-Control max-age; 0: THUMBD_TTL's.
	TTL time.Duration
}

// fallsBack are the errors answered with the fallback image: the source
// stage's, as imgproxy answers its fallback image for a failed download
// (handleDownloadError) and for nothing else. A request refused before
// its source is read (parse, signature, an origin not allowed), a source
// read that is not an image thumbd decodes, the engine's errors, overload
// and the deadline are answered as errors.
var fallsBack = []apierr.Code{apierr.SourceNotFound, apierr.SourceTooLarge,
	apierr.OriginError, apierr.OriginTimeout, apierr.TooManyRedirects, apierr.OriginAddressBlocked,
	apierr.BucketDenied, apierr.BucketNotFound, apierr.BucketUnreachable, apierr.BucketError, apierr.BucketTimeout}

// fallback answers a thumbnail whose source could not be read (cause)
// with the fallback image made by the same job, with its status and
// lifetime; it is kept in no cache. It returns cause when there is no
// fallback image, cause is not a source error, or the job fails on it.
func (p *Pipeline) fallback(w http.ResponseWriter, r *http.Request, start time.Time, job thumbjob.Job, cause error) error {
	fb, e := p.cfg.Fallback, apierr.From(cause)
	if fb == nil || job.Info != nil || !slices.Contains(fallsBack, e.Code) {
		return cause
	}
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(p.cfg.Deadline))
	defer cancel()
	entry, err := p.produce(ctx, nil, &source.Blob{Bytes: fb.Image, ID: "fallback"}, job, job.Normalised(), nil, "")
	if err != nil {
		LoggerFrom(ctx).Warn("the fallback image could not be made", "code", e.Code, "err", err)
		return cause
	}
	LoggerFrom(ctx).Warn("source not read: answered with the fallback image", "code", e.Code, "err", e.Message)
	p.Metrics.Fallbacks.WithLabelValues(string(e.Code)).Inc()
	status, ttl := fb.Status, p.Respond.ttl
	if status == 0 {
		status = e.Status()
	}
	if fb.TTL > 0 {
		ttl.MaxAge = fb.TTL
	}
	w.Header().Set("Cache-Control", source.Freshness{}.CacheControl(time.Now(), ttl))
	writeBody(w, status, entry.Type, entry.Body)
	entry.Release()
	return nil
}

// ReadImage reads the image file a setting names (the watermark, the
// fallback image) and checks it as a source is checked: at most limit
// bytes (whose setting limitName names), an image of format thumbd reads (among inputs, when given), its
// header read and within maxPixels. Its errors are sentences about the
// file, for the setting's start-up error.
func ReadImage(path string, limit, maxPixels int64, inputs []imagefmt.Format, limitName string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("more than %d bytes, the most it may have (%s)", limit, limitName)
	}
	look, err := memcost.Look(b)
	switch {
	case look.Format == "":
		return nil, fmt.Errorf("not a %s image", imagefmt.InputNames())
	case len(inputs) > 0 && !slices.Contains(inputs, look.Format):
		return nil, fmt.Errorf("a %s image, a format this server does not accept (THUMBD_INPUTS)", look.Format)
	case err != nil:
		return nil, fmt.Errorf("its header cannot be read: %v", err)
	case look.Header.Pixels() > maxPixels:
		return nil, fmt.Errorf("%dx%d is more than THUMBD_MAX_PIXELS (%d)", look.Header.Width, look.Header.Height, maxPixels)
	}
	return b, nil
}
