package thumb

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"slices"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// making is one job as its plan's steps run it, as imgproxy's mainPipeline
// runs its steps on one context: each step a small function that reads
// every size from the plan and hands the image to the next.
type making struct {
	e    *Engine
	src  []byte // as libvips reads it (a BMP's or ICO's decoded into a TIFF)
	h    header
	p    plan.Plan
	o    thumbjob.Options // Format resolved to the one written
	spec imagefmt.Spec
	img  *vips.ImageRef
	// decoded is the upright decode's size (LoadUpright): the frame the
	// crop and the trim work in.
	decoded image.Point
	tr      thumbjob.Trace
}

// source is what the plan reads of an opened source.
func (h header) source() plan.Source {
	return plan.Source{Format: h.format, Width: h.width, Height: h.height, Orientation: h.orientation, Frames: h.pages, Look: h.look}
}

// limits are the engine's bounds as the plan reads them.
func (e *Engine) limits() plan.Limits {
	l := plan.Limits{MaxSide: e.cfg.MaxSide, MaxPixels: e.cfg.MaxPixels, MaxAnimationPixels: e.cfg.MaxAnimationPixels, JPEGShrink: e.cfg.JPEGShrink}
	if e.wm != nil {
		l.Mark = image.Pt(e.wm.Width(), e.wm.Height())
	}
	return l
}

// planned is a job's source opened, its output chosen and its plan made:
// nothing decoded yet.
func (e *Engine) planned(in thumbjob.Source, o thumbjob.Options) (*making, error) {
	// A video's preview decodes its frames only when the plan writes them
	// (the format animates, no watermark): what memcost priced.
	src, h, _, err := e.open(in, plan.VideoFrame(o), false)
	if err != nil {
		return nil, err
	}
	spec := output(o, h.alpha || o.Background != nil && o.Background.A < 255)
	o.Format = spec.Format
	p, err := plan.Make(h.source(), o, e.limits())
	if err != nil {
		return nil, err
	}
	return &making{e: e, src: src, h: h, p: p, o: o, spec: spec,
		tr: thumbjob.Trace{SourceFormat: h.format, SourceWidth: h.width, SourceHeight: h.height, Shrink: 1}}, nil
}

// until runs the plan's steps up to, not including, last; the decode's
// and the resize's stages are timed from began.
func (r *making) until(last plan.Step, began time.Time) error {
	t := began
	for _, s := range r.p.Steps {
		if s == last {
			break
		}
		if s == plan.StepColour {
			t = r.tr.Add(thumbjob.StageDecode, began)
		}
		if err := r.step(s); err != nil {
			return undecodable(err)
		}
	}
	if last == plan.StepEncode {
		r.tr.Add(thumbjob.StageResize, t)
	}
	return nil
}

// undecodable is a step's error as the engine answers it: libvips' as an
// undecodable source, its message without govips' stack; the engine's
// own (the plan's, a missing watermark: the service's fault, a 500) as
// they are.
func undecodable(err error) error {
	var typed *thumbjob.Error
	if errors.Is(err, errNoWatermark) || errors.As(err, &typed) {
		return err
	}
	return fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
}

// step runs one step.
func (r *making) step(s plan.Step) error {
	switch s {
	case plan.StepDecode:
		return r.decode()
	case plan.StepCrop:
		return r.crop()
	case plan.StepTrim:
		return r.trim()
	case plan.StepResize:
		rs := r.p.Resize
		return r.img.ThumbnailWithSize(rs.Width, rs.Height, crop(rs), size(rs))
	case plan.StepCut:
		c := r.p.Resize.Cut
		return r.img.ExtractArea(c.Min.X, c.Min.Y, c.Dx(), c.Dy())
	case plan.StepColour:
		return r.colour()
	case plan.StepRotate:
		return turn(r.img, r.o)
	case plan.StepContain:
		c := r.p.Contain
		return embed(r.img, r.o, r.spec, c.At, c.Size) // govips pads each frame of an animation on its own
	case plan.StepFilters:
		return filter(r.img, r.o.Transforms)
	case plan.StepExtend:
		return embed(r.img, r.o, r.spec, r.p.Extend.At, r.p.Extend.Size)
	case plan.StepAspect:
		return embed(r.img, r.o, r.spec, r.p.Aspect.At, r.p.Aspect.Size)
	case plan.StepPad:
		pad := r.o.Pad
		return embed(r.img, r.o, r.spec, image.Pt(pad.Left, pad.Top), image.Pt(r.img.Width()+pad.Left+pad.Right, r.img.Height()+pad.Top+pad.Bottom))
	case plan.StepWatermark:
		return r.e.watermark(r.img, r.o, r.p)
	case plan.StepFlatten:
		return r.flatten()
	}
	return fmt.Errorf("thumb: no step %q", s)
}

