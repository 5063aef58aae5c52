package thumb

import (
	"bytes"
	"fmt"
	"math"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
)

// picture is a decoded video frame: 8-bit RGB rows, no padding.
type picture struct {
	width, height int
	pix           []byte
}

// The default poster frame (no t): the first of the first keyframes whose
// picture has detail, as a person would choose, so that a video that
// fades in from black, or opens on a flat title card, is not shown as a
// black or flat square. Bounded: at most posterKeyframes keyframes are
// decoded (one packet each: nothing before them), then the one with the
// most detail is taken. docs/adr/0008-video-decoders.md has the choice.
const (
	posterKeyframes = 5
	// posterDetail is the standard deviation of the luma (0-255) that
	// counts as detail: a black or flat frame is near 0, a faded title
	// card under 5, a frame of a scene 20 and more.
	posterDetail = 8.0
)

// videoFrame decodes the frame of a video source that f asks for and
// wraps it as an uncompressed TIFF (rawTIFF) whose orientation tag is the
// display matrix's, so that the rest of the job runs as for any image:
// libvips turns it upright, the plan's steps resize it. The container is
// read again here, in the engine (so in cells mode in the sandboxed
// cell): the look's reading priced it, this one feeds the decoder.
func videoFrame(in thumbjob.Source, f thumbjob.Frame, maxPixels int64) ([]byte, error) {
	r, err := video.Open(bytes.NewReader(in.Bytes), int64(len(in.Bytes)), video.DefaultLimits())
	if err != nil {
		return nil, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	info := r.Info()
	var pics []picture
	var pic picture
	switch {
	case f.Count > 1:
		pics, err = previewFrames(r, info, f, maxPixels)
	case f.Given:
		pic, err = givenFrame(r, info, f, maxPixels)
		pics = []picture{pic}
	default:
		pic, err = posterFrame(r, info, maxPixels)
		pics = []picture{pic}
	}
	if err != nil {
		return nil, err
	}
	orientation := info.Orientation()
	if len(pics) > 1 {
		orientation = 1 // previewFrames turned them upright
	}
	pages := make([]tiffPage, len(pics))
	for i, p := range pics {
		pages[i] = tiffPage{pix: p.pix, width: p.width, height: p.height, bands: 3, orientation: orientation}
	}
	return rawTIFFPages(pages)
}

// previewFrames decodes a preview's f.Count frames, at the middles of as
// many equal parts of the duration (so neither the first frame, often
// black, nor the last), each exact or, with f.Keyframe, the keyframe at
// or before it. A frame that does not decode fails the job, as for one
// frame; every frame has the first's size (a stream that changes size is
// refused: the animation's frames share one).
func previewFrames(r *video.Reader, info video.Info, f thumbjob.Frame, maxPixels int64) ([]picture, error) {
	if info.Duration <= 0 {
		return nil, fmt.Errorf("%w: a preview needs the video's duration, which its container does not give", thumbjob.ErrUndecodable)
	}
	// Every frame is held until the last decodes: the pixel limit counts
	// them all (as the plan does an animation's), before the first decode.
	if px := int64(f.Count) * int64(max(info.Width, info.CodedWidth)) * int64(max(info.Height, info.CodedHeight)); maxPixels > 0 && px > maxPixels {
		return nil, fmt.Errorf("%w: a preview's %d frames of %dx%d are %d pixels to decode, more than the %d allowed", thumbjob.ErrTooManyPixels, f.Count, info.Width, info.Height, px, maxPixels)
	}
	start, err := r.Start()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	pics := make([]picture, 0, f.Count)
	for i := range f.Count {
		t := info.Duration * (float64(i) + 0.5) / float64(f.Count)
		pic, err := frameAt(r, info, start+t, f.Keyframe, maxPixels)
		if err != nil {
			return nil, err
		}
		if len(pics) > 0 && (pic.width != pics[0].width || pic.height != pics[0].height) {
			return nil, fmt.Errorf("%w: the video's frames change size (%dx%d, then %dx%d at %.3fs)", thumbjob.ErrUndecodable, pics[0].width, pics[0].height, pic.width, pic.height, t)
		}
		pics = append(pics, pic)
	}
	// libvips turns an animation's frames as one tall image (the pages
	// would land side by side), so a preview's are turned here, each by
	// the display matrix (EXIF's orientation values).
	o := info.Orientation()
	for i := range pics {
		pics[i] = upright(pics[i], o)
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

// seconds is f's time in seconds from the first frame (as a player
// counts, and ffmpeg's -ss): a percentage of the duration, or seconds; at
// or past the end, the last frame's (as imgix answers a time past the
// end: with the last frame, not an error).
func seconds(f thumbjob.Frame, info video.Info) float64 {
	t := f.At
	if f.Percent {
		t = info.Duration * f.At / 100
	}
	if info.Duration > 0 && t >= info.Duration {
		t = max(info.Duration-lastFrameMargin, 0)
	}
	return t
}

// lastFrameMargin is how far before the end the last frame is looked
// for: far below any frame's duration, far above a float's rounding.
const lastFrameMargin = 1e-6

// givenFrame decodes the frame at f's time, counted from the first frame.
func givenFrame(r *video.Reader, info video.Info, f thumbjob.Frame, maxPixels int64) (picture, error) {
	start, err := r.Start()
	if err != nil {
		return picture{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	return frameAt(r, info, start+seconds(f, info), f.Keyframe, maxPixels)
}

// frameAt decodes the frame shown at t, or the keyframe it decodes from.
func frameAt(r *video.Reader, info video.Info, t float64, keyframe bool, maxPixels int64) (picture, error) {
	fr, err := r.FrameAt(t)
	if err != nil {
		return picture{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	if keyframe {
		fr = fr.Keyframe(info.TimeBase)
	}
	if err := r.ReadFrame(&fr); err != nil {
		return picture{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	return decodeVideo(info, fr, maxPixels)
}

// posterFrame is the default poster frame: the first of the first
// posterKeyframes keyframes with detail, else the one with the most. A
// keyframe that does not decode fails the job: a broken file is refused,
// never skipped over to a frame that happens to decode.
func posterFrame(r *video.Reader, info video.Info, maxPixels int64) (picture, error) {
	times := []float64{0}
	if n := min(len(info.Keyframes), posterKeyframes); n > 0 {
		times = times[:0]
		for _, k := range info.Keyframes[:n] {
			times = append(times, k.Time)
		}
	}
	var best picture
	most := -1.0
	for _, t := range times {
		pic, err := frameAt(r, info, max(t, 0), true, maxPixels)
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
