// Package videoframe chooses the frames of a video a job decodes: the
// frame at t (or its keyframe), a preview's frames, or the default poster
// frame's candidates. The engine decodes what Choose gives, and a ranged
// source reads only the bytes Spans finds Choose and the decoder need,
// so both read the file the same way: the source cannot give the engine
// bytes its plan did not ask for, and the engine refuses any it did not
// get (thumbjob.ErrNotRead).
package videoframe

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
)

// PosterKeyframes bounds the default poster frame's candidates: the
// first keyframes, each one packet decoded, of which the engine takes the
// first with detail. docs/adr/0008-video-decoders.md has the choice.
const PosterKeyframes = 5

// Plan is the frames a job decodes, each with its packets' byte ranges,
// in the order they are decoded.
type Plan struct {
	Frames []video.Frame
	// Poster: the default poster frame, the first of Frames with detail
	// (the engine's to judge); else every frame is decoded.
	Poster bool
}

// ErrNoDuration is a preview of a video whose container gives no
// duration to spread its frames over.
var ErrNoDuration = errors.New("a preview needs the video's duration, which its container does not give")

// Choose finds the frames f asks of r: with f.Count above 1, a preview's
// frames at f.PreviewTimes, the middles of equal parts of the duration
// (so neither the opening frame, often black, nor the closing one);
// with f.Given, the frame shown at its time from the first frame (a
// percentage of the duration, the last frame at or past the end); else
// the default poster frame's candidates, the first PosterKeyframes
// keyframes. With f.Keyframe, each frame is the keyframe at or before it.
// Every frame is found (the container read) before any is decoded.
func Choose(r *video.Reader, f thumbjob.Frame) (Plan, error) {
	info := r.Info()
	var times []float64
	keyframe := f.Keyframe
	switch {
	case f.Count > 1:
		if info.Duration <= 0 {
			return Plan{}, ErrNoDuration
		}
		start, err := r.Start()
		if err != nil {
			return Plan{}, err
		}
		for _, t := range f.PreviewTimes(info.Duration) {
			times = append(times, start+t)
		}
	case f.Given:
		start, err := r.Start()
		if err != nil {
			return Plan{}, err
		}
		times = []float64{start + Seconds(f, info)}
	default:
		times = []float64{0}
		if n := min(len(info.Keyframes), PosterKeyframes); n > 0 {
			times = times[:0]
			for _, k := range info.Keyframes[:n] {
				times = append(times, max(k.Time, 0))
			}
		}
		keyframe = true
	}
	p := Plan{Poster: !f.Given && f.Count <= 1}
	for _, t := range times {
		fr, err := r.FrameAt(t)
		if err != nil {
			return Plan{}, err
		}
		if keyframe {
			fr = fr.Keyframe(info.TimeBase)
		}
		p.Frames = append(p.Frames, fr)
	}
	return p, nil
}

// Seconds is f's time in seconds from the first frame (as a player
// counts, and ffmpeg's -ss): a percentage of the duration, or seconds; at
// or past the end, the last frame's (as imgix answers a time past the
// end: with the last frame, not an error).
func Seconds(f thumbjob.Frame, info video.Info) float64 {
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

// Spans are the byte ranges of the file r (size bytes) that a job
// decoding f's frames reads: what opening it, choosing the frames
// (Choose) and reading their packets read, in the engine's order, merged.
// A video that does not open or whose frames are not found is an error:
// the caller reads it whole (and the look refuses it as it would).
func Spans(r io.ReaderAt, size int64, f thumbjob.Frame) ([]thumbjob.Span, error) {
	rec := &recorder{r: r}
	v, err := video.Open(rec, size, video.DefaultLimits())
	if err != nil {
		return nil, err
	}
	p, err := Choose(v, f)
	if err != nil {
		return nil, err
	}
	spans := rec.spans
	for _, fr := range p.Frames {
		for _, rg := range fr.Ranges {
			spans = append(spans, thumbjob.Span{Offset: rg.Offset, Size: rg.Size})
		}
	}
	if len(spans) == 0 {
		return nil, fmt.Errorf("nothing to read")
	}
	return thumbjob.MergeSpans(spans), nil
}

// recorder is an io.ReaderAt that notes every range read.
type recorder struct {
	r     io.ReaderAt
	mu    sync.Mutex
	spans []thumbjob.Span
}

func (rec *recorder) ReadAt(p []byte, off int64) (int, error) {
	rec.mu.Lock()
	rec.spans = append(rec.spans, thumbjob.Span{Offset: off, Size: int64(len(p))})
	rec.mu.Unlock()
	return rec.r.ReadAt(p, off)
}