// close frees the image.
func (r *making) close() {
	if r.img != nil {
		r.img.Close()
	}
}

// decode reads the source as the plan loads it: upright (a JPEG shrunk
// on load) for the crop and the trim; a JPEG at its shrink on load, or a
// HEIF's embedded thumbnail, for the resize step; else decoded and
// resized in one libvips thumbnail operation (every frame of an
// animation), a HEIF without the thumbnails thumbd does not use. Every
// load fails on error: a truncated or corrupt source is a 422, never a
// half-grey thumbnail.
func (r *making) decode() error {
	params := vips.NewImportParams()
	var img *vips.ImageRef
	var err error
	switch p := r.p; p.Load {
	case plan.LoadUpright, plan.LoadShrunk:
		if p.Shrink > 1 {
			// Unless the load is sequential, the shrunk image is decoded
			// whole into memory: at most a quarter of the source's pixels.
			params.JpegShrinkFactor.Set(p.Shrink)
			r.tr.Shrink = p.Shrink
		}
		params.Sequential.Set(p.Sequential && endsWithEOI(r.src))
		if img, err = vips.LoadImageFromBuffer(r.src, params); err == nil && p.Load == plan.LoadUpright {
			if err = img.AutoRotate(); err != nil {
				img.Close()
			}
			r.decoded = image.Pt(img.Width(), img.Height())
		}
	case plan.LoadHEIFThumbnail:
		img, err = loadHEIFThumbnail(r.src, r.h.look.ThumbWidth, r.h.look.ThumbHeight, params)
	default:
		src := r.src
		if p.HEIF == plan.HEIFWithout {
			src = memcost.WithoutHEIFThumbnails(src)
		}
		if p.Frames > 1 {
			params.NumPages.Set(-1)
		}
		rs := p.Resize
		if r.h.look.Video != nil && p.Frames > 1 {
			img, err = loadPreview(src, rs, params)
			break
		}
		img, err = vips.LoadThumbnailFromBuffer(src, rs.Width, rs.Height, crop(rs), size(rs), params)
	}
	if err != nil {
		return err
	}
	if r.h.look.Video != nil && r.p.Frames > 1 {
		// A video preview's pages carry no timing (a raw TIFF): each is
		// shown for the preview's delay.
		if err = img.SetPageDelay(slices.Repeat([]int{thumbjob.PreviewDelay}, r.p.Frames)); err != nil {
			img.Close()
			return err
		}
	}
	r.img = img
	return nil
}

// endsWithEOI reports whether a JPEG ends with its end-of-image marker. A
// sequential load stops at the crop's last row: a file cut short below it
// would make a thumbnail where the random-access load, which decodes every
// row, answers 422 as for any truncated source. A file without the marker
// at its end (cut short, or with a trailer after it) keeps that load.
func endsWithEOI(src []byte) bool {
	return bytes.HasSuffix(src, []byte{0xFF, 0xD9})
}

// loadPreview is the thumbnail operation on a video preview's pages (a
// raw TIFF, rawTIFFPages) loaded as one image: libvips' thumbnail from a
// buffer reads a TIFF sequentially, and its resize asks for a page's
// rows out of the order the TIFF loader gives them ("out of order
// read"); loaded for random access, each strip is read where it lies in
// memory (no codec: nothing is decoded twice).
func loadPreview(src []byte, rs plan.Resize, params *vips.ImportParams) (*vips.ImageRef, error) {
	img, err := vips.LoadImageFromBuffer(src, params)
	if err != nil {
		return nil, err
	}
	if err := img.ThumbnailWithSize(rs.Width, rs.Height, crop(rs), size(rs)); err != nil {
		img.Close()
		return nil, err
	}
	return img, nil
}

// crop cuts the upright decode to the plan's region.
func (r *making) crop() error {
	c := r.p.CropIn(r.decoded)
	return r.img.ExtractArea(c.Min.X, c.Min.Y, c.Dx(), c.Dy())
}

