package videodecode

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/thumbd/thumbd/service/internal/video"
)

// needFFmpeg skips when Debian's ffmpeg is missing: scripts/deps.sh dev
// installs it, so CI never skips.
func needFFmpeg(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ffmpeg is missing (scripts/deps.sh dev installs it)")
		}
		t.Skip("ffmpeg is missing (scripts/deps.sh dev installs it)")
	}
}

// clip is a video made at test time by Debian's ffmpeg from a generated
// source: testsrc2's sharp coloured shapes, moving, at 25 fps.
type clip struct {
	name    string // its extension is the container
	size    string
	seconds float64
	args    []string // the encoder's, and any colour tags
	filter  string   // applied to the source first
}

var (
	// x264's defaults: B-frames (3, pyramid), so that decode order is not
	// presentation order.
	x264 = []string{"-c:v", "libx264", "-crf", "26", "-g", "24"}
	x265 = []string{"-c:v", "libx265", "-crf", "28", "-tag:v", "hvc1", "-x265-params", "log-level=error:keyint=24"}
	vp8  = []string{"-c:v", "libvpx", "-b:v", "300k", "-g", "24"}
	vp9  = []string{"-c:v", "libvpx-vp9", "-b:v", "300k", "-g", "24", "-deadline", "realtime", "-cpu-used", "8"}
	aom  = []string{"-c:v", "libaom-av1", "-b:v", "300k", "-g", "24", "-cpu-used", "8", "-row-mt", "1"}
	svt  = []string{"-c:v", "libsvtav1", "-crf", "40", "-g", "24", "-preset", "12", "-svtav1-params", "verbosity=0"}
	p10  = []string{"-pix_fmt", "yuv420p10le"}
	bt20 = []string{"-color_primaries", "bt2020", "-colorspace", "bt2020nc"}
)

func join(parts ...[]string) []string { return slices.Concat(parts...) }

func (c clip) make(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, c.name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	src := fmt.Sprintf("testsrc2=size=%s:rate=25:duration=%g", c.size, c.seconds)
	if c.filter != "" {
		src += "," + c.filter
	}
	args := join([]string{"-v", "error", "-y", "-f", "lavfi", "-i", src}, c.args, []string{out})
	if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, b)
	}
	return out
}

// frameAt is what the container reader gives for t: the header and the
// frame with its packets read.
func frameAt(t testing.TB, path string, at float64) (video.Info, video.Frame) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := video.Open(f, st.Size(), video.DefaultLimits())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fr, err := r.FrameAt(at)
	if err != nil {
		t.Fatalf("%s at %g s: %v", path, at, err)
	}
	if err := r.ReadFrame(&fr); err != nil {
		t.Fatal(err)
	}
	return r.Info(), fr
}

// ffmpegFrame is ffmpeg's own decode of the frame presented at the time
// (its first frame at or after it: the frame's own time, less half a
// millisecond), unrotated, as raw pixels of the format, after the filter.
func ffmpegFrame(t testing.TB, path string, at float64, filter, pixFmt string) []byte {
	t.Helper()
	args := []string{"-v", "error", "-noautorotate", "-ss", fmt.Sprintf("%.4f", max(at-0.0005, 0)), "-i", path,
		"-frames:v", "1", "-fps_mode", "passthrough"}
	if filter != "" {
		args = append(args, "-vf", filter)
	}
	args = append(args, "-f", "rawvideo", "-pix_fmt", pixFmt, "-")
	var stderr bytes.Buffer
	cmd := exec.Command("ffmpeg", args...)
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, stderr.Bytes())
	}
	return b
}

// meanDiff is the mean absolute difference per channel of two RGB images.
func meanDiff(t testing.TB, a, b []byte) [3]float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d bytes against %d", len(a), len(b))
	}
	var sum [3]float64
	for i := range a {
		sum[i%3] += math.Abs(float64(a[i]) - float64(b[i]))
	}
	n := float64(len(a) / 3)
	return [3]float64{sum[0] / n, sum[1] / n, sum[2] / n}
}

func worst(d [3]float64) float64 { return max(d[0], d[1], d[2]) }

// zimgTolerance is the mean difference per channel allowed between our
// RGB and ffmpeg's zscale (zimg) given the same matrix, range and
// bilinear chroma: the same arithmetic, in floating point both, so only
// a rounding of a half now and then (measured: 0 for 8-bit).
const zimgTolerance = 0.05

// swscaleTolerance is the mean difference per channel allowed between
// our RGB and ffmpeg's plain -pix_fmt rgb24 (swscale's unscaled fast
// path). It repeats each chroma sample over its 2x2 block where we
// interpolate at the stream's siting: on testsrc2's sharp colour edges
// the pixels there differ by up to 250 levels. Measured 2 to 4.5 levels
// a channel over the frame; against zimg's point (repeated) chroma, 2 to
// 3.
const swscaleTolerance = 5.0

