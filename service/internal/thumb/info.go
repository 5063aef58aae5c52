package thumb

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/exifthumb"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbhash"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Info describes src from its header, under the same limits as a
// thumbnail; with job.ThumbHash it also makes its ThumbHash, from the
// camera's EXIF thumbnail or else from the source decoded shrunk on load
// to at most thumbjob.ThumbHashSide a side (thumbHash). Bytes
// is left to the caller, which knows the source.
func (e *Engine) Info(ctx context.Context, src []byte, job thumbjob.InfoJob) (thumbjob.Info, error) {
	return e.info(ctx, looked(src), job)
}

// info is Info of a source already looked at (its format is in.Format:
// the engine never sniffs).
func (e *Engine) info(ctx context.Context, in thumbjob.Source, job thumbjob.InfoJob) (thumbjob.Info, error) {
	if err := ctx.Err(); err != nil {
		return thumbjob.Info{}, err
	}
	src, h, d, err := e.open(in, thumbjob.Frame{}, true)
	if err != nil {
		return thumbjob.Info{}, err
	}
	dw, dh := h.displayed()
	info := thumbjob.Info{
		Format: in.Format, Width: dw, Height: dh, StoredWidth: h.width, StoredHeight: h.height,
		Orientation: max(h.orientation, 1), Frames: max(h.pages, 1), Alpha: h.alpha, Space: d.space, ICC: d.icc,
	}
	if v := in.Header.Video; v != nil {
		info.Video = &thumbjob.VideoInfo{Container: v.Container, Duration: v.Duration, FrameRate: v.FrameRate,
			Rotation: v.Rotation, Mirror: v.Mirror, HDR: v.HDR, Audio: v.Audio}
	}
	if info.Frames > 1 {
		info.DelaysMS, info.Loop = d.delays, d.loop
		if info.Loop == nil {
			forever := 0
			info.Loop = &forever // libvips' default: a GIF without a loop block plays forever
		}
	}
	if job.ThumbHash {
		if info.ThumbHash, err = e.thumbHash(src, in.Format, h, d.space); err != nil {
			return thumbjob.Info{}, undecodable(err)
		}
	}
	return info, nil
}

// thumbHash is the ThumbHash of the source's EXIF thumbnail when it shows
// the whole image (exifThumbHash); otherwise of the first frame decoded
// as its plan says (hashPlan), in 8-bit sRGB with alpha. space is libvips'
// interpretation of the source, format its sniffed format.
func (e *Engine) thumbHash(src []byte, format imagefmt.Format, h header, space string) (string, error) {
	p, err := e.hashPlan(h, format)
	if err != nil {
		return "", err
	}
	r := &making{e: e, src: src, h: h, p: p, o: p.Options(), spec: imagefmt.Spec{Alpha: true}}
	defer r.close()
	if hash, ok := e.exifThumbHash(r, space); ok {
		return hash, nil
	}
	if err := r.until(plan.StepEncode, time.Now()); err != nil {
		return "", err
	}
	return hashOf(r.img)
}

// hashPlan is the plan of the image a ThumbHash is made from: the source
// inside a thumbjob.ThumbHashSide box, never enlarged, decoded with
// libvips' own shrink-on-load as it always has been (a HEIF's embedded
// thumbnail where thumbd uses one).
func (e *Engine) hashPlan(h header, format imagefmt.Format) (plan.Plan, error) {
	s := h.source()
	s.Format = ""
	if format == imagefmt.HEIC || format == imagefmt.AVIF {
		s.Format = format
	}
	o := thumbjob.Options{Width: thumbjob.ThumbHashSide, Height: thumbjob.ThumbHashSide, Fit: thumbjob.FitInside, Format: imagefmt.PNG,
		Transforms: thumbjob.Transforms{NoEnlarge: true}}
	return plan.Make(s, o, e.limits())
}

