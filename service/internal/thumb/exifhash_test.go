package thumb

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbhashtest"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// exifSource is one of exifthumb's test files: JPEGs to which exiftool
// gave an EXIF thumbnail (service/internal/exifthumb/testdata/make.sh).
func exifSource(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "exifthumb", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func infoHash(t *testing.T, src []byte) string {
	t.Helper()
	info, err := testEngine.Info(context.Background(), src, thumbjob.InfoJob{ThumbHash: true})
	if err != nil {
		t.Fatal(err)
	}
	return info.ThumbHash
}

// fullHash is the ThumbHash of the source decoded: thumbHash never takes
// the EXIF thumbnail of a source whose interpretation is not srgb.
func fullHash(t *testing.T, src []byte) string {
	t.Helper()
	h, err := probe(src)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := testEngine.thumbHash(src, imagefmt.JPEG, h, "not srgb")
	if err != nil {
		t.Fatal(err)
	}
	return hash
}

// exifHash is the ThumbHash exifThumbHash makes of src, and whether it did.
func exifHash(t *testing.T, src []byte) (string, bool) {
	t.Helper()
	h, d, err := describe(src)
	if err != nil {
		t.Fatal(err)
	}
	return testEngine.exifThumbHash(hashing(t, src, h), d.space)
}

// hashing is the ThumbHash's job on src, planned, nothing decoded.
func hashing(t *testing.T, src []byte, h header) *making {
	t.Helper()
	h.format = imagefmt.JPEG
	p, err := testEngine.hashPlan(h, imagefmt.JPEG)
	if err != nil {
		t.Fatal(err)
	}
	m := &making{e: testEngine, src: src, h: h, p: p, o: p.Options(), spec: imagefmt.Spec{Alpha: true}}
	t.Cleanup(m.close)
	return m
}

// hashDistance is how far apart two ThumbHashes look to a client: each
// decoded by the published decoder (32 pixels on the long side), the
// mean absolute difference of their pixels' R, G and B, 0..1, and whether
// they have the same size.
func hashDistance(t *testing.T, a, b string) (float64, bool) {
	t.Helper()
	decode := func(s string) (int, int, []byte) {
		hash, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(hash) < 5 {
			t.Fatalf("ThumbHash %q: %v", s, err)
		}
		return thumbhashtest.RGBA(hash)
	}
	aw, ah, apx := decode(a)
	bw, bh, bpx := decode(b)
	if aw != bw || ah != bh {
		return math.Inf(1), false
	}
	var sum float64
	for i := range apx {
		if i%4 != 3 {
			sum += math.Abs(float64(apx[i])-float64(bpx[i])) / 255
		}
	}
	return sum / float64(aw*ah*3), true
}

// maxHashDistance is how far the EXIF thumbnail's hash may be from the
// full decode's: 2 % of the range on average, about one step of the
// hash's 6-bit average luminance (1.6 %) plus the thumbnail's own JPEG
// compression. Measured: 0.35 % for the 4:3 files, 1.35 % for the 16:9 one
// (its 160x90 thumbnail rounds the hash's height differently); a thumbnail
// left unturned (orientation 6) is 7.9 % away, a red one 33 %.
const maxHashDistance = 0.02

// The EXIF thumbnail gives the ThumbHash, and it is the full decode's but
// for a little: same size, the same colours within maxHashDistance.
func TestThumbHashFromTheEXIFThumbnail(t *testing.T) {
	for _, c := range []struct {
		file     string
		portrait bool
	}{
		{"exif-4x3.jpg", false},
		{"exif-4x3-intel.jpg", false},
		{"exif-16x9.jpg", false},
		{"exif-4x3-orientation-6.jpg", true},
	} {
		src := exifSource(t, c.file)
		fromThumb, ok := exifHash(t, src)
		if !ok {
			t.Errorf("%s: the EXIF thumbnail was not used", c.file)
			continue
		}
		if got := infoHash(t, src); got != fromThumb {
			t.Errorf("%s: Info's ThumbHash %s is not the EXIF thumbnail's %s", c.file, got, fromThumb)
		}
		full := fullHash(t, src)
		d, sameSize := hashDistance(t, fromThumb, full)
		t.Logf("%s: EXIF thumbnail %s, full decode %s: distance %.4f", c.file, fromThumb, full, d)
		if !sameSize || d > maxHashDistance {
			t.Errorf("%s: the EXIF thumbnail's ThumbHash is %.3f from the full decode's (same size %t), more than %.3f", c.file, d, sameSize, maxHashDistance)
		}
		hash, _ := base64.StdEncoding.DecodeString(fromThumb)
		if portrait := thumbhashtest.AspectRatio(hash) < 1; portrait != c.portrait {
			t.Errorf("%s: portrait %t, want %t: the orientation was not applied", c.file, portrait, c.portrait)
		}
	}
}

// The tests above can tell which picture the hash came from: a flat red
// thumbnail of a photo gives a red hash, far from the photo's.
func TestEXIFThumbnailIsUsed(t *testing.T) {
	src := exifSource(t, "exif-4x3-red.jpg")
	got := infoHash(t, src)
	hash, _ := base64.StdEncoding.DecodeString(got)
	if avg := thumbhashtest.AverageRGBA(hash); avg[0] < 0.8 || avg[1] > 0.2 || avg[2] > 0.2 {
		t.Errorf("a red EXIF thumbnail gave %s, average %.2f", got, avg)
	}
	if d, _ := hashDistance(t, got, fullHash(t, src)); d < 5*maxHashDistance {
		t.Errorf("the red thumbnail's hash is %.3f from the photo's: the comparisons cannot tell them apart", d)
	}
}

// A thumbnail whose aspect is not the image's (a 16:9 photo's 160x120
// letterboxed thumbnail), or that the source's colours do not match, is
// ignored: the hash is the full decode's, byte for byte.
func TestEXIFThumbnailIgnored(t *testing.T) {
	letterboxed := exifSource(t, "exif-16x9-letterboxed.jpg")
	if _, ok := exifHash(t, letterboxed); ok {
		t.Errorf("a letterboxed 160x120 thumbnail of a 16:9 photo was used")
	}
	if got, want := infoHash(t, letterboxed), fullHash(t, letterboxed); got != want {
		t.Errorf("letterboxed: %s, want the full decode's %s", got, want)
	}
	red := exifSource(t, "exif-4x3-red.jpg")
	h, err := probe(red)
	if err != nil {
		t.Fatal(err)
	}
	for _, space := range []string{"cmyk", "b-w"} {
		if _, ok := testEngine.exifThumbHash(hashing(t, red, h), space); ok {
			t.Errorf("a %s source's thumbnail was used", space)
		}
	}
}

func TestSameAspect(t *testing.T) {
	for _, c := range []struct {
		w, h, iw, ih int
		want         bool
	}{
		{160, 120, 4032, 3024, true}, // 4:3, the DCF size
		{160, 107, 6000, 4000, true}, // 3:2, rounded (0.3 %)
		{160, 90, 1920, 1080, true},  // 16:9
		{120, 160, 3024, 4032, true},
		{160, 120, 1920, 1080, false}, // a 16:9 photo, letterboxed into 4:3
		{160, 112, 6000, 4000, false}, // 3:2 padded to 16-pixel blocks
		{160, 120, 3024, 4032, false}, // turned
		{160, 119, 4032, 3024, true},  // 0.8 %
		{160, 118, 4032, 3024, false}, // 1.7 %
	} {
		if got := sameAspect(c.w, c.h, c.iw, c.ih); got != c.want {
			t.Errorf("%dx%d for %dx%d: %t, want %t", c.w, c.h, c.iw, c.ih, got, c.want)
		}
	}
}

// A source whose EXIF thumbnail is broken, cut, lying or out of bounds
// gets the full decode's hash: never an error, never the broken pixels.
func TestEXIFThumbnailBrokenFallsBack(t *testing.T) {
	base := exifSource(t, "exif-4x3.jpg")
	tiff := bytes.Index(base, []byte("Exif\x00\x00MM")) + 6
	const thumbAt = 184 // the thumbnail's offset in the file, as exiftool prints it
	if !bytes.HasPrefix(base[thumbAt:], []byte{0xff, 0xd8}) {
		t.Fatal("the test file changed: no thumbnail where expected")
	}
	ifd1Entry := func(b []byte, tag uint16) int {
		ifd0 := tiff + int(binary.BigEndian.Uint32(b[tiff+4:]))
		ifd1 := tiff + int(binary.BigEndian.Uint32(b[ifd0+2+12*int(binary.BigEndian.Uint16(b[ifd0:])):]))
		for i := range int(binary.BigEndian.Uint16(b[ifd1:])) {
			if at := ifd1 + 2 + 12*i; binary.BigEndian.Uint16(b[at:]) == tag {
				return at
			}
		}
		t.Fatalf("no tag %#04x in IFD1", tag)
		return 0
	}
	sof := thumbAt + bytes.Index(base[thumbAt:], []byte{0xff, 0xc0})
	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(base)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		src  []byte
	}{
		{"thumbnail cut in half", mutate(func(b []byte) { binary.BigEndian.PutUint32(b[ifd1Entry(b, 0x0202)+8:], 1581) })},
		{"thumbnail's scan overwritten", mutate(func(b []byte) { copy(b[thumbAt+1000:], bytes.Repeat([]byte{0xff, 0x00, 0xff, 0xd9}, 100)) })},
		{"thumbnail's SOF says 320x240", mutate(func(b []byte) {
			binary.BigEndian.PutUint16(b[sof+5:], 240)
			binary.BigEndian.PutUint16(b[sof+7:], 320)
		})},
		{"thumbnail's SOF says 80x60, smaller than the hash", mutate(func(b []byte) {
			binary.BigEndian.PutUint16(b[sof+5:], 60)
			binary.BigEndian.PutUint16(b[sof+7:], 80)
		})},
		{"thumbnail offset past the EXIF", mutate(func(b []byte) { binary.BigEndian.PutUint32(b[ifd1Entry(b, 0x0201)+8:], 0xfffffff0) })},
		{"IFD1 past the EXIF", mutate(func(b []byte) {
			ifd0 := tiff + int(binary.BigEndian.Uint32(b[tiff+4:]))
			binary.BigEndian.PutUint32(b[ifd0+2+12*int(binary.BigEndian.Uint16(b[ifd0:])):], 0x7fffffff)
		})},
		{"thumbnail not a JPEG", mutate(func(b []byte) { b[thumbAt+1] = 0 })},
	} {
		if _, ok := exifHash(t, c.src); ok {
			t.Errorf("%s: the thumbnail was used", c.name)
		}
		if got, want := infoHash(t, c.src), fullHash(t, base); got != want {
			t.Errorf("%s: %s, want the full decode's %s", c.name, got, want)
		}
	}
}

