package thumb

import (
	"errors"
	"fmt"
	"image"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// LoadWatermark decodes the configured watermark (Config.Watermark), once,
// after Start: into 8-bit sRGB with alpha, held decoded for every job.
// Its header is held to the engine's pixel limit before it is decoded.
// No watermark configured: nothing to do.
func (e *Engine) LoadWatermark() error {
	src := e.cfg.Watermark
	if len(src) == 0 {
		return nil
	}
	in := looked(src)
	if err := e.checkSource(in); err != nil {
		return err
	}
	h, err := probe(src)
	if err != nil {
		return fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	if err := e.checkHeader(h); err != nil {
		return err
	}
	img, err := vips.LoadImageFromBuffer(src, vips.NewImportParams())
	if err != nil {
		return fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	if err := watermarkReady(img); err != nil {
		img.Close()
		return fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, vipsMessage(err))
	}
	e.wm = img
	return nil
}

// watermarkReady turns img upright, into 8-bit sRGB with alpha, and
// decodes it now (a first read by concurrent jobs would race to do it).
func watermarkReady(img *vips.ImageRef) error {
	if err := img.AutoRotate(); err != nil {
		return err
	}
	if img.Interpretation() != vips.InterpretationSRGB || img.BandFormat() != vips.BandFormatUchar {
		if err := img.ToColorSpace(vips.InterpretationSRGB); err != nil {
			return err
		}
	}
	if !img.HasAlpha() {
		if err := img.AddAlpha(); err != nil {
			return err
		}
	}
	_, err := img.Average()
	return err
}

// errNoWatermark: a job asks for the watermark and the engine has none
// (the parse stage refuses wm= without THUMBD_WATERMARK, so this is a
// supervisor and cell out of step).
var errNoWatermark = errors.New("thumb: the job asks for a watermark and none is loaded")

// watermark puts the watermark on the finished thumbnail's picture (the
// plan's rectangle of the canvas the picture covers: contain's, extend's
// and pad's borders are not the picture, and a mark there could be
// cropped away): scaled (its width a fraction of the picture's), its
// alpha times the opacity, where the plan places a mark of its size, or
// tiled over the whole picture (re, the offsets then the gaps between
// tiles).
func (e *Engine) watermark(img *vips.ImageRef, o thumbjob.Options, p plan.Plan) error {
	w := o.Watermark
	if w == nil {
		return nil
	}
	if e.wm == nil {
		return errNoWatermark
	}
	mark, err := e.wm.Copy()
	if err != nil {
		return err
	}
	defer mark.Close()
	if w.Scale > 0 {
		if err := mark.Resize(p.MarkScale(), vips.KernelLanczos3); err != nil {
			return err
		}
	}
	if w.Opacity < 1 {
		if err := mark.Linear([]float64{1, 1, 1, w.Opacity}, []float64{0, 0, 0, 0}); err != nil {
			return err
		}
		if err := mark.Cast(vips.BandFormatUchar); err != nil {
			return err
		}
	}
	at := p.Picture.Min
	if w.Position == thumbjob.PositionReplicate {
		pw, ph := p.Picture.Dx(), p.Picture.Dy()
		tw, th := mark.Width()+w.X, mark.Height()+w.Y
		if err := mark.EmbedBackgroundRGBA(0, 0, tw, th, &vips.ColorRGBA{}); err != nil {
			return err
		}
		across, down := (pw+tw-1)/tw, (ph+th-1)/th
		if err := mark.Replicate(across, down); err != nil {
			return err
		}
		if err := mark.ExtractArea(0, 0, pw, ph); err != nil {
			return err
		}
	} else {
		at = p.MarkAt(image.Pt(mark.Width(), mark.Height()))
	}
	if !img.HasAlpha() {
		// composite gives the result an alpha band; an opaque one, as
		// the thumbnail was.
		if err := img.AddAlpha(); err != nil {
			return err
		}
	}
	return img.Composite(mark, vips.BlendModeOver, at.X, at.Y)
}
