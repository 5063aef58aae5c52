package thumb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
	"github.com/thumbd/thumbd/service/internal/videoframe"
)

// videoClip is a video made at test time by Debian's ffmpeg from a
// generated source (testsrc2's coloured shapes, moving), 320x240 at 25
// frames a second with a keyframe every second.
type videoClip struct {
	name  string // its extension is the container
	input string // the lavfi graph; testsrc2 for 3 seconds by default
	args  []string
	// rotate is the display matrix's turn, in degrees anticlockwise as
	// ffmpeg's rotate tag says it (an iPhone held upright: 90), written
	// by remuxing: Debian's FFmpeg 5.1 writes it only on a stream copy.
	rotate int
}

func (c videoClip) make(t testing.TB, dir string) string {
	t.Helper()
	needTools(t, "ffmpeg")
	out := filepath.Join(dir, c.name)
	input := c.input
	if input == "" {
		input = "testsrc2=size=320x240:rate=25:duration=3"
	}
	args := append([]string{"-v", "error", "-y", "-f", "lavfi", "-i", input}, c.args...)
	encoded := out
	if c.rotate != 0 {
		encoded = filepath.Join(dir, "unrotated-"+c.name)
	}
	args = append(args, encoded)
	if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, b)
	}
	if c.rotate != 0 {
		args := []string{"-v", "error", "-y", "-i", encoded, "-c", "copy", "-metadata:s:v:0", fmt.Sprintf("rotate=%d", c.rotate), out}
		if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg %v: %v\n%s", args, err, b)
		}
	}
	return out
}

var (
	clipH264 = []string{"-c:v", "libx264", "-crf", "24", "-g", "25", "-pix_fmt", "yuv420p"} // B-frames: x264's default
	clipHEVC = []string{"-c:v", "libx265", "-crf", "28", "-tag:v", "hvc1", "-pix_fmt", "yuv420p", "-x265-params", "log-level=error:keyint=25"}
	clipVP8  = []string{"-c:v", "libvpx", "-b:v", "400k", "-g", "25"}
	clipVP9  = []string{"-c:v", "libvpx-vp9", "-b:v", "400k", "-g", "25", "-deadline", "realtime", "-cpu-used", "8"}
	clipAV1  = []string{"-c:v", "libaom-av1", "-b:v", "400k", "-g", "25", "-cpu-used", "8", "-row-mt", "1"}
)

// ffmpegPoster is ffmpeg's own decode of the frame shown at seconds (its
// first frame at or after it), turned by the display matrix as ffmpeg
// turns it by default.
func ffmpegPoster(t *testing.T, path string, seconds float64) image.Image {
	t.Helper()
	args := []string{"-v", "error", "-ss", fmt.Sprintf("%.4f", max(seconds-0.0005, 0)), "-i", path,
		"-frames:v", "1", "-f", "image2pipe", "-c:v", "png", "-"}
	var stderr bytes.Buffer
	cmd := exec.Command("ffmpeg", args...)
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, stderr.Bytes())
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// videoTolerance is the mean difference a channel allowed between the
// engine's frame and ffmpeg's: the same decoder's planes (Debian's
// FFmpeg in the dynamic build, the recipe's in the images'), converted to
// RGB by videodecode (chroma interpolated at its siting) and by swscale
// (chroma repeated over its block), which differ by 2 to 4.5 levels on
// testsrc2's sharp colour edges (videodecode's swscaleTolerance).
const videoTolerance = 5.0

func poster(t *testing.T, e *Engine, src []byte, w, h int, f thumbjob.Frame) image.Image {
	t.Helper()
	img, err := e.Thumbnail(context.Background(), src, thumbjob.Options{Width: w, Height: h, Fit: thumbjob.FitInside, Format: imagefmt.PNG, Frame: f})
	if err != nil {
		t.Fatal(err)
	}
	return decodePNG(t, img.Bytes)
}

