package thumb

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The studies behind the engine's fixed choices (docs/engine.md, "Settings
// measured"): what the second header read costs, and which PNG level and
// row filter to ship. They run on the sources BenchmarkEngine runs on
// ($THUMBD_ENGINE_SOURCES) and report medians, like it; the libvips thread
// count is $THUMBD_ENGINE_THREADS (TestMain).

// namedSource is a source image and its file name without the extension.
type namedSource struct {
	name string
	src  []byte
}

// engineSources reads every *.jpg of $THUMBD_ENGINE_SOURCES (default
// testdata/sources), in name order.
func engineSources(b *testing.B) []namedSource {
	b.Helper()
	dir := cmp.Or(os.Getenv("THUMBD_ENGINE_SOURCES"), filepath.Join("testdata", "sources"))
	// JPEG photos, and the same photos in the other input formats (the
	// input formats' bench, docs/adr/0007-input-formats.md): named by
	// their extension.
	var names []string
	for _, ext := range []string{"jpg", "heic", "avif", "tif", "jxl", "bmp"} {
		found, err := filepath.Glob(filepath.Join(dir, "*."+ext))
		if err != nil {
			b.Fatal(err)
		}
		names = append(names, found...)
	}
	if len(names) == 0 {
		b.Fatalf("no source in %s", dir)
	}
	srcs := make([]namedSource, 0, len(names))
	for _, path := range names { // Glob sorts
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(path)
		if strings.HasSuffix(name, ".jpg") {
			name = strings.TrimSuffix(name, ".jpg") // the JPEG photos keep their names
		}
		srcs = append(srcs, namedSource{name, src})
	}
	return srcs
}

// timeMedian runs f once per b.Loop iteration and reports the median in
// milliseconds (the mean that ns/op shows is skewed by the odd slow run).
func timeMedian(b *testing.B, f func() error) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e6, "median-ms")
}

// BenchmarkProbe is the header read thumbd makes before libvips'
// thumbnail operation reads the header again: what reading it once would
// save per thumbnail.
//
//	go test -run '^$' -bench Probe -benchtime 200x ./service/internal/thumb
func BenchmarkProbe(b *testing.B) {
	for _, s := range engineSources(b) {
		b.Run(s.name, func(b *testing.B) {
			timeMedian(b, func() error { _, err := probe(s.src); return err })
		})
	}
}

// BenchmarkPNGSettings makes the engine's 256x256 cover PNG of each source
// with every zlib level and row filter worth shipping, the whole job timed
// as BenchmarkEngine times it, and reports the median and the bytes.
//
//	go test -run '^$' -bench PNGSettings -benchtime 40x ./service/internal/thumb
func BenchmarkPNGSettings(b *testing.B) {
	filters := []struct {
		name   string
		filter vips.PngFilter
	}{{"none", vips.PngFilterNone}, {"sub", vips.PngFilterSub}, {"up", vips.PngFilterUo}, {"paeth", vips.PngFilterPaeth}, {"all", vips.PngFilterAll}}
	for _, s := range engineSources(b) {
		for _, level := range []int{1, 2, 3, 6} {
			for _, f := range filters {
				params := &vips.PngExportParams{StripMetadata: true, Compression: level, Filter: f.filter}
				b.Run(fmt.Sprintf("%s/level=%d/filter=%s", s.name, level, f.name), func(b *testing.B) {
					var out []byte
					timeMedian(b, func() (err error) {
						out, err = thumbnailPNG(s.src, coverPNG, params)
						return err
					})
					b.ReportMetric(float64(len(out)), "out-bytes")
				})
			}
		}
	}
}

// thumbnailPNG is Engine.Thumbnail for one PNG frame with the given
// encoder settings in place of the shipped ones: the same plan and steps
// up to the encoder, so that only the encoder differs between settings.
func thumbnailPNG(src []byte, o thumbjob.Options, params *vips.PngExportParams) ([]byte, error) {
	m, err := testEngine.pixels(src, o)
	if err != nil {
		return nil, err
	}
	defer m.close()
	buf, _, err := m.img.ExportPng(params)
	return buf, err
}

// The study's stand-in for the engine makes what the engine makes at the
// shipped settings, so that its other rows compare with BenchmarkEngine.
func TestThumbnailPNGIsTheEnginesAtShippedSettings(t *testing.T) {
	src := source(t, "small.jpg")
	want, err := testEngine.Thumbnail(context.Background(), src, coverPNG)
	if err != nil {
		t.Fatal(err)
	}
	got, err := thumbnailPNG(src, coverPNG, &vips.PngExportParams{StripMetadata: true, Compression: pngCompression, Filter: pngFilter})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want.Bytes) {
		t.Errorf("the study's PNG (%d bytes) differs from the engine's (%d bytes)", len(got), len(want.Bytes))
	}
}
