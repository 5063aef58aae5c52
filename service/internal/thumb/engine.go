// Package thumb makes thumbnails with libvips through govips. It is the only
// package that talks to libvips (start-up, hardening, limits, encoding) and
// the only one that needs cgo: the job's types and errors are thumbjob's.
// HTTP stays out.
package thumb

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/exifthumb"
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
	// A video's frame is decoded by FFmpeg's decoder (videoFrame) and
	// handed over the same way.
	imagefmt.H264: {"VipsForeignLoadTiff"},
	imagefmt.HEVC: {"VipsForeignLoadTiff"},
	imagefmt.VP8:  {"VipsForeignLoadTiff"},
	imagefmt.VP9:  {"VipsForeignLoadTiff"},
	imagefmt.AV1:  {"VipsForeignLoadTiff"},
}

// New returns an engine; call Start before Thumbnail.
func New(cfg thumbjob.Config) *Engine { return &Engine{cfg: cfg} }

// Start starts libvips with its operation cache off (a thumbnail server
// almost never sees the same operation twice, and the cache holds memory),
// routes its logging into slog at warning level, and blocks every loader
// except those of the accepted input formats (Inputs). It first fixes
// malloc's thresholds (tuneHeap), which hold libvips' pixels.
func (e *Engine) Start() {
	tuneHeap(os.LookupEnv)
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

// thumbnail makes one thumbnail of src: its plan (the source's format
// is the one its look found: the engine never sniffs; its header is
// checked against the limits before any pixel is decoded), then the
// plan's steps, the last the encoder's. With MaxBytes, an answer too long
// is made again at a lower quality (plan.FitQuality), at most
// plan.FitEncodes times in all: libvips evaluates lazily, so each attempt
// runs the steps again (as the estimate prices it). libvips cannot be
// interrupted, so ctx only stops a job that has not started.
func (e *Engine) thumbnail(ctx context.Context, in thumbjob.Source, o thumbjob.Options) (thumbjob.Image, error) {
	var img thumbjob.Image
	var trace []thumbjob.Stage
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return thumbjob.Image{}, err
		}
		var err error
		if img, err = e.attempt(in, o); err != nil {
			return thumbjob.Image{}, err
		}
		img.Trace.Stages = append(trace, img.Trace.Stages...)
		trace = img.Trace.Stages
		spec, _ := imagefmt.Lookup(img.Format)
		q := o.Quality
		if q == 0 {
			q = spec.Quality
		}
		if o.MaxBytes <= 0 || len(img.Bytes) <= o.MaxBytes || spec.Quality == 0 || q <= plan.FitFloor || n >= plan.FitEncodes {
			return img, nil
		}
		o.Quality = plan.FitQuality(q, len(img.Bytes), o.MaxBytes)
	}
}

