package main

import (
	"bytes"
	"fmt"
	"github.com/thumbd/thumbd/service/internal/memplan"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// peakCase is one job whose peak memory is measured against its estimate.
type peakCase struct {
	name  string
	src   func(t *testing.T) []byte
	query string
}

// TestEstimateCoversMeasuredPeaks is the estimate's calibration, kept as a
// test: each job runs alone in a fresh thumbd (this test binary as the
// real program), and its peak resident memory over the idle process
// (VmHWM, reset through clear_refs just before) must stay under the
// estimate admission holds for it. Run against the images' libvips too
// (scripts/test.sh); THUMBD_PEAKS_TABLE=1 prints docs/hardening.md's table.
// The race detector's shadow memory would count against the jobs, so it is
// skipped there.
func TestEstimateCoversMeasuredPeaks(t *testing.T) {
	if raceEnabled {
		t.Skip("peaks under the race detector include its shadow memory")
	}
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("no /proc/self/clear_refs: peak RSS cannot be reset")
	}
	cases := []peakCase{
		{"12 MP JPEG", photo12, "w=256&h=256"},
		{"12 MP progressive JPEG", progressive12, "w=256&h=256"},
		{"12 MP progressive JPEG", progressive12, "w=1024&format=avif"},
		{"12 MP JPEG", photo12, "w=256&h=256&format=avif"},
		{"12 MP JPEG", photo12, "w=1024&format=jpeg"},
		{"12 MP JPEG", photo12, "w=4096&format=webp"},
		{"12 MP JPEG", photo12, "w=4096&h=4096&fit=fill&format=png"},
		{"12 MP JPEG, quality shrink", photo12, "w=256&h=256&format=webp"},
		{"7000x5000 RGB PNG", pngOf(7000, 5000, false), "w=256&h=256"},
		{"7000x5000 RGB PNG", pngOf(7000, 5000, false), "w=4096&format=webp"},
		{"7000x5000 RGBA PNG", pngOf(7000, 5000, true), "w=256&h=256&format=avif"},
		{"7000x5000 RGBA PNG", pngOf(7000, 5000, true), "w=4096&format=webp"},
		{"7000x5000 RGBA PNG", pngOf(7000, 5000, true), "w=2048&h=2048&fit=contain&format=avif"},
		{"12 MP HEIC", converted(photo12, "out.heic", "heif-enc", "-q", "60", "in.jpg", "-o", "out.heic"), "w=256&h=256&format=webp"},
		// Its embedded 512x384 thumbnail covers the box: decoded instead.
		{"12 MP HEIC, 512-px thumbnail", converted(photo12, "out.heic", "heif-enc", "-q", "60", "-t", "512", "in.jpg", "-o", "out.heic"), "w=256&h=256&format=webp"},
		{"12 MP AVIF", converted(photo12, "out.avif", "heif-enc", "-A", "-q", "60", "-p", "speed=9", "in.jpg", "-o", "out.avif"), "w=256&h=256&format=webp"},
		{"12 MP 16-bit TIFF", converted(photo12, "out.tif", "sh", "-c", "vips cast in.jpg w.v ushort && vips linear w.v w2.v 257 0 && vips cast w2.v w3.v ushort && vips copy w3.v out.tif[compression=lzw] --interpretation rgb16"), "w=256&h=256&format=webp"},
		{"12 MP tiled TIFF", converted(photo12, "out.tif", "vips", "tiffsave", "in.jpg", "out.tif", "--compression", "deflate", "--tile"), "w=1024&format=jpeg"},
		// TIFF layouts (libvips holds a window of the image, not all of
		// it): strips of 128 rows (tiffsave's default), one strip of the
		// whole image (libtiff reads it compressed whole; a YCbCr one is
		// decoded whole, twice, one in separate planes whole and a plane
		// more), tiles of 1024x1024 (two rows of them).
		{"12 MP TIFF, LZW strips", converted(photo12, "out.tif", "vips", "tiffsave", "in.jpg", "out.tif", "--compression", "lzw"), "w=256&h=256&format=webp"},
		{"12 MP TIFF, one LZW strip", converted(photo12, "out.tif", "sh", "-c", "vips tiffsave in.jpg s.tif --compression lzw && tiffcp -r -1 s.tif out.tif"), "w=256&h=256&format=webp"},
		{"12 MP TIFF, one JPEG strip", converted(photo12, "out.tif", "sh", "-c", "vips tiffsave in.jpg s.tif --compression jpeg && tiffcp -r -1 s.tif out.tif"), "w=256&h=256&format=webp"},
		{"12 MP TIFF, one LZW strip in planes", converted(photo12, "out.tif", "sh", "-c", "vips tiffsave in.jpg s.tif --compression lzw && tiffcp -p separate -r -1 s.tif out.tif"), "w=256&h=256&format=webp"},
		{"12 MP 16-bit TIFF, one LZW strip", converted(photo12, "out.tif", "sh", "-c", "vips cast in.jpg w.v ushort && vips linear w.v w2.v 257 0 && vips cast w2.v w3.v ushort && vips copy w3.v s.tif[compression=lzw] --interpretation rgb16 && tiffcp -r -1 s.tif out.tif"), "w=256&h=256&format=webp"},
		{"12 MP TIFF, 1024x1024 tiles", converted(photo12, "out.tif", "vips", "tiffsave", "in.jpg", "out.tif", "--compression", "deflate", "--tile", "--tile-width", "1024", "--tile-height", "1024"), "w=256&h=256&format=webp"},
		{"12 MP 16-bit TIFF, 1024x1024 tiles", converted(photo12, "out.tif", "sh", "-c", "vips cast in.jpg w.v ushort && vips linear w.v w2.v 257 0 && vips cast w2.v w3.v ushort && vips copy w3.v out.tif[compression=deflate,tile,tile-width=1024,tile-height=1024] --interpretation rgb16"), "w=256&h=256&format=webp"},
		{"12 MP JPEG XL", converted(photo12, "out.jxl", "sh", "-c", "vips copy in.jpg in.png && cjxl in.png out.jxl -d 1 -e 3 --quiet"), "w=256&h=256&format=webp"},
		// 24 bits a pixel: 6 MP is 18 MB, under the default body limit.
		{"6 MP BMP", converted(photo12, "out.bmp", "convert", "in.jpg", "-resize", "3000x2000!", "BMP3:out.bmp"), "w=256&h=256&format=webp"},
		{"largest default animation", largestAnimation, "w=256&h=256&format=webp&animated=true"},
		{"largest default animation", largestAnimation, "w=256&h=256&format=png"},
		// The transforms (issue 36): a crop shrinks on load (the first) or
		// decodes the whole source (the second), as trim does; the filters
		// hold windows that grow with sigma.
		{"12 MP JPEG", photo12, "w=256&h=256&crop=0.1,0.1,0.8,0.8"},
		{"12 MP JPEG", photo12, "w=1024&h=1024&crop=1000,1000,1024,1024&format=webp"},
		{"12 MP JPEG", photo12, "w=256&h=256&trim=10"},
		{"12 MP JPEG", photo12, "w=1024&blur=100&format=jpeg"},
		{"12 MP JPEG", photo12, "w=2048&sharpen=10&format=webp"},
		{"12 MP JPEG", photo12, "w=1024&rotate=90&flip=hv&pixelate=256&pad=1024"},
		{"3000x2000 RGBA PNG", pngOf(3000, 2000, true), "w=1024&h=1024&fit=inside&enlarge=false&extend=true&trim=10&blur=20"},
		// Videos (issue 47): the default poster frame (a keyframe), and a
		// frame late in its group of pictures (every frame others refer to
		// decoded before it); 10-bit, 4K, AV1 through dav1d.
		{"1080p H.264 MP4, 2 s", videoOf("1920x1080", 2, "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-pix_fmt", "yuv420p"), "w=256&h=256&format=webp"},
		{"1080p H.264 MP4, 2 s", videoOf("1920x1080", 2, "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-pix_fmt", "yuv420p"), "t=1.9&w=1024&format=jpeg"},
		{"1080p 10-bit HEVC MP4, 1 s", videoOf("1920x1080", 1, "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le", "-x265-params", "log-level=error"), "t=0.9&w=256&h=256"},
		{"4K VP9 MP4, 1 s", videoOf("3840x2160", 1, "-c:v", "libvpx-vp9", "-b:v", "4M", "-deadline", "realtime", "-cpu-used", "8"), "w=256&h=256&format=webp"},
		{"1080p AV1 MP4, 1 s", videoOf("1920x1080", 1, "-c:v", "libaom-av1", "-b:v", "2M", "-cpu-used", "8", "-row-mt", "1"), "t=0.5&w=512&format=avif"},
		// A preview: every frame held until the animation is made.
		{"1080p H.264 MP4, 2 s", videoOf("1920x1080", 2, "-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-pix_fmt", "yuv420p"), "frames=8&w=512"},
	}
	var table strings.Builder
	fmt.Fprintln(&table, "| source (bytes) | query | measured peak | less 2 x source | estimate | estimate / job |\n|---|---|---|---|---|---|")
	for _, c := range cases {
		src := c.src(t)
		env := []string{"THUMBD_CONCURRENCY=1", "MALLOC_ARENA_MAX=2", "THUMBD_MAX_FILTER_SPAN=0"} // the filters measured whole
		if strings.Contains(c.name, "quality") {
			env = append(env, "THUMBD_JPEG_SHRINK=quality")
		}
		child := startChild(t, env...)
		post := func(q string, body []byte) int {
			resp, err := http.Post(child.addr+"/thumbnail?"+q, "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("%s %s: %d %s", c.name, q, resp.StatusCode, b)
			}
			return len(b)
		}
		small, _ := os.ReadFile("internal/thumb/testdata/sources/small.jpg")
		post("w=64&h=64", small) // codecs loaded, pools made: the idle process a job starts from
		pid := child.cmd.Process.Pid
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			t.Skipf("resetting the peak: %v", err)
		}
		before := statusKB(t, pid, "VmRSS")
		post(c.query, src)
		peak := (statusKB(t, pid, "VmHWM") - before) << 10
		child.srv.Stop(0)

		cfg := testConfig(t)
		cfg.JPEGShrink, cfg.FilterSpan = thumbShrink(env), 0 // as the child's
		q, err := params.UploadQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		req, err := cfg.rules().Upload(q)
		if err != nil {
			t.Fatal(err)
		}
		// The source itself is in Go's heap, held by the source budget, not
		// the job's: up to twice its length while io.ReadAll grows it.
		look, _ := memcost.Look(src)
		est := pipeline.New(cfg.pipeline(), pipeline.Parts{}).Cost(look, thumbjob.Job{Options: req.Options})
		job := peak - 2*int64(len(src))
		fmt.Fprintf(&table, "| %s (%s) | `%s` | %s | %s | %s | %.2f |\n", c.name, memplan.MiB(int64(len(src))), c.query, memplan.MiB(peak), memplan.MiB(job), memplan.MiB(est), float64(est)/float64(job))
		if job > est {
			t.Errorf("%s %s: measured peak %s less twice the source, %s, over the estimate %s", c.name, c.query, memplan.MiB(peak), memplan.MiB(job), memplan.MiB(est))
		}
	}
	if os.Getenv("THUMBD_PEAKS_TABLE") != "" {
		fmt.Print(table.String())
	}
	t.Log("\n" + table.String())
}

