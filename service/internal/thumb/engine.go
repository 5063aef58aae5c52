// Package thumb makes thumbnails with libvips through govips. It is the only
// package that talks to libvips (start-up, hardening, limits, encoding) and
// the only one that needs cgo: the job's types and errors are thumbjob's.
// HTTP stays out.
package thumb

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// PNG encoder settings: zlib level 1 with the "up" row filter. Measured on
// the static build by BenchmarkPNGSettings (docs/engine.md, "PNG
// settings"): against level 1 with every filter tried, which shipped
// before, 37 % faster on a small source and 25 % on a large one, for bytes
// within 2 % (libspng's per-row choice among five filters cost more than
// it saved), and still 33-34 % smaller than sharp's at its level 1.
const (
	pngCompression = 1
	pngFilter      = vips.PngFilterUo // govips' spelling of PNG_FILTER_UP
)

// Engine makes thumbnails. Start it once per process: libvips cannot be
// started again after Stop.
type Engine struct {
	cfg thumbjob.Config
	// inputs are the source formats this engine accepts: cfg.Inputs (all
	// when empty) that its libvips can read, found once libvips runs.
	inputs     map[imagefmt.Format]bool
	inputsOnce sync.Once
	wm         *vips.ImageRef // the watermark, decoded by LoadWatermark; nil: none
}

// loaderClasses are the libvips loaders each input format needs. BMP and
// ICO (PNG entries too) are decoded in Go (service/internal/bmp) and
// handed to libvips as an uncompressed TIFF it reads without a codec.
var loaderClasses = map[imagefmt.Format][]string{
	imagefmt.JPEG: {"VipsForeignLoadJpeg"},
	imagefmt.PNG:  {"VipsForeignLoadPng", "VipsForeignLoadSpng"},
	imagefmt.WebP: {"VipsForeignLoadWebp"},
	imagefmt.GIF:  {"VipsForeignLoadNsgif", "VipsForeignLoadGif"},
	imagefmt.HEIC: {"VipsForeignLoadHeif"},
	imagefmt.AVIF: {"VipsForeignLoadHeif"},
	imagefmt.TIFF: {"VipsForeignLoadTiff"},
	imagefmt.JXL:  {"VipsForeignLoadJxl"},
	imagefmt.BMP:  {"VipsForeignLoadTiff"},
	imagefmt.ICO:  {"VipsForeignLoadTiff"},
}

// New returns an engine; call Start before Thumbnail.
func New(cfg thumbjob.Config) *Engine { return &Engine{cfg: cfg} }

// Start starts libvips with its operation cache off (a thumbnail server
// almost never sees the same operation twice, and the cache holds memory),
// routes its logging into slog at warning level, and blocks every loader
// except those of the accepted input formats (Inputs).
func (e *Engine) Start() {
	logger := e.cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "libvips")
	vips.LoggingSettings(func(domain string, level vips.LogLevel, msg string) {
		logger.Log(nil, slogLevel(level), msg, "domain", domain)
	}, vips.LogLevelWarning)
	vips.Startup(&vips.Config{
		ConcurrencyLevel: e.cfg.Threads,
		MaxCacheFiles:    0,
		MaxCacheMem:      0,
		MaxCacheSize:     0,
	})
	var allow []string
	for f := range e.accepted() {
		allow = append(allow, loaderClasses[f]...)
	}
	harden(allow)
	if len(e.cfg.Inputs) > 0 {
		for _, f := range e.cfg.Inputs {
			if !e.accepted()[f] {
				logger.Warn("THUMBD_INPUTS names a format this build of libvips cannot read; it is refused", "format", f)
			}
		}
	}
}

// accepted is the set of formats this engine reads: those wanted that its
// libvips has a loader for. libvips must be running (Start, or another
// engine's Start in the same process, as in tests).
func (e *Engine) accepted() map[imagefmt.Format]bool {
	e.inputsOnce.Do(func() {
		e.inputs = map[imagefmt.Format]bool{}
		for _, f := range e.wanted() {
			if _, ok := e.readable(f); ok {
				e.inputs[f] = true
			}
		}
	})
	return e.inputs
}