// trim cuts the border away (trim, below), and replans from what is left
// (the region it found, as imgproxy recalculates after its trim). On a
// JPEG shrunk on load, when that region needs more pixels than the shrink
// gave, the JPEG is decoded again at the shrink it needs, cropped to it
// (grown by the first decode's error) and trimmed there, against the
// colour the first trim used. A trimmed cover may scale to no more than
// the estimate priced for the untrimmed source.
func (r *making) trim() error {
	t := *r.o.Trim
	box, colour, err := trim(r.img, t)
	if err != nil {
		return err
	}
	found := r.p.Region
	if !box.Empty() {
		found = r.p.Found(r.decoded, box)
	}
	if again, ok := r.p.Again(found); ok {
		r.img.Close()
		r.img, r.p = nil, again
		if err := r.decode(); err != nil {
			return err
		}
		if err := r.crop(); err != nil {
			return err
		}
		t.Colour = &thumbjob.Colour{R: colour.R, G: colour.G, B: colour.B, A: 255}
		if box, _, err = trim(r.img, t); err != nil {
			return err
		}
		found = r.p.Region
		if !box.Empty() {
			found = r.p.Found(r.decoded, box)
		}
	}
	trimmed, err := r.p.Trimmed(found)
	if err != nil {
		return err
	}
	r.p = trimmed
	if r.o.Fit != thumbjob.FitCover {
		return nil
	}
	// Where a trim cuts is known only now: the estimate priced the cover
	// of the untrimmed source, and a sliver covered to a square would
	// scale far beyond it.
	j := memcost.JobOf(r.o)
	j.QualityShrink, j.MaxSide, j.MaxPixels = r.e.cfg.JPEGShrink == thumbjob.JPEGShrinkQuality, r.e.cfg.MaxSide, r.e.cfg.MaxPixels
	priced := max(float64(r.h.width)*float64(r.h.height), memcost.Scaled(r.h.look, j))
	if px := r.p.ScaledPixels(); px > priced {
		return fmt.Errorf("%w: covering %dx%d with the trimmed %dx%d image needs it scaled to %.0f pixels, more than the %.0f the untrimmed source would", thumbjob.ErrTooManyPixels, r.p.Box.X, r.p.Box.Y, found.Dx(), found.Dy(), px, priced)
	}
	return nil
}

// colour turns the image into 8-bit sRGB: a HEIF's nclx colour, then an
// embedded profile. A wide-gamut source (Display P3 in an iPhone's HEIC,
// Rec. 2020 in an AVIF, Adobe RGB in a TIFF) is converted through its
// profile to libvips' built-in sRGB, 8 bits: stripping the profile
// without converting would wash its colours out. CMYK sources are
// imported by libvips' thumbnail operation already; an sRGB profile needs
// no conversion (isSRGB).
func (r *making) colour() error {
	img := r.img
	if err := fromNCLX(img, r.h.look.NCLX); err != nil {
		return err
	}
	if img.HasICCProfile() && img.Interpretation() != vips.InterpretationCMYK && img.Bands() >= 3 && !isSRGB(img.GetICCProfile()) {
		if err := img.TransformICCProfileWithFallback(srgbProfile, srgbProfile); err != nil {
			return err
		}
	}
	if img.Interpretation() != vips.InterpretationSRGB || img.BandFormat() != vips.BandFormatUchar {
		return img.ToColorSpace(vips.InterpretationSRGB)
	}
	return nil
}

// flatten puts alpha onto the background (bg=, else white) for a format
// without alpha.
func (r *making) flatten() error {
	if !r.img.HasAlpha() {
		return nil
	}
	bg := white
	if c := r.o.Background; c != nil {
		bg = vips.Color{R: c.R, G: c.G, B: c.B}
	}
	return r.img.Flatten(&bg)
}

// crop is the libvips crop of a resize: its gravity, or none.
func crop(rs plan.Resize) vips.Interesting {
	switch {
	case rs.Crop == "":
		return vips.InterestingNone
	case rs.Crop == thumbjob.GravityAttention:
		return vips.InterestingAttention
	case rs.Crop == thumbjob.GravityEntropy:
		return vips.InterestingEntropy
	}
	return vips.InterestingCentre
}

// size is the libvips sizing of a resize: exact, or covering the box.
func size(rs plan.Resize) vips.Size {
	if rs.Force {
		return vips.SizeForce
	}
	return vips.SizeBoth
}
