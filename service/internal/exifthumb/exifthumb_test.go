package exifthumb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The files exiftool wrote (testdata/make.sh): the sizes, offsets and
// lengths are what `exiftool -ThumbnailOffset -ThumbnailLength` prints
// for them, the orientation what `exiftool -n -Orientation` prints.
func TestReadsWhatExiftoolWrote(t *testing.T) {
	for _, c := range []struct {
		file                string
		w, h, orientation   int
		thumbOffset, length int // in the file, as exiftool reports them
	}{
		{"exif-4x3.jpg", 160, 120, 1, 184, 3162},
		{"exif-4x3-intel.jpg", 160, 120, 1, 204, 3162},
		{"exif-4x3-orientation-6.jpg", 160, 120, 6, 196, 3162},
		{"exif-4x3-red.jpg", 160, 120, 1, 184, 1138},
		{"exif-16x9.jpg", 160, 90, 1, 184, 2586},
		{"exif-16x9-letterboxed.jpg", 160, 120, 1, 184, 3179},
	} {
		src := testdata(t, c.file)
		got, err := Read(src)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if got.Width != c.w || got.Height != c.h || got.Orientation != c.orientation || len(got.JPEG) != c.length {
			t.Errorf("%s: %dx%d orientation %d, %d bytes; want %dx%d orientation %d, %d bytes",
				c.file, got.Width, got.Height, got.Orientation, len(got.JPEG), c.w, c.h, c.orientation, c.length)
		}
		if at := c.thumbOffset; !bytes.Equal(got.JPEG, src[at:at+c.length]) {
			t.Errorf("%s: the thumbnail is not the bytes at offset %d", c.file, at)
		}
		if !bytes.HasPrefix(got.JPEG, []byte{0xff, 0xd8}) || !bytes.HasSuffix(got.JPEG, []byte{0xff, 0xd9}) {
			t.Errorf("%s: the thumbnail is not one whole JPEG", c.file)
		}
	}
}

func TestNoThumbnail(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join("..", "thumb", "testdata", "sources", "small.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	exif := testdata(t, "exif-4x3.jpg")
	noIFD1 := bytes.Clone(exif)
	put32(noIFD1, ifdEnd(t, noIFD1, 0)-4, 0) // IFD0's next-IFD link
	uncompressed := bytes.Clone(exif)
	put16(uncompressed, entry(t, uncompressed, 1, tagCompression)+8, 1)
	for name, src := range map[string][]byte{
		"no EXIF":             plain,
		"PNG":                 []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"),
		"empty":               nil,
		"SOI alone":           {0xff, 0xd8},
		"no IFD1":             noIFD1,
		"uncompressed (TIFF)": uncompressed,
	} {
		if _, err := Read(src); !errors.Is(err, ErrNone) {
			t.Errorf("%s: %v, want ErrNone", name, err)
		}
	}
	// IFD0's orientation does not depend on a thumbnail: Read only
	// answers when there is one, so that is ErrNone as well.
	if got, err := Read(noIFD1); err == nil || got.JPEG != nil {
		t.Errorf("no IFD1: %+v", got)
	}
}

// Every malformed structure is an error other than ErrNone, and never a
// panic or a read outside the source.
func TestHostileEXIF(t *testing.T) {
	base := testdata(t, "exif-4x3.jpg")
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(base)) }
	tiff := tiffStart(t, base)
	for _, c := range []struct {
		name string
		src  []byte
	}{
		{"byte order XX", mutate(func(b []byte) []byte { b[tiff], b[tiff+1] = 'X', 'X'; return b })},
		{"no magic 42", mutate(func(b []byte) []byte { put16(b, tiff+2, 43); return b })},
		{"IFD0 past the end", mutate(func(b []byte) []byte { put32(b, tiff+4, 0xfffffff0); return b })},
		{"IFD0 inside the header", mutate(func(b []byte) []byte { put32(b, tiff+4, 2); return b })},
		{"IFD0 of 65535 entries", mutate(func(b []byte) []byte { put16(b, tiff+int(get32(b, tiff+4)), 0xffff); return b })},
		{"IFD1 is IFD0", mutate(func(b []byte) []byte { put32(b, ifdEnd(t, b, 0)-4, get32(b, tiff+4)); return b })},
		{"IFD1 past the end", mutate(func(b []byte) []byte { put32(b, ifdEnd(t, b, 0)-4, 0x7fffffff); return b })},
		{"thumbnail offset wraps", mutate(func(b []byte) []byte {
			put32(b, entry(t, b, 1, tagJPEGOffset)+8, 0xfffffff0)
			put32(b, entry(t, b, 1, tagJPEGLength)+8, 0x20)
			return b
		})},
		{"thumbnail longer than the EXIF", mutate(func(b []byte) []byte { put32(b, entry(t, b, 1, tagJPEGLength)+8, 70000); return b })},
		{"thumbnail of 0 bytes", mutate(func(b []byte) []byte { put32(b, entry(t, b, 1, tagJPEGLength)+8, 0); return b })},
		{"thumbnail offset at the TIFF header", mutate(func(b []byte) []byte { put32(b, entry(t, b, 1, tagJPEGOffset)+8, 0); return b })},
		{"thumbnail offset of two values", mutate(func(b []byte) []byte { put32(b, entry(t, b, 1, tagJPEGOffset)+4, 2); return b })},
		{"thumbnail length as a RATIONAL", mutate(func(b []byte) []byte { put16(b, entry(t, b, 1, tagJPEGLength)+2, 5); return b })},
		{"thumbnail of 65000x65000", mutate(func(b []byte) []byte {
			sof := tiff + int(get32(b, entry(t, b, 1, tagJPEGOffset)+8)) + sofAt(t, b[tiff+int(get32(b, entry(t, b, 1, tagJPEGOffset)+8)):])
			put16(b, sof+5, 65000)
			put16(b, sof+7, 65000)
			return b
		})},
		{"APP1 longer than the file", mutate(func(b []byte) []byte { return b[:tiff+100] })},
		{"segment length 1", append([]byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x01}, make([]byte, 64)...)},
		{"no marker", append([]byte{0xff, 0xd8, 0x00, 0xe0}, make([]byte, 64)...)},
		{"segments without end", append([]byte{0xff, 0xd8}, bytes.Repeat([]byte{0xff, 0xfe, 0x00, 0x02}, 2*maxSegments)...)},
	} {
		got, err := Read(c.src)
		if err == nil || errors.Is(err, ErrNone) {
			t.Errorf("%s: %+v, %v; want a malformed-EXIF error", c.name, got, err)
		}
	}
	for _, o := range []uint16{0, 9, 0xffff} {
		b := bytes.Clone(testdata(t, "exif-4x3-orientation-6.jpg"))
		put16(b, entry(t, b, 0, tagOrientation)+8, o)
		if _, err := Read(b); err == nil || errors.Is(err, ErrNone) {
			t.Errorf("orientation %d: %v, want an error", o, err)
		}
	}
}