// wanted is cfg.Inputs, or every input format of the table.
func (e *Engine) wanted() []imagefmt.Format {
	if len(e.cfg.Inputs) > 0 {
		return e.cfg.Inputs
	}
	return imagefmt.Inputs()
}

// readable returns the loader classes of format f when this libvips has
// them (a build without libheif, say, cannot read HEIC: it is not offered).
func (e *Engine) readable(f imagefmt.Format) ([]string, bool) {
	var have []string
	for _, c := range loaderClasses[f] {
		if hasClass(c) {
			have = append(have, c)
		}
	}
	return have, len(have) > 0
}

// Inputs lists the source formats the started engine accepts, in the
// format table's order.
func (e *Engine) Inputs() []imagefmt.Format {
	var out []imagefmt.Format
	for _, f := range imagefmt.Inputs() {
		if e.accepted()[f] {
			out = append(out, f)
		}
	}
	return out
}

// Stop shuts libvips down. No Thumbnail may run during or after it.
func (e *Engine) Stop() { vips.Shutdown() }

// Version is the libvips version the engine runs.
func Version() string { return vips.Version }

// Memory reports libvips' tracked allocations: current and peak bytes.
func Memory() (current, peak int64) {
	var s vips.MemoryStats
	vips.ReadVipsMemStats(&s)
	return s.Mem, s.MemHigh
}