// TestVideoPosterFrames makes a thumbnail of a frame of each codec and
// container, through the engine as any job (the look, the price, the
// decode, the plan's steps, the encoder), and holds it to ffmpeg's own
// decode of the same frame: at its own size, so that no resize tells them
// apart.
func TestVideoPosterFrames(t *testing.T) {
	dir := t.TempDir()
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	at1 := thumbjob.Frame{At: 1, Given: true}
	for _, c := range []struct {
		clip   videoClip
		format imagefmt.Format
		frame  thumbjob.Frame
		w, h   int
		// ref is the time ffmpeg is asked for: the frame's own. Between
		// two frames, thumbd takes the one shown then (the last that
		// starts at or before t), ffmpeg's -ss the next (the first at or
		// after it): 50% of 3 s is 1.48 s's frame here, 1.52 s's there.
		ref float64
	}{
		{videoClip{name: "h264.mp4", args: clipH264}, imagefmt.H264, at1, 320, 240, 1},
		{videoClip{name: "h264-moov-first.mp4", args: append(clipH264, "-movflags", "+faststart")}, imagefmt.H264, thumbjob.Frame{At: 1.52, Given: true}, 320, 240, 1.52},
		{videoClip{name: "h264-fragmented.mp4", args: append(clipH264, "-movflags", "+frag_keyframe+empty_moov")}, imagefmt.H264, thumbjob.Frame{At: 2.2, Given: true}, 320, 240, 2.2},
		// An iPhone's MOV: HEVC, turned 90 degrees by its display matrix.
		{videoClip{name: "hevc-rotated.mov", args: clipHEVC, rotate: 90}, imagefmt.HEVC, at1, 240, 320, 1},
		{videoClip{name: "h264-rotated-270.mp4", args: clipH264, rotate: 270}, imagefmt.H264, at1, 240, 320, 1},
		{videoClip{name: "h264-rotated-180.mp4", args: clipH264, rotate: 180}, imagefmt.H264, at1, 320, 240, 1},
		{videoClip{name: "vp8.webm", args: clipVP8}, imagefmt.VP8, at1, 320, 240, 1},
		{videoClip{name: "vp9.webm", args: clipVP9}, imagefmt.VP9, thumbjob.Frame{At: 50, Percent: true, Given: true}, 320, 240, 1.48},
		{videoClip{name: "av1.mkv", args: clipAV1}, imagefmt.AV1, at1, 320, 240, 1},
		{videoClip{name: "h264.mkv", args: clipH264}, imagefmt.H264, thumbjob.Frame{At: 1.5, Given: true, Keyframe: true}, 320, 240, 1},
	} {
		t.Run(c.clip.name, func(t *testing.T) {
			path := c.clip.make(t, dir)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			look, err := memcost.Look(src)
			if err != nil || look.Format != c.format {
				t.Fatalf("look: %s, %v; want %s", look.Format, err, c.format)
			}
			got := poster(t, e, src, c.w, c.h, c.frame)
			if b := got.Bounds(); b.Dx() != c.w || b.Dy() != c.h {
				t.Fatalf("%dx%d, want %dx%d", b.Dx(), b.Dy(), c.w, c.h)
			}
			if d := imagediff.MeanAbs(got, ffmpegPoster(t, path, c.ref)); d > videoTolerance {
				t.Errorf("mean difference %.2f a channel from ffmpeg's frame at %g s (tolerance %g)", d, c.ref, videoTolerance)
			}
		})
	}
}

