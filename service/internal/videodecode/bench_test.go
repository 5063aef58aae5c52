package videodecode

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// posterClips are 1080p clips of each codec, 1.5 s at 30 fps with one
// keyframe (at 0), so that the frame at 1 s needs 31 frames decoded, as a
// poster at t=1 does in a video whose keyframes are seconds apart; some
// noise over testsrc2, so that the bitstream is not all flat areas (about
// 8 to 12 Mbit/s).
var posterClips = []clip{
	{name: "h264.mp4", args: []string{"-c:v", "libx264", "-preset", "fast", "-crf", "23", "-g", "250"}},
	{name: "hevc.mp4", args: []string{"-c:v", "libx265", "-preset", "fast", "-crf", "26", "-tag:v", "hvc1", "-x265-params", "log-level=error:keyint=250"}},
	{name: "vp9.webm", args: []string{"-c:v", "libvpx-vp9", "-b:v", "8M", "-g", "250", "-deadline", "realtime", "-cpu-used", "8"}},
	{name: "av1.mp4", args: []string{"-c:v", "libsvtav1", "-crf", "35", "-g", "250", "-preset", "12", "-svtav1-params", "verbosity=0"}},
}

// cpuTime is the process's user and system CPU so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ffmpegCPU is the median CPU (user and system) of runs of ffmpeg's CLI
// decoding the frame at 1 s and nothing else: the floor.
func ffmpegCPU(b *testing.B, path string, runs int, more ...string) time.Duration {
	var cpu []time.Duration
	for range runs {
		args := slices.Concat([]string{"-v", "error"}, more, []string{"-ss", "1", "-i", path, "-frames:v", "1", "-f", "null", "-"})
		cmd := exec.Command("ffmpeg", args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
		}
		cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	slices.Sort(cpu)
	return cpu[len(cpu)/2]
}

// BenchmarkPosterFrame: CPU per poster frame (the frame at 1 s of a 1080p
// video, decoded and converted to RGB) against ffmpeg's CLI decoding the
// same frame (`ffmpeg -ss 1 -i F -frames:v 1 -f null -`, its default
// threads and with -threads 1). Run under the bench lock:
//
//	go run ./bench lock -- go test -run '^$' -bench PosterFrame -benchtime 10x ./service/internal/videodecode
func BenchmarkPosterFrame(b *testing.B) {
	needFFmpeg(b)
	dir := b.TempDir()
	for _, c := range posterClips {
		c.size, c.seconds, c.filter = "1920x1080", 1.5, "fps=30,noise=alls=8:allf=t"
		path := c.make(b, dir)
		info, f := frameAt(b, path, 1)
		for _, all := range []bool{false, true} {
			name := c.name
			if all {
				name += "/all"
			}
			lim := DefaultLimits()
			lim.DecodeAll = all
			b.Run(name, func(b *testing.B) {
				start := cpuTime(b)
				for b.Loop() {
					if _, err := Decode(info, f, lim); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N)/1e6, "cpu-ms/op")
				if !all {
					b.ReportMetric(float64(ffmpegCPU(b, path, 5))/1e6, "ffmpeg-cpu-ms")
					b.ReportMetric(float64(ffmpegCPU(b, path, 5, "-threads", "1"))/1e6, "ffmpeg-1t-cpu-ms")
				}
				b.ReportMetric(float64(len(f.Packets)), "packets")
			})
		}
		// The decode alone: the frame's planes copied out, not converted.
		b.Run(c.name+"/yuv", func(b *testing.B) {
			start := cpuTime(b)
			for b.Loop() {
				if _, err := decodePlanes(info, f, DefaultLimits()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
