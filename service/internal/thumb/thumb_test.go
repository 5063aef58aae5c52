package thumb

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	_ "image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"
	"github.com/thumbd/thumbd/internal/imagediff"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

var update = flag.Bool("update", false, "rewrite the golden thumbnails in testdata/golden")

// testEngine is shared: libvips starts once per process.
var testEngine *Engine

func TestMain(m *testing.M) {
	flag.Parse()
	if path := os.Getenv("THUMBD_TEST_BLOCKED_LOADER"); path != "" {
		os.Exit(blockedLoaderChild(path))
	}
	if mode := os.Getenv("THUMBD_HEAP_CHILD"); mode != "" {
		os.Exit(heapChild(mode)) // before Start tunes this process's heap
	}
	// One libvips thread, as the bench's engine comparison runs sharp; the
	// thread-count study (docs/engine.md) sets $THUMBD_ENGINE_THREADS.
	threads := 1
	if v := os.Getenv("THUMBD_ENGINE_THREADS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "THUMBD_ENGINE_THREADS=%q: want a count of threads\n", v)
			os.Exit(2)
		}
		threads = n
	}
	testEngine = New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: threads, AVIFEffort: 4,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	testEngine.Start()
	os.Exit(m.Run())
}

func source(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sources", name))
	if err != nil {
		t.Fatalf("%v (go run ./bench sources makes these)", err)
	}
	return b
}