// TestVideoFrameChoice: the default poster frame skips a black opening
// (the first keyframe with detail: here the third, at 2 s), a time past
// the end is the last frame, and a keyframe is the exact frame at its own
// time.
func TestVideoFrameChoice(t *testing.T) {
	dir := t.TempDir()
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	black := videoClip{name: "black-first.mp4", args: clipH264,
		input: "color=black:size=320x240:rate=25:duration=2[a];testsrc2=size=320x240:rate=25:duration=2[b];[a][b]concat"}
	path := black.make(t, dir)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	def := poster(t, e, src, 320, 240, thumbjob.Frame{})
	if d := imagediff.MeanAbs(def, ffmpegPoster(t, path, 2)); d > videoTolerance {
		t.Errorf("default poster frame: mean difference %.2f from ffmpeg's frame at 2 s, the first keyframe with detail", d)
	}
	if d := imagediff.MeanAbs(def, ffmpegPoster(t, path, 0)); d < 20 {
		t.Errorf("default poster frame: %.2f from the black first frame: it is the black frame", d)
	}

	last := poster(t, e, src, 320, 240, thumbjob.Frame{At: 3.96, Given: true})
	for _, f := range []thumbjob.Frame{{At: 100, Given: true}, {At: 4, Given: true}, {At: 100, Percent: true, Given: true}} {
		if d := imagediff.MeanAbs(poster(t, e, src, 320, 240, f), last); d != 0 {
			t.Errorf("%+v: %.2f from the last frame (3.96 s), want the last frame", f, d)
		}
	}
	exact := poster(t, e, src, 320, 240, thumbjob.Frame{At: 3, Given: true})
	if d := imagediff.MeanAbs(poster(t, e, src, 320, 240, thumbjob.Frame{At: 3.7, Given: true, Keyframe: true}), exact); d != 0 {
		t.Errorf("keyframe before 3.7 s: %.2f from the frame at 3 s (its keyframe)", d)
	}
	if d := imagediff.MeanAbs(poster(t, e, src, 320, 240, thumbjob.Frame{At: 3.7, Given: true}), exact); d == 0 {
		t.Error("the frame at 3.7 s is the keyframe's: the exact frame was not decoded")
	}
}

// TestVideoRefusals: a truncated or corrupt video is a 422 (never a
// panic, never a half-decoded frame), and a codec left out of Inputs a
// 415 naming it.
func TestVideoRefusals(t *testing.T) {
	dir := t.TempDir()
	path := videoClip{name: "v.mp4", args: append(clipH264, "-movflags", "+faststart")}.make(t, dir)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	corrupt := bytes.Clone(src)
	for i := len(corrupt) / 2; i < len(corrupt); i += 97 {
		corrupt[i] ^= 0x5a
	}
	for name, b := range map[string][]byte{
		"truncated in moov": src[:600],
		"truncated in mdat": src[:len(src)/2],
		"corrupt packets":   corrupt,
	} {
		_, err := e.Thumbnail(context.Background(), b, thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Format: imagefmt.PNG, Frame: thumbjob.Frame{At: 2.5, Given: true}})
		if !errors.Is(err, thumbjob.ErrUndecodable) {
			t.Errorf("%s: %v, want undecodable (422)", name, err)
		}
	}
	only := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1,
		Inputs: []imagefmt.Format{imagefmt.JPEG, imagefmt.VP9}})
	_, err = only.Thumbnail(context.Background(), src, thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Format: imagefmt.PNG})
	if !errors.Is(err, thumbjob.ErrUnsupportedFormat) || !strings.Contains(err.Error(), "coded in H.264") || !strings.Contains(err.Error(), "THUMBD_INPUTS") {
		t.Errorf("H.264 left out of THUMBD_INPUTS: %v, want unsupported_format naming H.264 and the setting", err)
	}
}