// Every prefix of a file with a thumbnail either reads the whole thumbnail
// or fails: a cut never yields part of one.
func TestTruncated(t *testing.T) {
	src := testdata(t, "exif-4x3.jpg")
	whole, err := Read(src)
	if err != nil {
		t.Fatal(err)
	}
	end := 184 + len(whole.JPEG) // where exiftool says it ends
	for n := range len(src) {
		got, err := Read(src[:n])
		switch {
		case n < end && err == nil:
			t.Fatalf("cut at %d of %d: read a thumbnail of %d bytes", n, len(src), len(got.JPEG))
		case err == nil && !bytes.Equal(got.JPEG, whole.JPEG):
			t.Fatalf("cut at %d: another thumbnail", n)
		}
	}
}

func FuzzRead(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("testdata", "*.jpg"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, n := range names {
		f.Add(testdata(f, filepath.Base(n)))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<20 {
			return
		}
		got, err := Read(src)
		if err != nil {
			return
		}
		if got.Width < 1 || got.Height < 1 || got.Width > MaxSide || got.Height > MaxSide || got.Orientation < 1 || got.Orientation > 8 {
			t.Fatalf("%dx%d orientation %d", got.Width, got.Height, got.Orientation)
		}
		if len(got.JPEG) > len(src) || !bytes.Contains(src, got.JPEG) || !bytes.HasPrefix(got.JPEG, []byte{0xff, 0xd8}) {
			t.Fatalf("a thumbnail of %d bytes that is not a JPEG inside the source", len(got.JPEG))
		}
	})
}

// The helpers below find fields of the (big-endian) test files to mutate.

func tiffStart(t testing.TB, src []byte) int {
	t.Helper()
	i := bytes.Index(src, []byte("Exif\x00\x00MM"))
	if i < 0 {
		i = bytes.Index(src, []byte("Exif\x00\x00II"))
	}
	if i < 0 {
		t.Fatal("no EXIF in the test file")
	}
	return i + 6
}

func order(src []byte, tiff int) binary.ByteOrder {
	if src[tiff] == 'I' {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

func get32(b []byte, at int) uint32 { return binary.BigEndian.Uint32(b[at:]) }
func put32(b []byte, at int, v uint32) {
	binary.BigEndian.PutUint32(b[at:], v)
}
func put16(b []byte, at int, v uint16) { binary.BigEndian.PutUint16(b[at:], v) }

// ifdAt is the file position of IFD n (0 or 1): its entry count.
func ifdAt(t testing.TB, b []byte, n int) int {
	t.Helper()
	tiff := tiffStart(t, b)
	o := order(b, tiff)
	at := tiff + int(o.Uint32(b[tiff+4:]))
	for range n {
		at = tiff + int(o.Uint32(b[at+2+12*int(o.Uint16(b[at:])):]))
	}
	return at
}

// ifdEnd is the file position just past IFD n's next-IFD link.
func ifdEnd(t testing.TB, b []byte, n int) int {
	at := ifdAt(t, b, n)
	return at + 2 + 12*int(order(b, tiffStart(t, b)).Uint16(b[at:])) + 4
}

// entry is the file position of tag's entry in IFD n.
func entry(t testing.TB, b []byte, n int, tag uint16) int {
	t.Helper()
	at := ifdAt(t, b, n)
	o := order(b, tiffStart(t, b))
	for i := range int(o.Uint16(b[at:])) {
		if e := at + 2 + 12*i; o.Uint16(b[e:]) == tag {
			return e
		}
	}
	t.Fatalf("no tag %#04x in IFD%d", tag, n)
	return 0
}

// sofAt is the position of a JPEG's SOF0 marker.
func sofAt(t testing.TB, jpg []byte) int {
	t.Helper()
	i := bytes.Index(jpg, []byte{0xff, 0xc0})
	if i < 0 {
		t.Fatal("no SOF0 in the thumbnail")
	}
	return i
}

// BenchmarkRead is what looking for a thumbnail costs a source: one with
// (exiftool's) and one without (the golden tests' small source: every
// segment before the first scan is walked).
//
//	go test -run '^$' -bench Read ./service/internal/exifthumb
func BenchmarkRead(b *testing.B) {
	plain, err := os.ReadFile(filepath.Join("..", "thumb", "testdata", "sources", "small.jpg"))
	if err != nil {
		b.Fatal(err)
	}
	for name, src := range map[string][]byte{"with": testdata(b, "exif-4x3.jpg"), "without": plain} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_, _ = Read(src)
			}
		})
	}
}