// zimgReference is the zscale filter that converts as we do: the
// matrix and range the picture's Colour says, bilinear chroma, no dither.
func zimgReference(c Colour) string {
	rin := "limited"
	if c.FullRange {
		rin = "full"
	}
	return fmt.Sprintf("zscale=f=bilinear:d=none:min=%d:rin=%s,format=gbrp", c.Matrix, rin)
}

// TestDecodeMatchesFFmpeg decodes a frame of each codec and container, at
// the start and past it (B-frames: decoded after the frames they refer
// to), with and without the frames nothing refers to, and holds it to
// ffmpeg's own decode of that frame: the planes bit for bit, the RGB
// within sdrTolerance.
func TestDecodeMatchesFFmpeg(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	clips := []clip{
		{name: "h264.mp4", args: x264},
		{name: "h264.mkv", args: x264},
		{name: "h264-full.mp4", args: join(x264, []string{"-pix_fmt", "yuvj420p", "-color_range", "pc"})},
		{name: "h264-444.mp4", args: join(x264, []string{"-pix_fmt", "yuv444p"})},
		{name: "hevc8.mp4", args: x265},
		{name: "hevc10.mkv", args: join(x265, p10)},
		{name: "hevc10.mp4", args: join(x265, p10)},
		{name: "vp8.webm", args: vp8},
		{name: "vp9.webm", args: vp9},
		{name: "vp9.mp4", args: vp9},
		{name: "vp9-10.webm", args: join(vp9, []string{"-pix_fmt", "yuv420p10le", "-profile:v", "2"})},
		{name: "av1.mp4", args: svt},
		{name: "av1.mkv", args: aom},
		{name: "av1-10.mp4", args: join(svt, p10)},
	}
	for _, c := range clips {
		c.size, c.seconds = "320x240", 3
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := c.make(t, dir)
			for _, at := range []float64{0, 1.3, 2.7} {
				info, f := frameAt(t, path, at)
				all := DefaultLimits()
				all.DecodeAll = true
				want, err := decodePlanes(info, f, all)
				if err != nil {
					t.Fatalf("at %g s: %v", at, err)
				}
				ref := ffmpegFrame(t, path, f.Time, "", want.Format)
				if got := bytes.Join(want.Planes, nil); !bytes.Equal(got, ref) {
					t.Fatalf("at %g s (PTS %d): %s planes differ from ffmpeg's in %d of %d bytes", at, f.PTS, want.Format, differing(got, ref), len(ref))
				}
				skipped, err := decodePlanes(info, f, DefaultLimits())
				if err != nil {
					t.Fatalf("at %g s, skipping: %v", at, err)
				}
				if !slices.EqualFunc(skipped.Planes, want.Planes, bytes.Equal) {
					t.Fatalf("at %g s: skipping the frames nothing refers to changed the frame", at)
				}
				pic, err := Decode(info, f, DefaultLimits())
				if err != nil {
					t.Fatal(err)
				}
				if pic.Width != 320 || pic.Height != 240 || len(pic.Pix) != 320*240*3 {
					t.Fatalf("a %dx%d picture of %d bytes", pic.Width, pic.Height, len(pic.Pix))
				}
				z := meanDiff(t, pic.Pix, ffmpegFrame(t, path, f.Time, zimgReference(pic.Colour), "rgb24"))
				s := meanDiff(t, pic.Pix, ffmpegFrame(t, path, f.Time, "", "rgb24"))
				t.Logf("at %g s: %d packets, %s, RGB mean difference from zimg %.3f %.3f %.3f, from swscale %.2f %.2f %.2f",
					at, pic.Packets, want.Format, z[0], z[1], z[2], s[0], s[1], s[2])
				if worst(z) > zimgTolerance {
					t.Errorf("at %g s: RGB mean difference %.3f from zimg's, over %g", at, worst(z), zimgTolerance)
				}
				if worst(s) > swscaleTolerance {
					t.Errorf("at %g s: RGB mean difference %.2f from swscale's, over %g", at, worst(s), swscaleTolerance)
				}
			}
		})
	}
}

func differing(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

// TestSkipsFramesNothingRefersTo: past the start of an H.264 clip with
// B-frames, the default decode gives fewer frames than DecodeAll (the
// frames skipped are never decoded), and the same picture.
func TestSkipsFramesNothingRefersTo(t *testing.T) {
	needFFmpeg(t)
	path := clip{name: "h264.mp4", size: "320x240", seconds: 2, args: x264}.make(t, t.TempDir())
	info, f := frameAt(t, path, 0.9)
	all := DefaultLimits()
	all.DecodeAll = true
	a, err := Decode(info, f, all)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(info, f, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d packets: %d frames before it decoded, %d when skipping", len(f.Packets), a.Frames, s.Frames)
	if s.Frames >= a.Frames {
		t.Errorf("skipping gave %d frames before the one asked for, decoding all %d", s.Frames, a.Frames)
	}
	if !bytes.Equal(a.Pix, s.Pix) {
		t.Error("skipping changed the picture")
	}
}