func slogLevel(l vips.LogLevel) slog.Level {
	switch l {
	case vips.LogLevelError, vips.LogLevelCritical:
		return slog.LevelError
	case vips.LogLevelWarning:
		return slog.LevelWarn
	case vips.LogLevelMessage, vips.LogLevelInfo:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// Thumbnail makes one thumbnail of src, sniffed here (the pipeline's
// jobs come through Run, their source already looked at).
func (e *Engine) Thumbnail(ctx context.Context, src []byte, o thumbjob.Options) (thumbjob.Image, error) {
	return e.thumbnail(ctx, looked(src), o)
}

// looked is src as the pipeline's one look sees it (memcost.Look: the
// format sniffed, the header read), for the entry points that get bytes
// alone (tests, tools, the watermark): the engine then runs as it does on
// a job's source.
func looked(src []byte) thumbjob.Source {
	s, _ := memcost.Look(src) // Format and Header are set as far as they could be read
	return s
}

// thumbnail makes one thumbnail of src. The source's format is the one
// its look found (src.Format: the engine never sniffs); its header is checked against the limits before any pixel is
// decoded; decoding uses libvips' thumbnail operation on the buffer, so JPEG
// and WebP shrink on load. libvips cannot be interrupted, so ctx only stops
// a job that has not started.
func (e *Engine) thumbnail(ctx context.Context, in thumbjob.Source, o thumbjob.Options) (thumbjob.Image, error) {
	if err := ctx.Err(); err != nil {
		return thumbjob.Image{}, err
	}
	began := time.Now()
	src, h, _, err := e.open(in, false)
	if err != nil {
		return thumbjob.Image{}, err
	}
	out := output(o, h.alpha || o.Background != nil && o.Background.A < 255)
	export, ok := exporters[out.Format]
	if !ok {
		return thumbjob.Image{}, fmt.Errorf("thumb: no exporter for output format %q", out.Format)
	}
	frames := 1
	if o.Animated && out.Animated && h.pages > 1 && animatedInput(h.format) && o.Watermark == nil {
		frames = h.pages
		// Every frame is decoded: the pixel limit holds for all of them.
		if px := int64(frames) * int64(h.width) * int64(h.height); px > e.cfg.MaxPixels {
			return thumbjob.Image{}, fmt.Errorf("%w: the source's %d frames of %dx%d are %d pixels to decode, more than the %d allowed", thumbjob.ErrTooManyPixels, frames, h.width, h.height, px, e.cfg.MaxPixels)
		}
	}
	tr := thumbjob.Trace{SourceFormat: h.format, SourceWidth: h.width, SourceHeight: h.height, Shrink: 1}
	f := from{src: src, h: h, shrink: 1}
	if o.Crop != nil || o.Trim != nil {
		if f, err = e.prepare(src, o, h); err != nil {
			return thumbjob.Image{}, err
		}
		defer f.base.Close()
	}
	dw, dh := f.displayed()
	if o.Reorients() {
		dw, dh = dh, dw
	}
	o = e.resolve(o, dw, dh)
	canvasW, canvasH := o.Width, o.Height // extend's canvas: the box asked for
	if o.NoEnlarge {
		o.Width, o.Height = noEnlarge(o, dw, dh)
	}
	if px := int64(frames) * int64(o.Width) * int64(o.Height); frames > 1 && px > e.cfg.MaxAnimationPixels {
		return thumbjob.Image{}, fmt.Errorf("%w: %d frames of %dx%d are %d pixels, more than the %d allowed for an animation", thumbjob.ErrAnimationTooLarge, frames, o.Width, o.Height, px, e.cfg.MaxAnimationPixels)
	}
	if px, priced := coverPixelsOf(o, dw, dh), trimPriced(o, h); o.Trim != nil && px > priced {
		// Where a trim cuts is known only now: the estimate priced the
		// cover of the untrimmed source, and a sliver covered to a
		// square would scale far beyond it.
		return thumbjob.Image{}, fmt.Errorf("%w: covering %dx%d with the trimmed %dx%d image needs it scaled to %.0f pixels, more than the %.0f the untrimmed source would", thumbjob.ErrTooManyPixels, o.Width, o.Height, dw, dh, px, priced)
	}
	if px := coverPixelsOf(o, dw, dh); px > float64(e.cfg.MaxPixels) {
		// libvips scales the whole source before cropping: a 1x40000 JPEG
		// covered to 256x256 is a 256x10240000 image (minutes, gigabytes).
		return thumbjob.Image{}, fmt.Errorf("%w: covering %dx%d with this %dx%d source needs it scaled to %.0f pixels, more than the %d allowed", thumbjob.ErrTooManyPixels, o.Width, o.Height, dw, dh, px, e.cfg.MaxPixels)
	}

	img, shrink, err := e.loadFrom(f, unturned(o), frames)
	if err != nil {
		return thumbjob.Image{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	defer img.Close()
	tr.Shrink = max(shrink, f.shrink)
	t := tr.Add(thumbjob.StageDecode, began)
	if err := fromNCLX(img, h.look.NCLX); err != nil {
		return thumbjob.Image{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	if err := e.finishOn(img, o, out, canvasW, canvasH); errors.Is(err, errNoWatermark) {
		return thumbjob.Image{}, err // the service's fault, not the image's: a 500
	} else if err != nil {
		return thumbjob.Image{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	t = tr.Add(thumbjob.StageResize, t)
	if o.Quality == 0 {
		o.Quality = out.Quality
	}
	buf, err := export(img, o, e.cfg)
	if err != nil {
		return thumbjob.Image{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	tr.Add(thumbjob.StageEncode, t)
	return thumbjob.Image{Bytes: buf, Format: out.Format, Width: img.Width(), Height: img.PageHeight(), Frames: img.Height() / img.PageHeight(), Trace: tr}, nil
}

// open is a job's source as libvips reads its header, once every check
// that comes before a decode has passed: the format accepted, the header
// read and priced by the look (checkLooked), a BMP or ICO decoded in Go,
// libvips' header no larger than the look's (agrees), and both within the
// pixel and frame limits. No pixel is decoded here. With details, the
// header read also gives what /info tells beyond it.
func (e *Engine) open(in thumbjob.Source, withDetails bool) ([]byte, header, details, error) {
	fail := func(err error) ([]byte, header, details, error) { return nil, header{}, details{}, err }
	if err := e.checkSource(in); err != nil {
		return fail(err)
	}
	if err := checkLooked(in); err != nil {
		return fail(err)
	}
	src, err := goDecoded(in, e.cfg.MaxPixels)
	if err != nil {
		return fail(err)
	}
	var h header
	var d details
	if withDetails {
		h, d, err = describe(src)
	} else {
		h, err = probe(src)
	}
	if err != nil {
		return fail(fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err))
	}
	h.format, h.look = in.Format, in.Header
	if err := agrees(h, in.Header, in.Format); err != nil {
		return fail(err)
	}
	if err := e.checkHeader(h); err != nil {
		return fail(err)
	}
	return src, h, d, nil
}

// checkSource refuses, before libvips reads it, a source whose look found
// no input format (src.Format: sniffed once, by the caller) or a GIF whose
// screen is over the pixel limit.
func (e *Engine) checkSource(src thumbjob.Source) error {
	spec, ok := imagefmt.Lookup(src.Format)
	if !ok || !spec.Input {
		return fmt.Errorf("%w: the body is not a %s image", thumbjob.ErrUnsupportedFormat, imagefmt.InputNames())
	}
	if !e.accepted()[src.Format] {
		return fmt.Errorf("%w: the body is a %s image, a format this server does not accept (THUMBD_INPUTS)", thumbjob.ErrUnsupportedFormat, spec.Name)
	}
	// libtiff hands a JPEG-compressed TIFF's strips to libjpeg: with JPEG
	// left out of THUMBD_INPUTS its decoder sees none of them either.
	if src.Format == imagefmt.TIFF && (src.Header.Compression == tiffJPEG || src.Header.Compression == tiffOldJPEG) && !e.accepted()[imagefmt.JPEG] {
		return fmt.Errorf("%w: the body is a TIFF whose pixels are JPEG-coded, and JPEG is a format this server does not accept (THUMBD_INPUTS)", thumbjob.ErrUnsupportedFormat)
	}
	// libvips' GIF loader ignores a logical screen larger than the frames
	// (it sizes the image from them), so a GIF declaring 65535x65535 in 40
	// bytes would be decoded; the limit holds for what the header declares.
	if w, h, ok := imagefmt.GIFScreen(src.Bytes); ok && int64(w)*int64(h) > e.cfg.MaxPixels {
		return fmt.Errorf("%w: the GIF declares a %dx%d screen, more than the %d pixels allowed", thumbjob.ErrTooManyPixels, w, h, e.cfg.MaxPixels)
	}
	return nil
}

// TIFF's Compression values whose strips libtiff hands to libjpeg.
const (
	tiffOldJPEG = 6
	tiffJPEG    = 7
)

// animatedInput: the formats whose frames thumbd reads when an animation
// is asked for. A multi-page TIFF, a HEIF collection, an AVIF or JPEG XL
// sequence give their first page or frame, whatever their count.
func animatedInput(f imagefmt.Format) bool { return f == imagefmt.GIF || f == imagefmt.WebP }

// checkHeader holds the header to the pixel and frame limits, as libvips
// read it (h) and as the look priced it (h.look, when read): a job priced
// past a limit was priced as the smallest job, since it is refused here.
func (e *Engine) checkHeader(h header) error {
	for _, s := range []struct{ w, h, frames int }{{h.width, h.height, h.pages}, {h.look.Width, h.look.Height, h.look.Frames}} {
		if px := int64(s.w) * int64(s.h); s.w <= 0 || s.h <= 0 || px > e.cfg.MaxPixels {
			if s.w == 0 && s.h == 0 && s.frames == 0 {
				continue // no look (a test's bare bytes)
			}
			return fmt.Errorf("%w: the source is %dx%d, more than the %d pixels allowed", thumbjob.ErrTooManyPixels, s.w, s.h, e.cfg.MaxPixels)
		}
		if s.frames > e.cfg.MaxFrames && animatedInput(h.format) {
			return fmt.Errorf("%w: the source has %d frames, more than the %d allowed", thumbjob.ErrTooManyFrames, s.frames, e.cfg.MaxFrames)
		}
	}
	return nil
}

// vipsMessage is libvips' message without the Go stack trace govips
// appends to every error: the message reaches the client, a stack (source
// paths, addresses, goroutine state) must not.
func vipsMessage(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\nStack:")
	return strings.TrimSpace(msg)
}

// resolveBox fills a missing side from the source's displayed aspect ratio.
func (e *Engine) resolveBox(o thumbjob.Options, h header) thumbjob.Options {
	dw, dh := h.displayed()
	return e.resolve(o, dw, dh)
}

// resolve fills a missing side from a dw x dh image's aspect ratio.
func (e *Engine) resolve(o thumbjob.Options, dw, dh int) thumbjob.Options {
	bound := func(v float64) int { return int(min(max(math.Round(v), 1), float64(e.cfg.MaxSide))) }
	switch {
	case o.Width == 0:
		o.Width = bound(float64(o.Height) * float64(dw) / float64(dh))
	case o.Height == 0:
		o.Height = bound(float64(o.Width) * float64(dh) / float64(dw))
	}
	return o
}

// coverPixels is the size of the scaled source a cover crop is cut from
// (0 for the other fits, which never scale a side beyond the box).
func coverPixels(o thumbjob.Options, h header) float64 {
	dw, dh := h.displayed()
	return coverPixelsOf(o, dw, dh)
}

// coverPixelsOf is coverPixels for a dw x dh image.
func coverPixelsOf(o thumbjob.Options, dw, dh int) float64 {
	if o.Fit != thumbjob.FitCover {
		return 0
	}
	scale := max(float64(o.Width)/float64(dw), float64(o.Height)/float64(dh))
	return math.Ceil(float64(dw)*scale) * math.Ceil(float64(dh)*scale)
}

// load decodes and resizes in one libvips thumbnail operation: the first
// frame, or every frame (each resized) when frames > 1. It also returns
// the JPEG shrink-on-load factor it chose (1: none of its own).
func (e *Engine) load(src []byte, o thumbjob.Options, h header, frames int) (*vips.ImageRef, int, error) {
	return e.loadFrom(from{src: src, h: h}, o, frames)
}

// loadFrom is load from f: the source's bytes, or the image the crop
// and trim left (resized by libvips' thumbnail operation on an image).
func (e *Engine) loadFrom(f from, o thumbjob.Options, frames int) (*vips.ImageRef, int, error) {
	if o.Fit == thumbjob.FitCover && (frames > 1 || o.Gravity == thumbjob.GravityFocal) {
		return e.coverAndCut(f, o, frames)
	}
	crop, size := vips.InterestingNone, vips.SizeBoth
	switch o.Fit {
	case thumbjob.FitCover:
		crop = interesting(o.Gravity)
	case thumbjob.FitFill:
		size = vips.SizeForce
	}
	if f.base != nil {
		img, err := f.base.Copy()
		if err != nil {
			return nil, 0, err
		}
		if err := resize(img, o.Width, o.Height, crop, size); err != nil {
			return nil, 0, err
		}
		return img, 1, nil
	}
	src, h := f.src, f.h
	params := vips.NewImportParams() // fail on error: a truncated or corrupt source is a 422, never a half-grey thumbnail
	if h.format == imagefmt.JPEG && e.cfg.JPEGShrink != thumbjob.JPEGShrinkQuality {
		if shrink := jpegShrink(o, h); shrink > 1 {
			// libvips' thumbnail operation would stop one step earlier;
			// loading at the shrink and thumbnailing the result keeps the
			// rest of the pipeline (orientation, crop, colour) the same.
			// The shrunk image is decoded whole into memory (govips loads
			// with random access): at most a quarter of the source's pixels.
			params.JpegShrinkFactor.Set(shrink)
			img, err := vips.LoadImageFromBuffer(src, params)
			if err != nil {
				return nil, 0, err
			}
			if err := resize(img, o.Width, o.Height, crop, size); err != nil {
				return nil, 0, err
			}
			return img, shrink, nil
		}
	}
	if frames > 1 {
		params.NumPages.Set(-1)
	}
	if h.format == imagefmt.HEIC || h.format == imagefmt.AVIF {
		var tw, th int
		if src, tw, th = heifSource(src, o, h); tw > 0 {
			img, err := loadHEIFThumbnail(src, tw, th, params)
			if err != nil {
				return nil, 0, err
			}
			if err := resize(img, o.Width, o.Height, crop, size); err != nil {
				return nil, 0, err
			}
			return img, 1, nil
		}
	}
	img, err := vips.LoadThumbnailFromBuffer(src, o.Width, o.Height, crop, size, params)
	return img, 1, err
}

// resize resizes an opened image with libvips' thumbnail operation on an
// image into a w x h box; on failure it closes the image.
func resize(img *vips.ImageRef, w, h int, crop vips.Interesting, size vips.Size) error {
	if err := img.ThumbnailWithSize(w, h, crop, size); err != nil {
		img.Close()
		return err
	}
	return nil
}

// heifSource is src, a HEIF file, for a thumbnail into o's box, and the
// size of the embedded thumbnail thumbd decodes instead of the primary
// image (plan.HEIFThumbnailUse: libvips' rule, and the aspect ratio
// within 1 %; 0 x 0: none), as the look found it (h.look: the estimate
// priced the same choice). When there is none, src comes without its
// thumbnails (memcost.WithoutHEIFThumbnails), so that libvips' thumbnail
// operation decodes no thumbnail: neither one of another aspect ratio,
// which it would use (a 4:3 photo's 320x256 thumbnail gives 256x205), nor
// one of any declared size, which it decodes to check its aspect ratio
// before deciding, past the pixel limit and the memory estimate. libvips
// sees the primary as h says (libheif's irot and imir applied). A header
// the look could not read (Width 0) declares no thumbnail thumbd trusts:
// its thumbnails are removed too.
func heifSource(src []byte, o thumbjob.Options, h header) (out []byte, tw, th int) {
	read, t := h.look.Width > 0, h.look
	if read && t.ThumbWidth == 0 {
		return src, 0, 0
	}
	if _, use := plan.HEIFThumbnailUse(h.width, h.height, t.ThumbWidth, t.ThumbHeight, o.Width, o.Height, o.Fit); read && use {
		return src, t.ThumbWidth, t.ThumbHeight
	}
	return memcost.WithoutHEIFThumbnails(src), 0, 0
}

// loadHEIFThumbnail opens src's embedded thumbnail, tw x th as its header
// says, rather than leaving the choice to libvips' thumbnail operation:
// that one falls back to the primary image, silently, when the thumbnail
// fails to decode or decodes to another aspect ratio than its header's,
// and the memory estimate priced the thumbnail. libvips' heif loader,
// asked for the thumbnail, fails on a broken one, and one that decodes to
// another aspect ratio leaves the primary's size, refused here before any
// pixel is decoded.
func loadHEIFThumbnail(src []byte, tw, th int, params *vips.ImportParams) (*vips.ImageRef, error) {
	params.HeifThumbnail.Set(true)
	img, err := vips.LoadImageFromBuffer(src, params)
	if err != nil {
		return nil, err
	}
	if w, h := img.Width(), img.Height(); w != tw || h != th {
		img.Close()
		return nil, fmt.Errorf("the embedded thumbnail is %dx%d, its header says %dx%d", w, h, tw, th)
	}
	return img, nil
}

// coverAndCut makes a cover thumbnail in two steps: the source scaled to
// cover the box (every frame of an animation), then the box cut from it,
// centred on the focal point as far as the scaled image allows, or on
// its centre. libvips before 8.15 crops an animation as one tall image
// (every frame but the first lost); and its thumbnail operation has no
// focal point. Smart crops (attention, entropy) would pick a different
// window per frame; an animation keeps one, centred.
func (e *Engine) coverAndCut(f from, o thumbjob.Options, frames int) (*vips.ImageRef, int, error) {
	dw, dh := f.displayed()
	scale := max(float64(o.Width)/float64(dw), float64(o.Height)/float64(dh))
	cw, ch := max(int(math.Ceil(float64(dw)*scale)), o.Width), max(int(math.Ceil(float64(dh)*scale)), o.Height)
	scaled := o
	scaled.Width, scaled.Height, scaled.Fit = cw, ch, thumbjob.FitFill
	img, shrink, err := e.loadFrom(f, scaled, frames)
	if err != nil {
		return nil, 0, err
	}
	left, top := (cw-o.Width)/2, (ch-o.Height)/2
	if o.Gravity == thumbjob.GravityFocal {
		left, top = cutAt(o.FocalX, cw, o.Width), cutAt(o.FocalY, ch, o.Height)
	}
	if err := img.ExtractArea(left, top, o.Width, o.Height); err != nil {
		img.Close()
		return nil, 0, err
	}
	return img, shrink, nil
}

// cutAt is where a window of size n starts along a side of size total so
// that the fraction f of the side is as near the window's centre as the
// side allows.
func cutAt(f float64, total, n int) int {
	return min(max(int(math.Round(f*float64(total)-float64(n)/2)), 0), total-n)
}

// fitScale is the scale a fit gives each side of the image, from the box's
// side over the image's (sx, sy): cover takes the larger for both, contain
// and inside the smaller, fill each its own.
func fitScale(fit thumbjob.Fit, sx, sy float64) (float64, float64) {
	switch fit {
	case thumbjob.FitCover:
		return max(sx, sy), max(sx, sy)
	case thumbjob.FitContain, thumbjob.FitInside:
		return min(sx, sy), min(sx, sy)
	}
	return sx, sy
}

// jpegShrink is the largest JPEG shrink-on-load (8, 4, 2, else 1) whose
// decoded image still covers what the fit needs of the source, so the
// final reduce never enlarges.
func jpegShrink(o thumbjob.Options, h header) int {
	dw, dh := h.displayed()
	sx, sy := fitScale(o.Fit, float64(o.Width)/float64(dw), float64(o.Height)/float64(dh))
	needW, needH := max(int(math.Round(float64(dw)*sx)), 1), max(int(math.Round(float64(dh)*sy)), 1)
	if h.orientation >= 5 && h.orientation <= 8 { // the stored image is on its side
		needW, needH = needH, needW
	}
	for _, s := range []int{8, 4, 2} {
		// libjpeg rounds the scaled size up; rounding down here keeps a
		// margin, and keeps sources thinner than the shrink (a 20000x1
		// strip, which libvips refuses to load at 1/8) on the normal path.
		if h.width/s >= needW && h.height/s >= needH {
			return s
		}
	}
	return 1
}

func interesting(g thumbjob.Gravity) vips.Interesting {
	switch g {
	case thumbjob.GravityAttention:
		return vips.InterestingAttention
	case thumbjob.GravityEntropy:
		return vips.InterestingEntropy
	}
	return vips.InterestingCentre
}

var white = vips.Color{R: 255, G: 255, B: 255}

// srgbProfile names libvips' built-in sRGB profile (no file is read).
const srgbProfile = "srgb"

// finish turns the thumbnail into 8-bit sRGB, pads it for contain and
// handles alpha for the output format.
func (e *Engine) finish(img *vips.ImageRef, o thumbjob.Options, spec imagefmt.Spec) error {
	return e.finishOn(img, o, spec, o.Width, o.Height)
}

// finishOn is finish with the transforms that follow the resize, in
// their order (docs/thumbnails.md): rotate and flip (which commute with
// the resize, so they run on the small image; unturned gave the resize
// its box and gravity), contain's padding, blur, sharpen and pixelate,
// extend (to a canvasW x canvasH canvas) and pad, the watermark, and last
// the flattening of alpha for a format without it.
func (e *Engine) finishOn(img *vips.ImageRef, o thumbjob.Options, spec imagefmt.Spec, canvasW, canvasH int) error {
	if img.HasICCProfile() && img.Interpretation() != vips.InterpretationCMYK && img.Bands() >= 3 && !isSRGB(img.GetICCProfile()) {
		// A wide-gamut source (Display P3 in an iPhone's HEIC, Rec. 2020 in
		// an AVIF, Adobe RGB in a TIFF) is converted through its embedded
		// profile to libvips' built-in sRGB, 8 bits: stripping the profile
		// without converting would wash its colours out. CMYK sources are
		// imported by libvips' thumbnail operation already; an sRGB
		// profile needs no conversion (isSRGB).
		if err := img.TransformICCProfileWithFallback(srgbProfile, srgbProfile); err != nil {
			return err
		}
	}
	if img.Interpretation() != vips.InterpretationSRGB || img.BandFormat() != vips.BandFormatUchar {
		if err := img.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return err
		}
	}
	if err := turn(img, o); err != nil {
		return err
	}
	// picture is where the picture is on the canvas that contain, extend
	// and pad grow around it: the watermark goes on it, not on a border.
	picture := image.Rect(0, 0, img.Width(), img.PageHeight())
	if o.Fit == thumbjob.FitContain && (img.Width() != o.Width || img.PageHeight() != o.Height) {
		// govips pads each frame of an animation on its own.
		left, top := (o.Width-img.Width())/2, (o.Height-img.PageHeight())/2
		if err := embed(img, o, spec, left, top, o.Width, o.Height); err != nil {
			return err
		}
		picture = picture.Add(image.Pt(left, top))
	}
	if err := filter(img, o.Transforms); err != nil {
		return err
	}
	at, err := frame(img, o, spec, canvasW, canvasH)
	if err != nil {
		return err
	}
	if err := e.watermark(img, o, picture.Add(at)); err != nil {
		return err
	}
	if !spec.Alpha && img.HasAlpha() {
		bg := white
		if c := o.Background; c != nil {
			bg = vips.Color{R: c.R, G: c.G, B: c.B}
		}
		if err := img.Flatten(&bg); err != nil {
			return err
		}
	}
	return nil
}

// exporters encode a finished thumbnail, one per output format of the
// imagefmt table (a test checks that every output format has one), always
// without metadata.
var exporters = map[imagefmt.Format]func(img *vips.ImageRef, o thumbjob.Options, c thumbjob.Config) ([]byte, error){
	imagefmt.PNG: func(img *vips.ImageRef, o thumbjob.Options, _ thumbjob.Config) ([]byte, error) {
		buf, _, err := img.ExportPng(&vips.PngExportParams{StripMetadata: true, Compression: pngCompression, Filter: pngFilter})
		return buf, err
	},
	imagefmt.JPEG: func(img *vips.ImageRef, o thumbjob.Options, _ thumbjob.Config) ([]byte, error) {
		// Optimised Huffman tables (sharp's and imgproxy's default): a second
		// pass over a thumbnail's coefficients for smaller files.
		buf, _, err := img.ExportJpeg(&vips.JpegExportParams{StripMetadata: true, Quality: o.Quality, OptimizeCoding: true})
		return buf, err
	},
	imagefmt.WebP: func(img *vips.ImageRef, o thumbjob.Options, _ thumbjob.Config) ([]byte, error) {
		buf, _, err := img.ExportWebp(webpParams(o.Quality, webpEffort))
		return buf, err
	},
	imagefmt.AVIF: func(img *vips.ImageRef, o thumbjob.Options, c thumbjob.Config) ([]byte, error) {
		// 8 bits, lossy, libvips' automatic chroma subsampling (4:2:0 below
		// Q 90). One frame: libheif 1.19 writes no AVIF sequences.
		buf, _, err := img.ExportAvif(&vips.AvifExportParams{StripMetadata: true, Quality: o.Quality, Bitdepth: 8, Effort: c.AVIFEffort})
		return buf, err
	},
}

// webpEffort is libwebp's method, sharp's default. On 50-frame animations
// effort 2 took 0-39 % less time for 2-5 % more bytes (docs/engine.md,
// "Animation"); thumbd keeps the twin's effort, so that the two compare
// at equal settings and a CDN serves the smaller files.
const webpEffort = 4

// webpParams are the WebP exporter's settings, shared with the animation
// study. Key frames at libvips' own defaults (govips would pass 0 and make
// every frame of an animation a key frame).
func webpParams(quality, effort int) *vips.WebpExportParams {
	return &vips.WebpExportParams{StripMetadata: true, Quality: quality, ReductionEffort: effort,
		MinKeyFrames: math.MaxInt32 - 1, MaxKeyFrames: math.MaxInt32}
}

// output is the format a thumbnail is written in, given whether it has
// transparency.
func output(o thumbjob.Options, alpha bool) imagefmt.Spec {
	f := o.Format
	if alpha && o.AlphaFormat != "" {
		f = o.AlphaFormat
	}
	spec, _ := imagefmt.Lookup(f)
	return spec
}
