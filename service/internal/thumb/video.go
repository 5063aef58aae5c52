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
	var pic picture
	if f.Given {
		pic, err = givenFrame(r, info, f, maxPixels)
	} else {
		pic, err = posterFrame(r, info, maxPixels)
	}
	if err != nil {
		return nil, err
	}
	return rawTIFF(pic.pix, pic.width, pic.height, 3, info.Orientation())
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