// TestVideoInfo: /info of a video gives its codec as the format, the frame
// as shown (the display matrix applied) and the container's account, and
// the ThumbHash of its default poster frame.
func TestVideoInfo(t *testing.T) {
	dir := t.TempDir()
	path := videoClip{name: "turned.mov", args: clipHEVC, rotate: 90}.make(t, dir)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	info, err := e.Info(context.Background(), src, thumbjob.InfoJob{ThumbHash: true})
	if err != nil {
		t.Fatal(err)
	}
	v := info.Video
	if info.Format != imagefmt.HEVC || info.Width != 240 || info.Height != 320 || v == nil ||
		v.Container != "mov" || v.Rotation != 270 || v.Audio || v.Duration < 2.9 || v.Duration > 3.1 || v.FrameRate != 25 {
		// ffmpeg's rotate=90 tag is a display matrix that ffprobe reads
		// as a rotation of 90 degrees counterclockwise: 270 clockwise.
		t.Fatalf("info %+v, video %+v; want HEVC, 240x320 as shown, a 3 s MOV at 25 fps turned 270 degrees clockwise", info, v)
	}
	if info.ThumbHash == "" {
		t.Error("no ThumbHash")
	}
	poster := poster(t, e, src, 240, 320, thumbjob.Frame{})
	if b := poster.Bounds(); b.Dx() != info.Width || b.Dy() != info.Height {
		t.Errorf("the default poster frame is %dx%d, /info says %dx%d", b.Dx(), b.Dy(), info.Width, info.Height)
	}
}

// previewTolerance is videoTolerance and what WebP's lossy encoding at
// q=100 adds to testsrc2's sharp colour edges.
const previewTolerance = 8.0

