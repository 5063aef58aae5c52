package sources

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// The EXIF a photo recipe gets reads back with a real EXIF tool as a
// camera's: exiftool's -validate finds no error nor warning, the byte
// order is Intel's, the orientation 1, and IFD1's thumbnail is a 160x120
// JPEG of the photo; the photo's own bytes are kept around the segment.
func TestEXIFThumbnailReadsBackWithExiftool(t *testing.T) {
	exiftool, err := exec.LookPath("exiftool")
	if err != nil {
		t.Fatal("no exiftool: install libimage-exiftool-perl (scripts/deps.sh dev)")
	}
	r, err := Lookup("small")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Make(r)
	if err != nil {
		t.Fatal(err)
	}
	r.EXIF = true
	withEXIF, err := Make(r)
	if err != nil {
		t.Fatal(err)
	}
	app1 := 2 + 2 + int(binary.BigEndian.Uint16(withEXIF[4:])) // SOI, then the segment
	if !bytes.HasPrefix(withEXIF[2:], []byte{0xff, 0xe1}) || !bytes.Equal(append(withEXIF[:2:2], withEXIF[app1:]...), plain) {
		t.Errorf("not the photo with one APP1 segment after SOI")
	}
	path := filepath.Join(t.TempDir(), "small-exif.jpg")
	if err := os.WriteFile(path, withEXIF, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exiftool, "-j", "-n", "-validate", "-warning", "-error", "-ExifByteOrder", "-Orientation", "-ThumbnailLength", path).Output()
	if err != nil {
		t.Fatalf("exiftool: %v", err)
	}
	var tags []map[string]any
	if err := json.Unmarshal(out, &tags); err != nil || len(tags) != 1 {
		t.Fatalf("exiftool -j: %s (%v)", out, err)
	}
	delete(tags[0], "SourceFile")
	want := map[string]any{"Validate": "0 0 0", "ExifByteOrder": "II", "Orientation": 1.0, "ThumbnailLength": tags[0]["ThumbnailLength"]}
	if !reflect.DeepEqual(tags[0], want) {
		t.Errorf("exiftool reads %v, want %v", tags[0], want)
	}
	thumb, err := exec.Command(exiftool, "-b", "-ThumbnailImage", path).Output()
	if err != nil {
		t.Fatalf("exiftool -ThumbnailImage: %v", err)
	}
	if n, _ := tags[0]["ThumbnailLength"].(float64); int(n) != len(thumb) {
		t.Errorf("ThumbnailLength %v, but %d bytes extracted", tags[0]["ThumbnailLength"], len(thumb))
	}
	small, err := jpeg.Decode(bytes.NewReader(thumb))
	if err != nil || small.Bounds().Dx() != 160 || small.Bounds().Dy() != 120 {
		t.Fatalf("the thumbnail: %v %v, want a 160x120 JPEG", small.Bounds(), err)
	}
	photo, err := jpeg.Decode(bytes.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	// The thumbnail is the photo: every 16x16 block of it within a few
	// levels of the photo's 40x40 block (box filter, JPEG quality 75).
	for y := 0; y < 120; y += 16 {
		for x := 0; x < 160; x += 16 {
			a, b := meanRGB(small, x, y, 16), meanRGB(photo, x*400/160, y*300/120, 40)
			for c := range a {
				if d := a[c] - b[c]; d > 6 || d < -6 {
					t.Fatalf("block at %d,%d: channel %d is %.1f in the thumbnail, %.1f in the photo", x, y, c, a[c], b[c])
				}
			}
		}
	}
}

// meanRGB is the mean colour, 0..255, of img's n x n block at x0, y0.
func meanRGB(img image.Image, x0, y0, n int) [3]float64 {
	var s [3]float64
	for y := y0; y < y0+n; y++ {
		for x := x0; x < x0+n; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			s[0], s[1], s[2] = s[0]+float64(r>>8), s[1]+float64(g>>8), s[2]+float64(b>>8)
		}
	}
	for c := range s {
		s[c] /= float64(n * n)
	}
	return s
}

// photo12-exif is photo12's pixels with a camera's EXIF.
func TestPhoto12EXIFIsPhoto12WithEXIF(t *testing.T) {
	plain, err := Lookup("photo12")
	if err != nil {
		t.Fatal(err)
	}
	exif, err := Lookup("photo12-exif")
	if err != nil {
		t.Fatal(err)
	}
	if exif.File() != "photo12-exif.jpg" || !exif.EXIF || plain.EXIF {
		t.Fatalf("%+v", exif)
	}
	exif.Name, exif.EXIF = plain.Name, false
	if !reflect.DeepEqual(exif, plain) {
		t.Errorf("photo12-exif's recipe is not photo12's: %+v", exif)
	}
}