// With a whole EXIF thumbnail, /info does not decode the source's pixels:
// a source cut in its scan still has its header described and a ThumbHash
// (from the thumbnail); its thumbnail request is the 422 (TestInfoLimits
// holds the 422 for a source with no EXIF thumbnail).
func TestEXIFThumbnailOfACutSource(t *testing.T) {
	src := exifSource(t, "exif-4x3.jpg")
	cut := src[:len(src)*3/4]
	want, ok := exifHash(t, src)
	if got := infoHash(t, cut); !ok || got != want {
		t.Errorf("cut in its scan: %s, want the thumbnail's %s", got, want)
	}
	if _, err := testEngine.Thumbnail(context.Background(), cut, thumbjob.Options{Width: 64, Height: 64, Fit: thumbjob.FitCover, Format: imagefmt.PNG}); !errors.Is(err, thumbjob.ErrUndecodable) {
		t.Errorf("thumbnail of the cut source: %v, want %v", err, thumbjob.ErrUndecodable)
	}
}

// FuzzInfoThumbHash is /info with a ThumbHash on damaged EXIF thumbnails:
// the seeds are exifthumb's files, cut and with bits flipped. Any outcome
// but a classified error or a well-formed hash fails.
//
//	flock /tmp/thumbd-bench.lock go test -run '^$' -fuzz '^FuzzInfoThumbHash$' -fuzztime 5m -parallel 1 ./service/internal/thumb
func FuzzInfoThumbHash(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("..", "exifthumb", "testdata", "*.jpg"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for i, name := range names {
		src := exifSource(f, filepath.Base(name))
		f.Add(src)
		for _, b := range hostile.Truncations(src) {
			f.Add(b)
		}
		for _, b := range hostile.BitFlips(src[:400], uint64(i), 4, 2) { // the EXIF's structure
			f.Add(append(b, src[400:]...))
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > fuzzMaxInput {
			t.Skip()
		}
		info, err := fuzzEngine.Info(context.Background(), src, thumbjob.InfoJob{ThumbHash: true})
		if err != nil {
			for _, known := range []error{thumbjob.ErrUnsupportedFormat, thumbjob.ErrUndecodable, thumbjob.ErrTooManyPixels, thumbjob.ErrTooManyFrames} {
				if errors.Is(err, known) {
					return
				}
			}
			t.Fatalf("unclassified error: %v", err)
		}
		hash, err := base64.StdEncoding.DecodeString(info.ThumbHash)
		if err != nil || len(hash) < 5 {
			t.Fatalf("ThumbHash %q: %v", info.ThumbHash, err)
		}
		if portrait, want := thumbhashtest.AspectRatio(hash) < 1, info.Height > info.Width; portrait != want && thumbhashtest.AspectRatio(hash) != 1 {
			t.Fatalf("a %dx%d image with a ThumbHash of aspect %.2f", info.Width, info.Height, thumbhashtest.AspectRatio(hash))
		}
	})
}