// TestVideoPreview: frames=N is an animation of N frames at the middles
// of N equal parts of the duration, each held to ffmpeg's own decode of
// the frame shown then (or, with keyframe, of the keyframe before it),
// turned by the display matrix like a poster frame, each shown for
// thumbjob.PreviewDelay.
func TestVideoPreview(t *testing.T) {
	dir := t.TempDir()
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	shown := func(t float64) float64 { return math.Floor(t*25+1e-9) / 25 } // the 25 fps frame shown at t
	for _, c := range []struct {
		clip  videoClip
		frame thumbjob.Frame
		w, h  int
		refs  []float64
	}{
		{videoClip{name: "h264.mp4", args: clipH264}, thumbjob.Frame{Count: 4}, 320, 240,
			[]float64{shown(0.375), shown(1.125), shown(1.875), shown(2.625)}},
		{videoClip{name: "hevc-rotated.mov", args: clipHEVC, rotate: 90}, thumbjob.Frame{Count: 3, Keyframe: true}, 240, 320, []float64{0, 1, 2}},
		// every=1 over 3 s: the middles of its three seconds.
		{videoClip{name: "h264.mp4", args: clipH264}, thumbjob.Frame{Count: 25, Every: 1}, 320, 240,
			[]float64{shown(0.5), shown(1.5), shown(2.5)}},
	} {
		t.Run(c.clip.name, func(t *testing.T) {
			path := c.clip.make(t, dir)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			o := thumbjob.Options{Width: c.w, Height: c.h, Fit: thumbjob.FitInside, Format: imagefmt.WebP, Quality: 100, Animated: true, Frame: c.frame}
			img, err := e.Thumbnail(context.Background(), src, o)
			if err != nil {
				t.Fatal(err)
			}
			back := readBack(t, img.Bytes)
			if img.Frames != len(c.refs) || back.Pages() != len(c.refs) || back.Width() != c.w || back.PageHeight() != c.h {
				t.Fatalf("%d frames (read back %d) of %dx%d, want %d of %dx%d", img.Frames, back.Pages(), back.Width(), back.PageHeight(), len(c.refs), c.w, c.h)
			}
			if delays, err := back.PageDelay(); err != nil || !slices.Equal(delays, slices.Repeat([]int{thumbjob.PreviewDelay}, len(c.refs))) {
				t.Errorf("delays %v (%v), want %d ms each", delays, err, thumbjob.PreviewDelay)
			}
			for i, ref := range c.refs {
				p := vips.NewImportParams()
				p.Page.Set(i)
				page, err := vips.LoadImageFromBuffer(img.Bytes, p)
				if err != nil {
					t.Fatal(err)
				}
				defer page.Close()
				b, _, err := page.ExportPng(vips.NewPngExportParams())
				if err != nil {
					t.Fatal(err)
				}
				// WebP is lossy even at q=100 (its YUV 4:2:0 above all): the
				// tolerance is the poster's and what the encoder adds, and
				// the frame must be nearer ffmpeg's than the frames on
				// either side of it are.
				got := decodePNG(t, b)
				d := imagediff.MeanAbs(got, ffmpegPoster(t, path, ref))
				if d > previewTolerance {
					t.Errorf("frame %d: mean difference %.2f a channel from ffmpeg's frame at %g s (tolerance %g)", i, d, ref, previewTolerance)
				}
				if !c.frame.Keyframe {
					for _, near := range []float64{ref - 0.04, ref + 0.04} {
						if dn := imagediff.MeanAbs(got, ffmpegPoster(t, path, near)); dn <= d {
							t.Errorf("frame %d: %.2f from ffmpeg's frame at %g s, no nearer than to the one at %g s (%.2f)", i, d, ref, near, dn)
						}
					}
				}
			}
		})
	}

	// Shrunk from 720p, as most previews are: libvips' thumbnail from a
	// buffer read the pages' TIFF sequentially and refused ("out of order
	// read") once a frame was larger than its read-ahead.
	big := videoClip{name: "720p.mp4", input: "testsrc2=size=1280x720:rate=25:duration=2", args: clipH264}.make(t, dir)
	bigSrc, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{320, 480, 1000} {
		o := thumbjob.Options{Width: w, Fit: thumbjob.FitInside, Format: imagefmt.WebP, Animated: true, Frame: thumbjob.Frame{Count: 6}}
		img, err := e.Thumbnail(context.Background(), bigSrc, o)
		if err != nil {
			t.Fatalf("720p to %d px: %v", w, err)
		}
		if back := readBack(t, img.Bytes); back.Pages() != 6 || back.Width() != w || back.PageHeight() != int(math.Round(float64(w)*720/1280)) {
			t.Errorf("720p to %d px: %d frames of %dx%d", w, back.Pages(), back.Width(), back.PageHeight())
		}
	}

	// Without an animated output (or under a watermark) a preview is the
	// default poster frame, as an animated GIF gives its first frame: one
	// frame decoded, as priced.
	path := videoClip{name: "still.mp4", args: clipH264}.make(t, dir)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := imagediff.MeanAbs(poster(t, e, src, 320, 240, thumbjob.Frame{Count: 4}), poster(t, e, src, 320, 240, thumbjob.Frame{})); d != 0 {
		t.Errorf("a PNG of frames=4: %.2f from the default poster frame", d)
	}

	// The pixel limit counts every frame, before any decode: 4 frames of
	// 320x240 are 307,200 pixels.
	small := New(thumbjob.Config{MaxPixels: 300_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	o := thumbjob.Options{Width: 64, Fit: thumbjob.FitInside, Format: imagefmt.WebP, Animated: true, Frame: thumbjob.Frame{Count: 4}}
	if _, err := small.Thumbnail(context.Background(), src, o); !errors.Is(err, thumbjob.ErrTooManyPixels) {
		t.Errorf("4 frames of 320x240 under a 300,000-pixel limit: %v, want ErrTooManyPixels", err)
	}
	o.Frame.Count = 3
	if _, err := small.Thumbnail(context.Background(), src, o); err != nil {
		t.Errorf("3 frames of 320x240 under a 300,000-pixel limit: %v", err)
	}
}

// TestVideoRangedSource: a video read by range (videoframe.Spans: the
// bytes opening it, choosing the frames and reading their packets read)
// makes the very thumbnail the whole file makes, for each container and
// each kind of frame; the spans are a part of the file; and a ranged
// source that lacks a span the decode needs is refused, never decoded
// from other bytes.
func TestVideoRangedSource(t *testing.T) {
	dir := t.TempDir()
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	long := "testsrc2=size=320x240:rate=25:duration=6"
	frames := []thumbjob.Frame{{}, {At: 4.5, Given: true, Keyframe: true}, {At: 3.3, Given: true}, {Count: 3, Keyframe: true}}
	for _, clip := range []videoClip{
		{name: "h264.mp4", input: long, args: clipH264},
		{name: "h264-moov-first.mp4", input: long, args: append(clipH264, "-movflags", "+faststart")},
		{name: "h264-fragmented.mp4", input: long, args: append(clipH264, "-movflags", "+frag_keyframe+empty_moov")},
		{name: "hevc-rotated.mov", input: long, args: clipHEVC, rotate: 90},
		{name: "vp9.webm", input: long, args: clipVP9},
		{name: "h264.mkv", input: long, args: clipH264},
	} {
		t.Run(clip.name, func(t *testing.T) {
			src, err := os.ReadFile(clip.make(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range frames {
				o := thumbjob.Options{Width: 64, Fit: thumbjob.FitInside, Format: imagefmt.PNG, Frame: f}
				if f.Count > 1 {
					o.Format, o.Animated = imagefmt.WebP, true
				}
				want, err := e.Thumbnail(context.Background(), src, o)
				if err != nil {
					t.Fatalf("%+v, whole: %v", f, err)
				}
				spans, err := videoframe.Spans(bytes.NewReader(src), int64(len(src)), plan.VideoFrame(o))
				if err != nil {
					t.Fatalf("%+v: spans: %v", f, err)
				}
				ranged := rangedSource(src, spans)
				got, err := e.Run(context.Background(), lookRanged(t, ranged), thumbjob.Job{Options: o})
				if err != nil || !bytes.Equal(got.Image.Bytes, want.Bytes) {
					t.Errorf("%+v: by range %d bytes (%v), whole %d bytes", f, len(got.Image.Bytes), err, len(want.Bytes))
				}
				// The last span left out (the last packets the frame needs).
				// The span of the first frame's first packet left out: the
				// look is the whole ranged source's (the pipeline's), the
				// engine reads the short one.
				if len(spans) > 1 {
					short := rangedSource(src, withoutFirstPacket(t, src, spans, plan.VideoFrame(o)))
					look := lookRanged(t, ranged)
					look.Bytes, look.Spans = short.Bytes, short.Spans
					if _, err := e.Run(context.Background(), look, thumbjob.Job{Options: o}); !errors.Is(err, thumbjob.ErrUndecodable) {
						t.Errorf("%+v: a span left out: %v, want ErrUndecodable", f, err)
					}
				}
			}
		})
	}
}

// withoutFirstPacket is spans without the one that holds the first
// packet the job decodes.
func withoutFirstPacket(t *testing.T, src []byte, spans []thumbjob.Span, f thumbjob.Frame) []thumbjob.Span {
	t.Helper()
	r, err := video.Open(bytes.NewReader(src), int64(len(src)), video.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	p, err := videoframe.Choose(r, f)
	if err != nil {
		t.Fatal(err)
	}
	first := p.Frames[0].Ranges[0]
	return slices.DeleteFunc(slices.Clone(spans), func(s thumbjob.Span) bool {
		return first.Offset >= s.Offset && first.Offset < s.Offset+s.Size
	})
}

// rangedSource is src's spans as a ranged source's bytes.
func rangedSource(src []byte, spans []thumbjob.Span) thumbjob.Source {
	s := thumbjob.Source{Spans: spans, Size: int64(len(src))}
	for _, sp := range spans {
		s.Bytes = append(s.Bytes, src[sp.Offset:sp.Offset+sp.Size]...)
	}
	return s
}

func lookRanged(t *testing.T, s thumbjob.Source) thumbjob.Source {
	t.Helper()
	look, err := memcost.LookSource(s)
	if err != nil {
		t.Fatalf("look: %v", err)
	}
	return look
}