// Golden thumbnails: each case's output is compared with testdata/golden
// by mean absolute difference per channel, since libvips builds (8.14,
// 8.16 with SIMD) differ by a level or two. -update rewrites them; a
// mismatch is written to testdata/failed for a look.
func TestGolden(t *testing.T) {
	sources := map[string][]byte{"small.jpg": source(t, "small.jpg"), "large.jpg": source(t, "large.jpg"),
		"anim.gif": animation(t, 120, 80, 6, 0)}
	cases := []struct {
		name, src string
		opts      thumbjob.Options
	}{
		{"small-cover-centre", "small.jpg", thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}},
		{"small-cover-attention", "small.jpg", thumbjob.Options{Width: 128, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityAttention, Format: imagefmt.PNG}},
		{"large-cover-entropy", "large.jpg", thumbjob.Options{Width: 200, Height: 100, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityEntropy, Format: imagefmt.PNG}},
		{"large-contain", "large.jpg", thumbjob.Options{Width: 200, Height: 200, Fit: thumbjob.FitContain, Format: imagefmt.PNG}},
		{"large-fill", "large.jpg", thumbjob.Options{Width: 160, Height: 90, Fit: thumbjob.FitFill, Format: imagefmt.PNG}},
		{"large-inside", "large.jpg", thumbjob.Options{Width: 300, Height: 300, Fit: thumbjob.FitInside, Format: imagefmt.PNG}},
		{"small-jpeg", "small.jpg", thumbjob.Options{Width: 120, Height: 90, Fit: thumbjob.FitCover, Format: imagefmt.JPEG, Quality: 90}},
		{"small-webp", "small.jpg", thumbjob.Options{Width: 120, Height: 90, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 80}},
		{"small-avif", "small.jpg", thumbjob.Options{Width: 120, Height: 90, Fit: thumbjob.FitCover, Format: imagefmt.AVIF, Quality: 80}},
		// Every frame, one under the other (the golden is a film strip).
		{"anim-cover-webp", "anim.gif", thumbjob.Options{Width: 48, Height: 48, Fit: thumbjob.FitCover, Format: imagefmt.WebP, Quality: 90, Animated: true}},
		{"anim-contain-webp", "anim.gif", thumbjob.Options{Width: 48, Height: 48, Fit: thumbjob.FitContain, Format: imagefmt.WebP, Quality: 90, Animated: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img, err := testEngine.Thumbnail(context.Background(), sources[tc.src], tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := decodeAll(t, img.Bytes)
			path := filepath.Join("testdata", "golden", tc.name+".png")
			if *update {
				writePNG(t, path, got)
				return
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			defer f.Close()
			want, err := png.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			if got.Bounds().Size() != want.Bounds().Size() {
				t.Fatalf("size %v, golden %v", got.Bounds().Size(), want.Bounds().Size())
			}
			if d := imagediff.MeanAbs(got, want); d > 2.5 {
				writePNG(t, filepath.Join("testdata", "failed", tc.name+".png"), got)
				t.Fatalf("mean difference %.2f per channel from the golden (tolerance 2.5); output in testdata/failed", d)
			}
		})
	}
}

// decodeAll decodes every frame of an output, one under the other: with
// Go's decoders for PNG and JPEG, with libvips (to lossless PNG) for the
// formats Go's standard library does not read: in process for WebP and GIF,
// Debian's vips command for AVIF (no thumbd build reads AVIF).
func decodeAll(t *testing.T, b []byte) image.Image {
	t.Helper()
	spec, _ := imagefmt.Identify(b)
	switch spec.Format {
	case imagefmt.PNG, imagefmt.JPEG:
	case imagefmt.AVIF:
		lossless, err := imagediff.VipsToPNG(b)
		if err != nil {
			t.Fatal(err)
		}
		b = lossless
	default:
		strip, _, err := readBack(t, b).ExportPng(&vips.PngExportParams{Compression: 1})
		if err != nil {
			t.Fatal(err)
		}
		b = strip
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEngineErrors(t *testing.T) {
	small := source(t, "small.jpg")
	opts := thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
	strict := New(thumbjob.Config{MaxPixels: 400*300 - 1, MaxFrames: 1, MaxSide: 4096})
	for _, tc := range []struct {
		name string
		e    *Engine
		src  []byte
		want error
	}{
		{"empty", testEngine, nil, thumbjob.ErrUnsupportedFormat},
		{"text", testEngine, []byte("plain text"), thumbjob.ErrUnsupportedFormat},
		{"jpeg magic only", testEngine, small[:3], thumbjob.ErrUndecodable},
		{"truncated", testEngine, small[:len(small)*2/3], thumbjob.ErrUndecodable},
		{"one pixel over", strict, small, thumbjob.ErrTooManyPixels},
	} {
		if _, err := tc.e.Thumbnail(context.Background(), tc.src, opts); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// Corrupted bytes in the middle (the header intact) must not crash and
	// must give either a thumbnail or a clean error.
	bad := bytes.Clone(small)
	for i := 600; i < len(bad); i += 97 {
		bad[i] ^= 0x5a
	}
	if _, err := testEngine.Thumbnail(context.Background(), bad, opts); err != nil && !errors.Is(err, thumbjob.ErrUndecodable) {
		t.Errorf("bit-flipped: %v", err)
	}
}

// Thumbnails are made concurrently in the service: run the engine from many
// goroutines under the race detector.
func TestEngineConcurrent(t *testing.T) {
	small := source(t, "small.jpg")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			img, err := testEngine.Thumbnail(context.Background(), small, thumbjob.Options{Width: 32 + i, Height: 32, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 50})
			if err == nil && img.Width != 32+i {
				err = errors.New("wrong width")
			}
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

var coverPNG = thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}

// BenchmarkEngine is the engine alone, one thumbnail at a time: the
// reference the service's /thumbnail latency is compared with, and what the
// bench's engine comparison (`bench engine`) runs per libvips build. Its
// sub-benchmarks are BenchmarkEngine/<source>/<format>, one per *.jpg of
// $THUMBD_ENGINE_SOURCES (default testdata/sources) and per format of the
// comma-separated $THUMBD_ENGINE_FORMATS (default png): a 256x256 cover at
// the format's default quality (the q the service uses when none is asked:
// JPEG and WebP 80, AVIF 58). Reports the median time and the output bytes.
// With $THUMBD_ENGINE_OUT, a directory, it also writes there what the
// figures are of, <source>.<format>, and <source>.reference.png, the same
// thumbnail lossless and untimed, which the bench scores the lossy ones
// against (SSIM).
//
//	go test -run '^$' -bench Engine -benchtime 200x ./service/internal/thumb
func BenchmarkEngine(b *testing.B) {
	out := os.Getenv("THUMBD_ENGINE_OUT")
	for _, s := range engineSources(b) {
		name, src := s.name, s.src
		if out != "" {
			ref, err := testEngine.Thumbnail(context.Background(), src, coverPNG)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, name+".reference.png"), ref.Bytes, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for _, o := range engineFormats(b) {
			f := string(o.Format)
			b.Run(name+"/"+f, func(b *testing.B) {
				var img thumbjob.Image
				timeMedian(b, func() (err error) {
					img, err = testEngine.Thumbnail(context.Background(), src, o)
					return err
				})
				b.ReportMetric(float64(len(img.Bytes)), "out-bytes")
				if out != "" {
					if err := os.WriteFile(filepath.Join(out, name+"."+f), img.Bytes, 0o644); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// engineFormats is the 256x256 cover of each format of
// $THUMBD_ENGINE_FORMATS (default png) at the format's default quality.
func engineFormats(b *testing.B) []thumbjob.Options {
	b.Helper()
	var opts []thumbjob.Options
	for _, f := range strings.Split(cmp.Or(os.Getenv("THUMBD_ENGINE_FORMATS"), "png"), ",") {
		spec, ok := imagefmt.Lookup(imagefmt.Format(f))
		if !ok || !spec.Output {
			b.Fatalf("THUMBD_ENGINE_FORMATS: %q is no output format (%v)", f, imagefmt.Outputs())
		}
		o := coverPNG
		o.Format, o.Quality = spec.Format, spec.Quality
		opts = append(opts, o)
	}
	return opts
}

// BenchmarkEngineParallel runs as many thumbnails at once as the service's
// default concurrency (GOMAXPROCS): the throughput /thumbnail is compared
// with under load. Sources and formats as BenchmarkEngine's.
func BenchmarkEngineParallel(b *testing.B) {
	for _, s := range engineSources(b) {
		for _, o := range engineFormats(b) {
			b.Run(s.name+"/"+string(o.Format), func(b *testing.B) {
				b.SetParallelism(1) // GOMAXPROCS goroutines
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := testEngine.Thumbnail(context.Background(), s.src, o); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "thumbs/s")
				b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "jobs")
			})
		}
	}
}

// A new output format is a row of the imagefmt table plus an exporter
// here: every output row has one, and it makes that format.
func TestEveryOutputFormatHasAnExporter(t *testing.T) {
	small := source(t, "small.jpg")
	for _, f := range imagefmt.Outputs() {
		if _, ok := exporters[f]; !ok {
			t.Errorf("no exporter for %s", f)
			continue
		}
		o := thumbjob.Options{Width: 40, Height: 30, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: f, Quality: 80}
		img, err := testEngine.Thumbnail(context.Background(), small, o)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checkThumbnail(t, img, o)
	}
	for f := range exporters {
		if spec, ok := imagefmt.Lookup(f); !ok || !spec.Output {
			t.Errorf("exporter for %s, which the table does not list as an output", f)
		}
	}
}

// Both JPEG shrink modes give the same picture of a photo to within the
// golden tolerance (they differ on fine regular patterns, docs/engine.md),
// for every fit, and the quality mode leaves libvips its own choice.
func TestJPEGShrinkModes(t *testing.T) {
	quality := New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, JPEGShrink: thumbjob.JPEGShrinkQuality})
	src := source(t, "large.jpg")
	for _, fit := range []thumbjob.Fit{thumbjob.FitCover, thumbjob.FitContain, thumbjob.FitFill, thumbjob.FitInside} {
		o := thumbjob.Options{Width: 200, Height: 150, Fit: fit, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
		if p, _ := plan.Make(plan.Source{Format: imagefmt.JPEG, Width: 1920, Height: 1280, Orientation: 1, Frames: 1}, o, testEngine.limits()); p.Shrink < 4 {
			t.Fatalf("%s: shrink %d, the fast path is not exercised", fit, p.Shrink)
		}
		var imgs [2]image.Image
		for i, e := range []*Engine{testEngine, quality} {
			out, err := e.Thumbnail(context.Background(), src, o)
			if err != nil {
				t.Fatalf("%s: %v", fit, err)
			}
			checkThumbnail(t, out, o)
			if imgs[i], _, err = image.Decode(bytes.NewReader(out.Bytes)); err != nil {
				t.Fatal(err)
			}
		}
		if imgs[0].Bounds() != imgs[1].Bounds() {
			t.Fatalf("%s: sizes %v and %v", fit, imgs[0].Bounds(), imgs[1].Bounds())
		}
		if d := imagediff.MeanAbs(imgs[0], imgs[1]); d > 2.5 {
			t.Errorf("%s: fast and quality differ by %.2f per channel", fit, d)
		}
	}
}

// pixels is a thumbnail's image before its encoder, as the engine makes
// it (the caller closes it).
func (e *Engine) pixels(src []byte, o thumbjob.Options) (*making, error) {
	m, err := e.planned(looked(src), o)
	if err != nil {
		return nil, err
	}
	if err := m.until(plan.StepEncode, time.Now()); err != nil {
		m.close()
		return nil, err
	}
	return m, nil
}
