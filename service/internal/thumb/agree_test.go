package thumb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The two readers of a source's header, side by side: the look (memcost,
// in Go), which prices a job, and libvips' loaders, which decode it. A
// file that libvips opens while the look refuses it, or opens larger than
// the look read it, is a file the engine would decode at a price it did
// not pay, had it not the cross-check (agrees): a failing case here. The
// look may refuse a file libvips opens only by thumbd's own rules
// (memcost.ErrNotServed).
//
// The corpus is FuzzLook's (memcost's seeds, headers and crashers), the
// engine's seeds with damaged copies, the BMP decoder's files and the
// hostile set. `go test` runs it; a real run, one at a time:
//
//	flock /tmp/thumbd-bench.lock go test -run '^$' -fuzz '^FuzzLookAgainstLibvips$' -fuzztime 10m -parallel 1 ./service/internal/thumb
//
// scripts/test.sh runs it for a bounded time in CI.
func FuzzLookAgainstLibvips(f *testing.F) {
	for _, b := range differentialCorpus(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > fuzzMaxInput {
			t.Skip()
		}
		if err := differ(src); err != nil {
			t.Fatal(err)
		}
	})
}

// differ is nil when the two readers agree on src as the engine needs
// them to, else what differs.
func differ(src []byte) error {
	look, lookErr := memcost.Look(src)
	if look.Format == "" {
		return nil // no input format: the engine refuses it before libvips (checkSource)
	}
	dec, err := goDecoded(look, thumbjob.Frame{}, fuzzEngine.cfg.MaxPixels)
	if err != nil {
		return nil // a BMP, ICO or sequence refused in Go: libvips never sees it
	}
	v, err := probe(dec)
	if err != nil {
		return nil // libvips refuses it: nothing is decoded
	}
	switch {
	case errors.Is(lookErr, memcost.ErrNotServed):
		return nil
	case lookErr != nil:
		return fmt.Errorf("libvips opens this %s as %dx%d (%d bands, %d bytes a sample); the look refused it: %v", look.Format, v.width, v.height, v.bands, v.sample, lookErr)
	}
	if err := agrees(v, look.Header, look.Format); err != nil {
		return fmt.Errorf("%v (look %+v)", err, look.Header)
	}
	return nil
}

// differentialCorpus is every file the differential target starts from.
func differentialCorpus(t testing.TB) [][]byte {
	var out [][]byte
	names, seeds := readSeeds(t)
	for i, name := range names {
		out = append(out, seeds[name])
		if strings.HasPrefix(name, "ok-") {
			for _, b := range hostile.Truncations(seeds[name]) {
				out = append(out, b)
			}
			out = append(out, hostile.BitFlips(seeds[name], uint64(i), 4, 2)...)
		}
	}
	for _, b := range hostile.Malformed() {
		out = append(out, b)
	}
	for _, glob := range []string{"../memcost/testdata/headers/*", "../bmp/testdata/*", "testdata/sources/*"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && len(b) <= fuzzMaxInput {
				out = append(out, b)
			}
		}
	}
	for _, dir := range []string{"../memcost/testdata/fuzz/FuzzLook", "testdata/fuzz/FuzzLookAgainstLibvips"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range files {
			if b, ok := corpusEntry(t, p); ok {
				out = append(out, b)
			}
		}
	}
	return out
}

// corpusEntry reads a file of Go's fuzz corpus format ("go test fuzz v1"
// then one []byte("...") line), as the fuzzer writes it.
func corpusEntry(t testing.TB, path string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s), true
}

