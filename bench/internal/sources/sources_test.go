package sources

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/gif"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sources the golden tests were made from: small and large must come
// out byte for byte the same (with Debian's libvips 8.14.1, which made them).
func TestSmallAndLargeAreTheGoldenTestsSources(t *testing.T) {
	for _, name := range []string{"small", "large"} {
		want, err := os.ReadFile(filepath.Join("..", "..", "..", "service", "internal", "thumb", "testdata", "sources", name+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Make(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, differ from the golden tests' %d-byte source", name, len(got), len(want))
		}
	}
}

func TestPhoto12IsAPhoneUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a 12-megapixel image (about 8 s)")
	}
	dir := t.TempDir()
	paths, err := Ensure(dir, "photo12")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 4032 || cfg.Height != 3024 {
		t.Fatalf("%+v %v, want a 4032x3024 JPEG", cfg, err)
	}
	if len(b) < 3e6 || len(b) > 6e6 {
		t.Fatalf("%d bytes, want 3-6 MB", len(b))
	}
}

func TestEnsureKeepsWhatExistsAndRefusesUnknownNames(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "small.jpg")
	if err := os.WriteFile(kept, []byte("measured before"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths, err := Ensure(dir, "small", "large")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(kept); string(b) != "measured before" {
		t.Errorf("an existing source was replaced")
	}
	if len(paths) != 2 || paths[1] != filepath.Join(dir, "large.jpg") {
		t.Errorf("paths %q", paths)
	}
	if _, err := os.Stat(paths[1] + ".tmp"); err == nil {
		t.Errorf("temporary file left behind")
	}
	if _, err := Ensure(dir, "small", "hug"); err == nil || !strings.Contains(err.Error(), `no source named "hug"`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := Ensure(filepath.Join(kept, "sub"), "small"); err == nil {
		t.Errorf("a directory under a file: no error")
	}
}

func TestMakeReportsLibvipsErrors(t *testing.T) {
	r, _ := Lookup("small")
	r.Width, r.Height = 70000, 2 // JPEG's limit is 65535
	if _, err := Make(r); err == nil || !strings.Contains(err.Error(), "libvips: ") {
		t.Errorf("70000 pixels wide: %v", err)
	}
	r.Quality = 0
	if _, err := Make(r); err == nil {
		t.Error("quality 0 made an image")
	}
	if _, err := Make(Recipe{Name: "empty", Width: 10, Height: 10}); err == nil {
		t.Error("an empty recipe made an image")
	}
}

func TestReadMakesOnlyKnownSources(t *testing.T) {
	dir := t.TempDir()
	b, err := Read(filepath.Join(dir, "small.jpg"))
	if err != nil || len(b) != 10753 {
		t.Fatalf("small.jpg: %d bytes, %v", len(b), err)
	}
	other := filepath.Join(dir, "mine.jpg")
	if _, err := Read(other); err == nil {
		t.Fatal("an unknown missing file was read")
	}
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(other); err != nil || string(b) != "x" {
		t.Fatalf("an existing file: %q %v", b, err)
	}
}

const animatedSHA256 = "82e7fe948e7c1b767a7aa8e141076268e83cd29499afb62a3a5b8fd0aa2bb5bd"

// The animated source is the same bytes on every run and machine (integer
// arithmetic, Go's encoder): its hash is pinned, so a change to either is
// seen. It is 50 frames of 320x240 at 40 ms, looping forever, no two alike.
func TestAnimatedIsAFixedGIF(t *testing.T) {
	r, err := Lookup("animated")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Make(r)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != animatedSHA256 {
		t.Errorf("sha256 %x, want %s: the generator or Go's GIF encoder changed; measure again before pinning the new bytes", sum, animatedSHA256)
	}
	g, err := gif.DecodeAll(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Image) != 50 || g.Config.Width != 320 || g.Config.Height != 240 || g.LoopCount != 0 {
		t.Fatalf("%d frames, %dx%d, loop %d", len(g.Image), g.Config.Width, g.Config.Height, g.LoopCount)
	}
	for i, img := range g.Image {
		if g.Delay[i] != 4 || img.Bounds() != image.Rect(0, 0, 320, 240) {
			t.Fatalf("frame %d: delay %d, bounds %v", i, g.Delay[i], img.Bounds())
		}
		if i > 0 && bytes.Equal(img.Pix, g.Image[i-1].Pix) {
			t.Errorf("frame %d is frame %d again: an encoder would merge them", i, i-1)
		}
	}
	if r.File() != "animated.gif" {
		t.Errorf("file %q", r.File())
	}
}

func TestAnimatedRefusesBadRecipes(t *testing.T) {
	for _, r := range []Recipe{
		{Name: "a", Width: 320, Height: 240, Frames: 1, Delay: 4},
		{Name: "a", Width: 320, Height: 240, Frames: 50, Delay: 1},
		{Name: "a", Width: 8, Height: 240, Frames: 50, Delay: 4},
		{Name: "a", Width: 320, Height: 70000, Frames: 50, Delay: 4},
	} {
		if _, err := Make(r); err == nil {
			t.Errorf("%+v made a GIF", r)
		}
	}
}

func TestReadMakesTheAnimatedSource(t *testing.T) {
	b, err := Read(filepath.Join(t.TempDir(), "animated.gif"))
	if err != nil || !bytes.HasPrefix(b, []byte("GIF89a")) {
		t.Fatalf("%.6q %v", b, err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "animated.jpg")); err == nil {
		t.Error("animated.jpg, which no recipe makes, was read")
	}
}
