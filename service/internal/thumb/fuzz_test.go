package thumb

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/hostile"
)

// Fuzzing. `go test` runs the seed corpus (testdata/fuzz-seeds, damaged
// copies of it, and testdata/fuzz/<Target> where crashers are kept); a real
// run is, one at a time, holding the bench lock:
//
//	flock /tmp/thumbd-bench.lock go test -run '^$' -fuzz '^FuzzThumbnail$' -fuzztime 10m -parallel 1 ./service/internal/thumb
//	flock /tmp/thumbd-bench.lock go test -run '^$' -fuzz '^FuzzParseOptions$' -fuzztime 10m -parallel 1 ./service/internal/thumb
//
// Go's fuzzer instruments Go code only: inside libvips (C) mutation is
// blind, which is why the seeds cover every format variant we can make.

// fuzzMaxInput is the largest input FuzzThumbnail tries: bigger ones only
// slow the fuzzer down (the service's own body limit is 20 MiB).
const fuzzMaxInput = 256 << 10

// fuzzEngine has tighter limits than the service's defaults so that a
// mutated header declaring a large but allowed size costs milliseconds.
var fuzzEngine = New(Config{MaxPixels: 4_000_000, MaxFrames: 64, MaxSide: 4096})

var (
	fits      = []string{"cover", "contain", "fill", "inside"}
	gravities = []string{"centre", "attention", "entropy"}
	formats   = []string{"png", "jpeg", "webp"}
)

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
		// Options go through the parser, as in the service. Sides stay
		// small (mostly), so that encoding does not dominate each run; 0
		// means the parameter is absent.
		p := params{"fit": fits[int(fit)%len(fits)], "gravity": gravities[int(gravity)%len(gravities)],
			"format": formats[int(format)%len(formats)], "q": strconv.Itoa(int(q))}
		if w != 0 {
			p["w"] = strconv.Itoa(int(w) % 300)
		}
		if h != 0 {
			p["h"] = strconv.Itoa(int(h) % 300)
		}
		o, err := ParseOptions(p, 4096)
		if err != nil {
			return // FuzzParseOptions covers refusals
		}
		img, err := fuzzEngine.Thumbnail(src, o)
		if err != nil {
			for _, known := range []error{ErrUnsupportedFormat, ErrUndecodable, ErrTooManyPixels, ErrTooManyFrames} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("unclassified error: %v", err)
		}
		checkThumbnail(t, img, o)
	})
}

func FuzzParseOptions(f *testing.F) {
	for _, q := range []string{
		"", "w=100", "h=4096&fit=inside&gravity=entropy&format=webp&q=1", "w=0", "w=-1", "w=4097",
		"w=99999999999999999999", "w=1e3", "w=0x10", "w=+5", "w= 5", "w=5&w=abc", "w=abc&w=5",
		"fit=Cover", "gravity=center", "format=jpg", "q=100.0", "q=", "w=%zz", "w=%EF%BC%95",
		"w=\u0665", "fit=cover%00", "format=png;q=3", "w=1&h=1&fit=contain&format=jpeg&q=100",
		"w=256&h=256&fit=cover&gravity=attention", "q=-0", "w=007", "h=4096&w=4096", "&&&=&w",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p := firstValues(v)
		o, err := ParseOptions(p, 4096)
		if err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error %v is not a ParamError", raw, err)
			}
			if _, ok := p.Lookup(pe.Param); !ok {
				t.Fatalf("%q: error names %q, which is absent", raw, pe.Param)
			}
			return
		}
		if o.Width < 0 || o.Width > 4096 || o.Height < 0 || o.Height > 4096 || (o.Width == 0 && o.Height == 0) {
			t.Fatalf("%q: box %dx%d", raw, o.Width, o.Height)
		}
		if o.Quality < 1 || o.Quality > 100 {
			t.Fatalf("%q: quality %d", raw, o.Quality)
		}
		if !contains(fits, string(o.Fit)) || !contains(gravities, string(o.Gravity)) || !contains(formats, string(o.Format)) {
			t.Fatalf("%q: %+v", raw, o)
		}
		// The normalised text parses back to the same thumbnail: what the
		// ETag is derived from names one output.
		back := params{"fit": string(o.Fit), "gravity": string(o.Gravity), "format": string(o.Format), "q": strconv.Itoa(o.Quality)}
		if o.Width > 0 {
			back["w"] = strconv.Itoa(o.Width)
		}
		if o.Height > 0 {
			back["h"] = strconv.Itoa(o.Height)
		}
		o2, err := ParseOptions(back, 4096)
		if err != nil || o2.Normalised() != o.Normalised() {
			t.Fatalf("%q: %+v reparsed as %+v (%v)", raw, o, o2, err)
		}
	})
}

// firstValues is the service's rule: the first value of a repeated key counts.
func firstValues(v url.Values) params {
	p := params{}
	for k, vs := range v {
		p[k] = vs[0]
	}
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
