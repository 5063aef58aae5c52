package thumb

import (
	"fmt"
	"math"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
	"github.com/thumbd/thumbd/service/internal/videoframe"
)

// picture is a decoded video frame: 8-bit RGB rows, no padding.
type picture struct {
	width, height int
	pix           []byte
}

// posterDetail is the standard deviation of the luma (0-255) that counts
// as detail for the default poster frame (videoframe.Choose's candidates:
// the first of the first keyframes with it, as a person would choose, so
// that a video that fades in from black, or opens on a flat title card,
// is not shown as a black or flat square): a black or flat frame is near
// 0, a faded title card under 5, a frame of a scene 20 and more.
// docs/adr/0008-video-decoders.md has the choice.
const posterDetail = 8.0

// videoFrame decodes the frame of a video source that f asks for (or a
// preview's frames) and wraps it as an uncompressed TIFF (rawTIFFPages)
// whose orientation tag is the display matrix's, so that the rest of the
// job runs as for any image: libvips turns it upright, the plan's steps
// resize it. The container is read again here, in the engine (so in
// cells mode in the sandboxed cell): the look's reading priced it, this
// one feeds the decoder. A ranged source gives only the bytes
// videoframe.Spans found this reading needs; any other read fails.
func videoFrame(in thumbjob.Source, f thumbjob.Frame, maxPixels int64) ([]byte, error) {
	ra, size := in.ReaderAt()
	r, err := video.Open(ra, size, video.DefaultLimits())
	if err != nil {
		return nil, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	info := r.Info()
	if n := len(f.PreviewTimes(info.Duration)); n > 1 {
		// Every frame is held until the last decodes: the pixel limit
		// counts them all (as the plan does an animation's), before the
		// container is read further.
		if px := int64(n) * int64(max(info.Width, info.CodedWidth)) * int64(max(info.Height, info.CodedHeight)); maxPixels > 0 && px > maxPixels {
			return nil, fmt.Errorf("%w: a preview's %d frames of %dx%d are %d pixels to decode, more than the %d allowed", thumbjob.ErrTooManyPixels, n, info.Width, info.Height, px, maxPixels)
		}
	}
	p, err := videoframe.Choose(r, f)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	var pics []picture
	if p.Poster {
		pic, err := posterFrame(r, info, p.Frames, maxPixels)
		if err != nil {
			return nil, err
		}
		pics = []picture{pic}
	} else if pics, err = decodeFrames(r, info, p.Frames, maxPixels); err != nil {
		return nil, err
	}
	orientation := info.Orientation()
	if len(pics) > 1 {
		// libvips turns an animation's frames as one tall image (the pages
		// would land side by side), so a preview's are turned here, each
		// by the display matrix (EXIF's orientation values).
		for i := range pics {
			pics[i] = upright(pics[i], orientation)
		}
		orientation = 1
	}
	pages := make([]tiffPage, len(pics))
	for i, p := range pics {
		pages[i] = tiffPage{pix: p.pix, width: p.width, height: p.height, bands: 3, orientation: orientation}
	}
	return rawTIFFPages(pages)
}

// decodeFrame reads a frame's packets and decodes it.
func decodeFrame(r *video.Reader, info video.Info, fr video.Frame, maxPixels int64) (picture, error) {
	if err := r.ReadFrame(&fr); err != nil {
		return picture{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	return decodeVideo(info, fr, maxPixels)
}

// decodeFrames decodes each frame. A frame that does not decode fails the
// job, as for one frame; every frame has the first's size (a stream that
// changes size is refused: an animation's frames share one).
func decodeFrames(r *video.Reader, info video.Info, frames []video.Frame, maxPixels int64) ([]picture, error) {
	pics := make([]picture, 0, len(frames))
	for _, fr := range frames {
		pic, err := decodeFrame(r, info, fr, maxPixels)
		if err != nil {
			return nil, err
		}
		if len(pics) > 0 && (pic.width != pics[0].width || pic.height != pics[0].height) {
			return nil, fmt.Errorf("%w: the video's frames change size (%dx%d, then %dx%d at %.3fs)", thumbjob.ErrUndecodable, pics[0].width, pics[0].height, pic.width, pic.height, fr.Time)
		}
		pics = append(pics, pic)
	}
	return pics, nil
}

// upright is p as shown under EXIF orientation o (1 to 8): each pixel of
// the shown picture read from the one it comes from.
func upright(p picture, o int) picture {
	if o <= 1 || o > 8 {
		return p
	}
	w, h := p.width, p.height
	out := picture{width: w, height: h, pix: make([]byte, len(p.pix))}
	if o >= 5 {
		out.width, out.height = h, w
	}
	for dy := range out.height {
		for dx := range out.width {
			var sx, sy int
			switch o {
			case 2:
				sx, sy = w-1-dx, dy
			case 3:
				sx, sy = w-1-dx, h-1-dy
			case 4:
				sx, sy = dx, h-1-dy
			case 5: // transposed
				sx, sy = dy, dx
			case 6: // a quarter turn clockwise
				sx, sy = dy, h-1-dx
			case 7: // transversed
				sx, sy = w-1-dy, h-1-dx
			case 8: // a quarter turn anticlockwise
				sx, sy = w-1-dy, dx
			}
			copy(out.pix[(dy*out.width+dx)*3:][:3], p.pix[(sy*w+sx)*3:])
		}
	}
	return out
}

// posterFrame is the default poster frame: the first of the candidates
// (keyframes, one packet each) with detail, else the one with the most.
// A keyframe that does not decode fails the job: a broken file is
// refused, never skipped over to a frame that happens to decode.
func posterFrame(r *video.Reader, info video.Info, candidates []video.Frame, maxPixels int64) (picture, error) {
	var best picture
	most := -1.0
	for _, fr := range candidates {
		pic, err := decodeFrame(r, info, fr, maxPixels)
		if err != nil {
			return picture{}, err
		}
		d := detail(pic)
		if d >= posterDetail {
			return pic, nil
		}
		if d > most {
			best, most = pic, d
		}
	}
	if most < 0 {
		return picture{}, fmt.Errorf("%w: the video has no keyframe before its end", thumbjob.ErrUndecodable)
	}
	return best, nil
}

// detail is the standard deviation of a picture's luma (BT.709's
// weights on the 8-bit values), sampled on a grid of at most about
// 64x64 points: what tells a scene from a black or flat frame.
func detail(p picture) float64 {
	step := func(n int) int { return max(1, n/64) }
	sx, sy := step(p.width), step(p.height)
	var n, sum, sq float64
	for y := 0; y < p.height; y += sy {
		row := p.pix[y*p.width*3:]
		for x := 0; x < p.width; x += sx {
			px := row[x*3:]
			l := 0.2126*float64(px[0]) + 0.7152*float64(px[1]) + 0.0722*float64(px[2])
			n++
			sum += l
			sq += l * l
		}
	}
	if n == 0 {
		return 0
	}
	mean := sum / n
	return math.Sqrt(max(sq/n-mean*mean, 0))
}
