package thumb

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// processCPU is this process's user and system CPU so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ffmpegFrameCPU is the median CPU of runs of ffmpeg's CLI decoding the
// frame at 1 s and nothing else, one thread (as the engine decodes):
// `ffmpeg -threads 1 -ss 1 -i F -frames:v 1 -f null -`.
func ffmpegFrameCPU(b *testing.B, path string, runs int) time.Duration {
	var cpu []time.Duration
	for range runs {
		cmd := exec.Command("ffmpeg", "-v", "error", "-threads", "1", "-ss", "1", "-i", path, "-frames:v", "1", "-f", "null", "-")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("ffmpeg: %v\n%s", err, out)
		}
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(cpu)
	return cpu[len(cpu)/2]
}

// BenchmarkVideoPoster: CPU per poster frame through the whole engine
// (the look, the decode of the frame at 1 s of a 1080p clip of each
// codec, whose only keyframe is at 0: 31 frames to decode, the
// conversion, the hand-over, a 256x256 WebP), against issue 47's floor:
// ffmpeg's CLI decoding that frame, one thread, plus the engine's plain
// thumbnail of that frame as an uncompressed TIFF (ffmpeg's own decode
// of it). Both the engine and ffmpeg run one thread. Under the bench
// lock, against the images' libvips and FFmpeg:
//
//	go run ./bench lock -- scripts/build.sh go slim test -run '^$' -bench VideoPoster -benchtime 10x ./service/internal/thumb
func BenchmarkVideoPoster(b *testing.B) {
	needTools(b, "ffmpeg")
	dir := b.TempDir()
	e := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1})
	o := thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80, Frame: thumbjob.Frame{At: 1, Given: true}}
	input := "testsrc2=size=1920x1080:rate=30:duration=1.5,noise=alls=8:allf=t"
	for _, c := range []videoClip{
		{name: "h264.mp4", input: input, args: []string{"-c:v", "libx264", "-preset", "fast", "-crf", "23", "-g", "250", "-pix_fmt", "yuv420p"}},
		{name: "hevc.mp4", input: input, args: []string{"-c:v", "libx265", "-preset", "fast", "-crf", "26", "-tag:v", "hvc1", "-pix_fmt", "yuv420p", "-x265-params", "log-level=error:keyint=250"}},
		{name: "vp9.webm", input: input, args: []string{"-c:v", "libvpx-vp9", "-b:v", "8M", "-g", "250", "-deadline", "realtime", "-cpu-used", "8"}},
		{name: "av1.mp4", input: input, args: []string{"-c:v", "libaom-av1", "-b:v", "8M", "-g", "250", "-cpu-used", "8", "-row-mt", "1"}},
	} {
		path := c.make(b, dir)
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		tiff := filepath.Join(dir, c.name+".tif")
		if out, err := exec.Command("ffmpeg", "-v", "error", "-y", "-ss", "1", "-i", path, "-frames:v", "1", "-pix_fmt", "rgb24", "-compression_algo", "raw", tiff).CombinedOutput(); err != nil {
			b.Fatalf("ffmpeg: %v\n%s", err, out)
		}
		frame, err := os.ReadFile(tiff)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			start := processCPU(b)
			for b.Loop() {
				if _, err := e.Thumbnail(context.Background(), src, o); err != nil {
					b.Fatal(err)
				}
			}
			poster := float64(processCPU(b)-start) / float64(b.N) / 1e6
			start = processCPU(b)
			const resizes = 10
			for range resizes {
				if _, err := e.Thumbnail(context.Background(), frame, thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80}); err != nil {
					b.Fatal(err)
				}
			}
			resize := float64(processCPU(b)-start) / resizes / 1e6
			decode := float64(ffmpegFrameCPU(b, path, 5)) / 1e6
			b.ReportMetric(poster, "cpu-ms/poster")
			b.ReportMetric(decode, "ffmpeg-cpu-ms")
			b.ReportMetric(resize, "resize-cpu-ms")
			b.ReportMetric(poster/(decode+resize), "x-floor")
		})
	}
}