// attempt makes the thumbnail once.
func (e *Engine) attempt(in thumbjob.Source, o thumbjob.Options) (thumbjob.Image, error) {
	began := time.Now()
	r, err := e.planned(in, o)
	if err != nil {
		return thumbjob.Image{}, err
	}
	defer r.close()
	export, ok := exporters[r.spec.Format]
	if !ok {
		return thumbjob.Image{}, fmt.Errorf("thumb: no exporter for output format %q", r.spec.Format)
	}
	if err := r.until(plan.StepEncode, began); err != nil {
		return thumbjob.Image{}, err
	}
	t := time.Now()
	o = r.o
	if o.Quality == 0 {
		o.Quality = r.spec.Quality
	}
	strip, err := keptCopyright(r.img, o)
	if err != nil {
		return thumbjob.Image{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	buf, err := export(r.img, o, e.cfg, strip)
	if err != nil {
		return thumbjob.Image{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	img := r.img
	r.tr.Add(thumbjob.StageEncode, t)
	return thumbjob.Image{Bytes: buf, Format: r.spec.Format, Width: img.Width(), Height: img.PageHeight(), Frames: img.Height() / img.PageHeight(), Trace: r.tr}, nil
}

// open is a job's source as libvips reads its header, once every check
// that comes before a decode has passed: the format accepted, the header
// read and priced by the look (checkLooked), a BMP or ICO decoded in Go,
// libvips' header no larger than the look's (agrees), and both within the
// pixel and frame limits. No pixel is decoded here. With details, the
// header read also gives what /info tells beyond it.
func (e *Engine) open(in thumbjob.Source, frame thumbjob.Frame, withDetails bool) ([]byte, header, details, error) {
	fail := func(err error) ([]byte, header, details, error) { return nil, header{}, details{}, err }
	if err := e.checkSource(in); err != nil {
		return fail(err)
	}
	if err := checkLooked(in); err != nil {
		return fail(err)
	}
	src, err := goDecoded(in, frame, e.cfg.MaxPixels)
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
	if src.Format == imagefmt.Video {
		return fmt.Errorf("%w: this video cannot be read (%s), so none of it is decoded", thumbjob.ErrUndecodable, src.Unread)
	}
	if !ok || !spec.Input {
		return fmt.Errorf("%w: the body is not a %s image or a %s video", thumbjob.ErrUnsupportedFormat, imagefmt.InputNames(), imagefmt.VideoNames())
	}
	switch {
	case !e.accepted()[src.Format] && spec.Video:
		return fmt.Errorf("%w: the body is a video coded in %s, a codec this server does not accept (THUMBD_INPUTS)", thumbjob.ErrUnsupportedFormat, spec.Name)
	case !e.accepted()[src.Format]:
		return fmt.Errorf("%w: the body is a %s image, a format this server does not accept (THUMBD_INPUTS)", thumbjob.ErrUnsupportedFormat, spec.Name)
	}
	// libtiff hands a JPEG-compressed TIFF's strips to libjpeg: with JPEG
	// left out of THUMBD_INPUTS its decoder sees none of them either.
	if c := src.Header.Compression; src.Format == imagefmt.TIFF && (c == thumbjob.TIFFCompressionJPEG || c == thumbjob.TIFFCompressionOldJPEG) && !e.accepted()[imagefmt.JPEG] {
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
		if s.frames > e.cfg.MaxFrames && plan.AnimatedInput(h.format) {
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

var white = vips.Color{R: 255, G: 255, B: 255}

// srgbProfile names libvips' built-in sRGB profile (no file is read).
const srgbProfile = "srgb"

// exporters encode a finished thumbnail, one per output format of the
// imagefmt table (a test checks that every output format has one): with
// strip, without metadata; else with only what keptCopyright left.
var exporters = map[imagefmt.Format]func(img *vips.ImageRef, o thumbjob.Options, c thumbjob.Config, strip bool) ([]byte, error){
	imagefmt.PNG: func(img *vips.ImageRef, o thumbjob.Options, _ thumbjob.Config, strip bool) ([]byte, error) {
		buf, _, err := img.ExportPng(&vips.PngExportParams{StripMetadata: strip, Compression: pngCompression, Filter: pngFilter})
		return buf, err
	},
	imagefmt.JPEG: func(img *vips.ImageRef, o thumbjob.Options, _ thumbjob.Config, strip bool) ([]byte, error) {
		// Optimised Huffman tables (sharp's and imgproxy's default): a second
		// pass over a thumbnail's coefficients for smaller files.
		buf, _, err := img.ExportJpeg(&vips.JpegExportParams{StripMetadata: strip, Quality: o.Quality, OptimizeCoding: true})
		return buf, err
	},
	imagefmt.WebP: func(img *vips.ImageRef, o thumbjob.Options, _ thumbjob.Config, strip bool) ([]byte, error) {
		if strip {
			if err := removeMetadata(img); err != nil {
				return nil, err
			}
		}
		params := webpParams(o.Quality, webpEffort)
		params.StripMetadata = strip
		buf, _, err := img.ExportWebp(params)
		return buf, err
	},
	imagefmt.AVIF: func(img *vips.ImageRef, o thumbjob.Options, c thumbjob.Config, strip bool) ([]byte, error) {
		// 8 bits, lossy, libvips' automatic chroma subsampling (4:2:0 below
		// Q 90). One frame: libheif 1.19 writes no AVIF sequences.
		buf, _, err := img.ExportAvif(&vips.AvifExportParams{StripMetadata: strip, Quality: o.Quality, Bitdepth: 8, Effort: c.AVIFEffort})
		return buf, err
	},
}

// keptCopyright readies img's metadata for its encoder and reports
// whether the encoder strips it all. With KeepCopyright and an EXIF
// Copyright or Artist in the source's EXIF block (read from its bytes by
// exifthumb.Rights: libvips' own fields hold libexif's rendering, a
// photographer's notice followed by "(Photographer) - [None]", not the
// notice), every other field of metadata goes (the ICC profile, XMP,
// IPTC, the orientation already applied, the source's EXIF block itself)
// and libvips' saver writes a fresh EXIF block from these two fields
// alone: unlike keeping the source's block with only these fields
// (imgproxy's way), no tag libvips does not name (a maker's private one)
// can ride along. Otherwise everything is stripped, the answer's bytes
// the same as without the option.
func keptCopyright(img *vips.ImageRef, o thumbjob.Options) (strip bool, err error) {
	if !o.KeepCopyright {
		return true, nil
	}
	fields := img.GetFields()
	if !slices.Contains(fields, "exif-data") { // a get of a missing field leaves libvips an error message for a later call to report
		return true, nil
	}
	copyright, artist := exifthumb.Rights(img.GetBlob("exif-data"))
	if copyright == "" && artist == "" {
		return true, nil
	}
	var frames []string // the animation's fields, which every saver reads
	for _, f := range fields {
		if f == "page-height" || f == "n-pages" || f == "delay" || f == "loop" || f == "gif-delay" || f == "gif-loop" {
			frames = append(frames, f)
		}
	}
	// Each a copy: img's own image may be shared. RemoveMetadata keeps
	// the profile and the orientation, removed after it.
	for _, remove := range []func() error{func() error { return img.RemoveMetadata(frames...) }, img.RemoveICCProfile, img.RemoveOrientation} {
		if err := remove(); err != nil {
			return false, err
		}
	}
	// libvips drops a field's last " (...)", the tail its own rendering
	// adds: " ()" is that tail, so that a notice's own parentheses stay.
	for field, v := range map[string]string{"exif-ifd0-Copyright": copyright, "exif-ifd0-Artist": artist} {
		if v != "" {
			img.SetString(field, v+" ()")
		}
	}
	return false, nil
}

// removeMetadata removes the source's EXIF, XMP and IPTC from img:
// libvips 8.14's WebP saver ignores strip and writes them (Debian's, which
// the dynamic build links; 8.16's strips them). The frames' fields
// (delay, loop, page height) stay.
func removeMetadata(img *vips.ImageRef) error {
	var keep []string
	for _, f := range img.GetFields() {
		if !strings.HasPrefix(f, "exif-") && f != "xmp-data" && f != "iptc-data" {
			keep = append(keep, f)
		}
	}
	return img.RemoveMetadata(keep...)
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