func thumbShrink(env []string) thumbjob.JPEGShrink {
	for _, e := range env {
		if e == "THUMBD_JPEG_SHRINK=quality" {
			return thumbjob.JPEGShrinkQuality
		}
	}
	return thumbjob.JPEGShrinkFast
}

func statusKB(t *testing.T, pid int, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, key)
	return 0
}

// photo12 is a 4032x3024 baseline JPEG (a phone's 12 MP photo) made from
// the golden tests' large source.
func photo12(t *testing.T) []byte { return jpeg12(t, false) }

// progressive12 is the same photo as a progressive JPEG.
func progressive12(t *testing.T) []byte { return jpeg12(t, true) }

func jpeg12(t *testing.T, progressive bool) []byte {
	src, err := os.ReadFile("internal/thumb/testdata/sources/large.jpg")
	if err != nil {
		t.Fatal(err)
	}
	img, err := vips.NewImageFromBuffer(src)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if err := img.ResizeWithVScale(4032.0/1920, 3024.0/1280, vips.KernelLanczos3); err != nil {
		t.Fatal(err)
	}
	p := vips.NewJpegExportParams()
	p.Quality, p.Interlace = 90, progressive
	b, _, err := img.ExportJpeg(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pngOf is a w x h PNG of one colour: a few hundred KB that decode to
// w x h x 3 (or 4) bytes, as PNG has no shrink-on-load.
// converted is src written as in.jpg and turned by a command (Debian's
// encoders: heif-enc, cjxl, vips, ImageMagick's convert) into out.
func converted(src func(t *testing.T) []byte, out string, cmd ...string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		if _, err := exec.LookPath(cmd[0]); err != nil {
			t.Fatalf("%s: %v (scripts/deps.sh dev installs it)", cmd[0], err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "in.jpg"), src(t), 0o600); err != nil {
			t.Fatal(err)
		}
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Dir = dir
		if msg, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, msg)
		}
		b, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// videoOf is seconds of testsrc2 at size (25 frames a second), encoded
// by Debian's ffmpeg with the encoder's args into an MP4.
func videoOf(size string, seconds float64, args ...string) func(t *testing.T) []byte {
	cmd := append([]string{"ffmpeg", "-v", "error", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%s:rate=25:duration=%g", size, seconds)}, args...)
	return converted(photo12, "out.mp4", append(cmd, "out.mp4")...)
}

func pngOf(w, h int, alpha bool) func(t *testing.T) []byte {
	return func(t *testing.T) []byte {
		img := image.NewNRGBA(image.Rect(0, 0, w, h))
		a := uint8(255)
		if alpha {
			a = 200
		}
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = 40, 90, 160, a
		}
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
}

// largestAnimation is the largest animation the default limits let
// through whole: 256 frames (THUMBD_MAX_FRAMES) of 395x395, 39.9 MP in all
// (THUMBD_MAX_PIXELS counts every frame decoded), each frame different.
func largestAnimation(t *testing.T) []byte {
	const side, frames = 395, 256
	pal := color.Palette{}
	for i := range 256 {
		pal = append(pal, color.RGBA{uint8(i), uint8(255 - i), uint8(i * 7), 255})
	}
	g := &gif.GIF{}
	for f := range frames {
		img := image.NewPaletted(image.Rect(0, 0, side, side), pal)
		for y := range side {
			for x := range side {
				img.Pix[y*side+x] = uint8((x + y + f*3) / 8)
			}
		}
		g.Image = append(g.Image, img)
		g.Delay = append(g.Delay, 4)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