// hashOf is the ThumbHash of img, the hash-sized image in 8-bit sRGB.
func hashOf(img *vips.ImageRef) (string, error) {
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

// exifAspectTolerance is how far, relatively, an EXIF thumbnail's aspect
// ratio may be from the image's for it to stand in for the image. Within
// 1 %, a thumbnail has at most 1 % of its rows or columns that are not the
// image's (a 160x120 thumbnail: 1.2 rows), so any padding moves an average
// colour by at most 1 % of its range, under the ThumbHash's finest step (its
// average luminance has 6 bits: 1.6 %). Rounding a 160-pixel side to whole
// pixels errs by at most 0.3 % (3:2 as 160x107), so every honest thumbnail
// passes; a 16:9 photo's 160x120 letterboxed thumbnail (33 % off) or a 3:2
// one padded to 160x112 (4.8 %) does not.
const exifAspectTolerance = 0.01

// exifThumbHash is the ThumbHash of src's EXIF thumbnail (exifthumb.Read),
// when it can stand in for the image: a colour JPEG source (interpretation
// srgb: a CMYK or grey source decodes to other colours than its thumbnail),
// the thumbnail's orientation libvips' own, its aspect ratio within
// exifAspectTolerance of the image's, and its sides at least the hash's (it
// is never enlarged). The thumbnail is untrusted like the source: exifthumb
// bounds its size, libvips decodes it under the pixel limit and fails on
// any error; then the orientation is applied and it is scaled to exactly
// the size the full decode would have. ok is false, and the caller decodes
// the source, whenever any of that does not hold.
func (e *Engine) exifThumbHash(r *making, space string) (hash string, ok bool) {
	h := r.h
	if space != "srgb" {
		return "", false
	}
	t, err := exifthumb.Read(r.src)
	if err != nil || t.Orientation != max(h.orientation, 1) {
		return "", false
	}
	if !sameAspect(t.Width, t.Height, h.width, h.height) || int64(t.Width)*int64(t.Height) > e.cfg.MaxPixels {
		return "", false
	}
	w, ht := r.p.Out.X, r.p.Out.Y // the full decode's size
	sw, sh := w, ht               // the hash's size as stored, like the thumbnail
	if h.orientation >= 5 && h.orientation <= 8 {
		sw, sh = ht, w
	}
	if t.Width < sw || t.Height < sh {
		return "", false
	}
	img, err := vips.LoadImageFromBuffer(t.JPEG, vips.NewImportParams())
	if err != nil {
		return "", false
	}
	r.img = img // closed with the run
	if img.Width() != t.Width || img.Height() != t.Height || img.Bands() != 3 || img.Interpretation() != vips.InterpretationSRGB {
		return "", false
	}
	// The thumbnail's own EXIF, if any, says nothing: IFD0's orientation is
	// set on it, and libvips' thumbnail applies it and scales in one step.
	if img.SetOrientation(t.Orientation) != nil || img.ThumbnailWithSize(w, ht, vips.InterestingNone, vips.SizeForce) != nil {
		return "", false
	}
	if img.Width() != w || img.Height() != ht {
		return "", false
	}
	for _, s := range []plan.Step{plan.StepColour, plan.StepFilters} {
		if r.step(s) != nil {
			return "", false
		}
	}
	hash, err = hashOf(img)
	return hash, err == nil
}

// sameAspect says whether a w x h thumbnail has the aspect ratio of an
// iw x ih image, within exifAspectTolerance (both as stored).
func sameAspect(w, h, iw, ih int) bool {
	thumb, image := float64(w)/float64(h), float64(iw)/float64(ih)
	return math.Abs(thumb-image) <= exifAspectTolerance*image
}

// Run runs one job, a thumbnail or a description (the pipeline's one
// engine call), on a source already looked at: src.Format is trusted, not
// sniffed again.
func (e *Engine) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	return job.Run(ctx, src, e.thumbnail, e.info)
}
