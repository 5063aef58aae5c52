package thumb

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbhash"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Info describes src from its header, under the same limits as a
// thumbnail; with job.ThumbHash it also decodes the source shrunk on load
// to at most thumbjob.ThumbHashSide a side and makes its ThumbHash. Bytes
// is left to the caller, which knows the source.
func (e *Engine) Info(ctx context.Context, src []byte, job thumbjob.InfoJob) (thumbjob.Info, error) {
	if err := ctx.Err(); err != nil {
		return thumbjob.Info{}, err
	}
	if _, err := e.checkSource(src); err != nil {
		return thumbjob.Info{}, err
	}
	h, d, err := describe(src)
	if err != nil {
		return thumbjob.Info{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	if err := e.checkHeader(h); err != nil {
		return thumbjob.Info{}, err
	}
	spec, _ := imagefmt.Sniff(src)
	dw, dh := h.displayed()
	info := thumbjob.Info{
		Format: spec.Format, Width: dw, Height: dh, StoredWidth: h.width, StoredHeight: h.height,
		Orientation: max(h.orientation, 1), Frames: max(h.pages, 1), Alpha: h.alpha, Space: d.space, ICC: d.icc,
	}
	if info.Frames > 1 {
		info.DelaysMS, info.Loop = d.delays, d.loop
		if info.Loop == nil {
			forever := 0
			info.Loop = &forever // libvips' default: a GIF without a loop block plays forever
		}
	}
	if job.ThumbHash {
		if info.ThumbHash, err = e.thumbHash(src, h); err != nil {
			return thumbjob.Info{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
		}
	}
	return info, nil
}

// thumbHash decodes the first frame inside a thumbjob.ThumbHashSide box
// (never enlarged), with shrink-on-load as a thumbnail, in 8-bit sRGB with
// alpha, and encodes it.
func (e *Engine) thumbHash(src []byte, h header) (string, error) {
	dw, dh := h.displayed()
	o := thumbjob.Options{Width: min(dw, thumbjob.ThumbHashSide), Height: min(dh, thumbjob.ThumbHashSide), Fit: thumbjob.FitInside}
	img, _, err := e.load(src, o, h, 1)
	if err != nil {
		return "", err
	}
	defer img.Close()
	if err := e.finish(img, o, imagefmt.Spec{Alpha: true}); err != nil {
		return "", err
	}
	if !img.HasAlpha() {
		if err := img.AddAlpha(); err != nil {
			return "", err
		}
	}
	if img.Bands() != 4 {
		return "", fmt.Errorf("a %d-band image after conversion to RGBA", img.Bands())
	}
	px, err := img.ToBytes()
	if err != nil {
		return "", err
	}
	hash, err := thumbhash.Encode(img.Width(), img.Height(), px)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(hash), nil
}

// Run runs one job, a thumbnail or a description (the pipeline's one
// engine call).
func (e *Engine) Run(ctx context.Context, src []byte, job thumbjob.Job) (thumbjob.Result, error) {
	return job.Run(ctx, src, e.Thumbnail, e.Info)
}
