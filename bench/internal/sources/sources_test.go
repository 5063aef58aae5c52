package sources

import (
	"bytes"
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