// TestEngineRefusesWhatTheLookCannotPrice: a source of an input format
// whose header the look could not read is refused before libvips reads
// it, in a thumbnail and a description, whatever libvips would make of it;
// and one libvips reads larger than the look (a look given here that
// under-reads the file) is refused before any pixel is decoded.
func TestEngineRefusesWhatTheLookCannotPrice(t *testing.T) {
	small := source(t, "small.jpg")
	thumbnail := thumbjob.Job{Options: thumbjob.Options{Width: 32, Height: 32, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}}
	info := thumbjob.Job{Info: &thumbjob.InfoJob{}}
	unread := thumbjob.Source{Bytes: small, Format: imagefmt.JPEG, Unread: "a test's"}
	smaller := looked(small)
	smaller.Header.Width /= 2
	fewer := looked(small)
	fewer.Header.Bands = 1
	for name, in := range map[string]thumbjob.Source{"unread": unread, "read smaller": smaller, "fewer bands": fewer} {
		for _, job := range []thumbjob.Job{thumbnail, info} {
			if _, err := testEngine.Run(context.Background(), in, job); !errors.Is(err, thumbjob.ErrUndecodable) {
				t.Errorf("%s, %s: %v, want %v", name, job.Normalised(), err, thumbjob.ErrUndecodable)
			}
		}
	}
	// The look's own header past the pixel limit is refused as such,
	// though libvips' is within it.
	big := looked(small)
	big.Header.Width, big.Header.Height = 100_000, 100_000
	if _, err := testEngine.Run(context.Background(), big, thumbnail); !errors.Is(err, thumbjob.ErrTooManyPixels) {
		t.Errorf("a look past the pixel limit: %v, want %v", err, thumbjob.ErrTooManyPixels)
	}
}

// TestMalformedSameAnswerForEveryOutput: every damaged copy of every seed
// (cut at each point hostile.Truncations picks, bits flipped) and every
// hostile malformed file gets one answer whatever the output format: a
// thumbnail in each, or the same engine error in each, never an error
// outside the engine's own (a 5xx).
func TestMalformedSameAnswerForEveryOutput(t *testing.T) {
	names, seeds := readSeeds(t)
	var srcs [][]byte
	for i, name := range names {
		if strings.HasPrefix(name, "ok-") {
			for _, b := range hostile.Truncations(seeds[name]) {
				srcs = append(srcs, b)
			}
			srcs = append(srcs, hostile.BitFlips(seeds[name], uint64(i), 2, 3)...)
		}
	}
	for _, b := range hostile.Malformed() {
		srcs = append(srcs, b)
	}
	outputs := []imagefmt.Format{imagefmt.PNG, imagefmt.JPEG, imagefmt.WebP, imagefmt.AVIF}
	for i, src := range srcs {
		var first *thumbjob.Error
		for j, f := range outputs {
			_, err := fuzzEngine.Thumbnail(context.Background(), src, thumbjob.Options{Width: 24, Height: 24, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: f, Quality: 50})
			var e *thumbjob.Error
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("source %d, %s: %v: not an engine error (a 500)", i, f, err)
			}
			if j == 0 {
				first = e
			} else if e != first {
				t.Errorf("source %d (%s...): %s gives %v, %s gave %v", i, look(src), f, e, outputs[0], first)
			}
		}
	}
	t.Logf("%d damaged files, %d outputs each", len(srcs), len(outputs))
}

// look names a source for a failure: its sniffed format and header.
func look(src []byte) string {
	s, err := memcost.Look(src)
	return fmt.Sprintf("%s %dx%d %v", s.Format, s.Header.Width, s.Header.Height, err)
}

// BenchmarkCrossCheck is what the decoders issue added to every job before
// its decode: the look's header checked (checkLooked) and held to
// libvips' (agrees). libvips' header read itself (BenchmarkProbe) and the
// look (memcost's BenchmarkLook) were there before; the engine's whole job
// is BenchmarkEngine, the denominator of the 2 % budget.
//
//	go test -run '^$' -bench 'CrossCheck|Engine/large/png' -benchtime 2000x ./service/internal/thumb
func BenchmarkCrossCheck(b *testing.B) {
	for _, s := range engineSources(b) {
		look, err := memcost.Look(s.src)
		if err != nil {
			b.Fatal(err)
		}
		h, err := probe(s.src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				if err := checkLooked(look); err != nil {
					b.Fatal(err)
				}
				if err := agrees(h, look.Header, look.Format); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
