package thumb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Fuzzing. `go test` runs the seed corpus (testdata/fuzz-seeds, damaged
// copies of it, and testdata/fuzz/<Target> where crashers are kept); a real
// run is, one at a time, holding the bench lock:
//
//	flock /tmp/thumbd-bench.lock go test -run '^$' -fuzz '^FuzzThumbnail$' -fuzztime 10m -parallel 1 ./service/internal/thumb
//
// Go's fuzzer instruments Go code only: inside libvips (C) mutation is
// blind, which is why the seeds cover every format variant we can make.

// fuzzMaxInput is the largest input FuzzThumbnail tries: bigger ones only
// slow the fuzzer down (the service's own body limit is 20 MiB).
const fuzzMaxInput = 256 << 10

// fuzzEngine has tighter limits than the service's defaults so that a
// mutated header declaring a large but allowed size costs milliseconds.
var fuzzEngine = New(thumbjob.Config{MaxPixels: 4_000_000, MaxFrames: 64, MaxSide: 4096})

func FuzzThumbnail(f *testing.F) {
	names, seeds := readSeeds(f)
	for i, name := range names {
		src := seeds[name]
		f.Add(src, int16(40+i%3*20), int16(30), uint8(i), uint8(i/4), uint8(i/3), int8(50+i))
		if strings.HasPrefix(name, "ok-") {
			for _, b := range hostile.Truncations(src) {
				f.Add(b, int16(32), int16(0), uint8(i+1), uint8(0), uint8(i), int8(80))
			}
			for _, b := range hostile.BitFlips(src, uint64(i), 2, 3) {
				f.Add(b, int16(0), int16(24), uint8(i+2), uint8(i), uint8(i+1), int8(30))
			}
		}
	}
	f.Add(hostile.Random(512, 1), int16(16), int16(16), uint8(0), uint8(0), uint8(0), int8(80))
	f.Fuzz(func(t *testing.T, src []byte, w, h int16, fit, gravity, format uint8, q int8) {
		if len(src) > fuzzMaxInput {
			t.Skip()
		}
		// Sides stay small (mostly), so that encoding does not dominate
		// each run; 0 means "follow the source's aspect ratio". The
		// parser's own fuzz target (params) covers query text.
		fits, gravities, formats := thumbjob.Fits(), thumbjob.Gravities(), imagefmt.Outputs()
		o := thumbjob.Options{Width: abs(int(w)) % 300, Height: abs(int(h)) % 300, Fit: fits[int(fit)%len(fits)],
			Gravity: gravities[int(gravity)%len(gravities)], Format: formats[int(format)%len(formats)], Quality: 1 + abs(int(q))%100}
		if o.Width == 0 && o.Height == 0 {
			o.Width = 32
		}
		img, err := fuzzEngine.Thumbnail(context.Background(), src, o)
		if err != nil {
			for _, known := range []error{thumbjob.ErrUnsupportedFormat, thumbjob.ErrUndecodable, thumbjob.ErrTooManyPixels, thumbjob.ErrTooManyFrames} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("unclassified error: %v", err)
		}
		checkThumbnail(t, img, o)
	})
}

func abs(n int) int { return max(n, -n) }
