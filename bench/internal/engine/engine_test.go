package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The test binary doubles as a BenchmarkEngine test binary
// (ENGINE_FAKE=go) and as engine-bench.mjs (ENGINE_FAKE=sharp), each
// printing what the real one prints, with times from ENGINE_FAKE_MS, and
// writing thumbnails as the real ones do (fakeOutputs).
func TestMain(m *testing.M) {
	switch os.Getenv("ENGINE_FAKE") {
	case "go":
		os.Exit(fakeGo())
	case "sharp":
		os.Exit(fakeSharp(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeGo() int {
	if os.Getenv("VIPS_CONCURRENCY") != "1" {
		fmt.Fprintln(os.Stderr, "VIPS_CONCURRENCY is not 1")
		return 1
	}
	names, _ := filepath.Glob(filepath.Join(os.Getenv("THUMBD_ENGINE_SOURCES"), "*.jpg"))
	fmt.Println("goos: linux")
	for _, n := range names {
		if filepath.Base(n) == "huge.jpg" {
			fmt.Fprintln(os.Stderr, "given a source that was not asked for")
			return 1
		}
		if err := fakeOutputs(os.Getenv("THUMBD_ENGINE_OUT"), n, strings.Split(os.Getenv("THUMBD_ENGINE_FORMATS"), ",")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, f := range strings.Split(os.Getenv("THUMBD_ENGINE_FORMATS"), ",") {
			fmt.Printf("BenchmarkEngine/%s/%s-2   \t      20\t  9000000 ns/op\t%s median-ms\t  %d out-bytes\n",
				strings.TrimSuffix(filepath.Base(n), ".jpg"), f, os.Getenv("ENGINE_FAKE_MS"), 1000+len(f))
		}
	}
	fmt.Println("PASS")
	return 0
}

func fakeSharp(args []string) int {
	fmt.Println(`{"engine":"sharp","sharp":"0.35.5","libvips":"8.18.7"}`)
	var files []string
	formats, out := "png", ""
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--versions":
			return 0
		case "--iterations":
			i++
		case "--formats":
			i++
			formats = args[i]
		case "--out":
			i++
			out = args[i]
		default:
			files = append(files, args[i])
		}
	}
	for _, file := range files {
		if err := fakeOutputs(out, file, strings.Split(formats, ",")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, f := range strings.Split(formats, ",") {
			b, _ := json.Marshal(map[string]any{"file": file, "format": f, "iterations": 3, "median_ms": 10.0, "bytes": 2000})
			fmt.Println(string(b))
		}
	}
	return 0
}

// fakeOutputs writes to dir what an engine writes for source: NAME.reference.png
// and NAME.FORMAT, of a 256x256 pattern (png and jpeg only: Go's encoders).
// ENGINE_FAKE_OUT breaks it: "none" writes nothing, "garbage" writes bytes
// that are no image, "small-ref" a 255x256 reference.
func fakeOutputs(dir, source string, formats []string) error {
	mode := os.Getenv("ENGINE_FAKE_OUT")
	if dir == "" || mode == "none" {
		return nil
	}
	name := strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
	pattern := func(w int) image.Image {
		img := image.NewGray(image.Rect(0, 0, w, 256))
		for i := range img.Pix {
			img.Pix[i] = uint8(i*i/7 + i%13*9)
		}
		return img
	}
	encode := func(file, format string, img image.Image) error {
		var b bytes.Buffer
		switch {
		case mode == "garbage":
			b.WriteString("not an image")
		case format == "png":
			if err := png.Encode(&b, img); err != nil {
				return err
			}
		case format == "jpeg":
			if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("the fake engines write png and jpeg, not %s", format)
		}
		return os.WriteFile(filepath.Join(dir, file), b.Bytes(), 0o644)
	}
	refWidth := 256
	if mode == "small-ref" {
		refWidth = 255
	}
	if err := encode(name+".reference.png", "png", pattern(refWidth)); err != nil {
		return err
	}
	for _, f := range formats {
		if err := encode(name+"."+f, f, pattern(256)); err != nil {
			return err
		}
	}
	return nil
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
BenchmarkEngine/small/png-2         	      20	  11000000 ns/op	        10.50 median-ms	     64321 out-bytes
BenchmarkEngine/photo12/webp-2      	      20	  61000000 ns/op	        60.25 median-ms	      8000 out-bytes
BenchmarkEngine/large.jpg-2         	       1	  20000000 ns/op	    140000 out-bytes
PASS
`
	got, err := parseGoBench(strings.NewReader(out), "static")
	if err != nil {
		t.Fatal(err)
	}
	want := map[key]sample{
		{"static", "small", "png"}:    {10.5, 64321},
		{"static", "photo12", "webp"}: {60.25, 8000},
		{"static", "large", "png"}:    {20, 140000}, // the older benchmark: ns/op
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: got %v, want %v", k, got[k], v)
		}
	}
	if _, err := parseGoBench(strings.NewReader("BenchmarkEngine/small/png-2 20 x ns/op\n"), "static"); err == nil {
		t.Error("a malformed figure: no error")
	}
}

func TestParseSharp(t *testing.T) {
	out := `{"engine":"sharp","sharp":"0.35.5"}
{"file":"/s/large.jpg","format":"jpeg","iterations":20,"median_ms":7.5,"p90_ms":8,"min_ms":7,"bytes":9000}
`
	got, err := parseSharp(strings.NewReader(out))
	if err != nil || len(got) != 1 || got[key{sharp, "large", "jpeg"}] != (sample{7.5, 9000}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := parseSharp(strings.NewReader("not json\n")); err == nil {
		t.Error("not JSON: no error")
	}
}

func TestRenderIsOneTablePerFormat(t *testing.T) {
	c := config{rounds: 3, samples: 20, names: []string{"small", "photo12"}, formats: []string{"png", "avif"}, engines: []string{"static", sharp}}
	rounds := map[key][]sample{}
	for _, f := range c.formats {
		for _, n := range c.names {
			rounds[key{"static", n, f}] = []sample{{9, 100}, {30, 100}, {8, 100}} // median 9
			rounds[key{sharp, n, f}] = []sample{{10, 120}, {12, 120}, {11, 120}}  // median 11
		}
	}
	figures, err := summarise(config{engines: c.engines, names: c.names, formats: []string{"png"}}, rounds, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.names {
		for e, ssim := range map[string]float64{"static": 0.93456, sharp: 0.951} {
			f := figures[key{e, n, "avif"}]
			f.ssim = ssim
			figures[key{e, n, "avif"}] = f
		}
	}
	var b bytes.Buffer
	render(&b, c, figures)
	want := `
png: 256x256 cover, one libvips thread; per-thumbnail medians over 3 rounds x 20 samples
engine    small ms  small B vs sharp photo12 ms photo12 B vs sharp
static        9.00      100    0.82x       9.00       100    0.82x
sharp        11.00      120    1.00x      11.00       120    1.00x

avif q58: 256x256 cover, one libvips thread; per-thumbnail medians over 3 rounds x 20 samples; SSIM (luma) against the engine's own lossless thumbnail
engine    small ms  small B small SSIM vs sharp photo12 ms photo12 B photo12 SSIM vs sharp
static        9.00      100     0.9346    0.82x       9.00       100       0.9346    0.82x
sharp        11.00      120     0.9510    1.00x      11.00       120       0.9510    1.00x
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestRunEndToEnd runs the subcommand on fake engines: sources made when
// missing, only the asked ones given to the benchmark, every round of every
// engine parsed, the tables printed.
func TestRunEndToEnd(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll(filepath.Join("service", "internal", "thumb"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "sources")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"small.jpg", "large.jpg", "huge.jpg"} { // huge is not asked for
		if err := os.WriteFile(filepath.Join(src, n), []byte("\xff\xd8\xff"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("ENGINE_FAKE_MS", "5.5")
	var out, errs bytes.Buffer
	t.Setenv("ENGINE_FAKE", "go")
	args := []string{"-lock", "", "-sources", src, "-names", "small,large", "-formats", "png,jpeg",
		"-rounds", "2", "-engines", "dynamic,sharp", "-bin", "dynamic=" + os.Args[0],
		"-sharp", "env ENGINE_FAKE=sharp " + os.Args[0]}
	err := Run(t.Context(), args, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	// The fakes' JPEG of their pattern, scored against their PNG of it.
	ssim := regexp.MustCompile(`(?m)^dynamic +5\.50 +1004 +(0\.\d{4}) +0\.55x +5\.50 +1004 +(0\.\d{4}) +0\.55x$`).FindStringSubmatch(out.String())
	if ssim == nil || ssim[1] != ssim[2] || ssim[1] == "0.0000" || ssim[1] == "1.0000" {
		t.Errorf("no jpeg row with an SSIM below 1 for both sources:\n%s", out.String())
	}
	for _, want := range []string{
		"libvips: dynamic ", "sharp 8.18.7 (sharp 0.35.5)",
		"jpeg q80: 256x256 cover", "dynamic       5.50     1003    0.55x      5.50     1003    0.55x",
		"SSIM (luma) against the engine's own lossless thumbnail", "sharp        10.00     2000     " + ssim[1] + "    1.00x",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Thumbnails that are missing, are no images, or a reference of
	// another size: no score, and the run says why.
	for mode, want := range map[string]string{
		"none":      "dynamic: no thumbnail to score",
		"garbage":   "dynamic: small.reference.png: png: invalid format",
		"small-ref": "dynamic: small jpeg: quality: sizes differ",
	} {
		t.Setenv("ENGINE_FAKE_OUT", mode)
		err := Run(t.Context(), args, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", mode, err, want)
		}
	}
	t.Setenv("ENGINE_FAKE_OUT", "")
	if !strings.Contains(errs.String(), "round 2/2") {
		t.Errorf("progress: %s", errs.String())
	}

	// An engine whose output lacks a figure, and one that fails.
	t.Setenv("ENGINE_FAKE_MS", "0")
	err = Run(t.Context(), []string{"-lock", "", "-sources", src, "-names", "small", "-formats", "png", "-engines", "dynamic", "-bin", "dynamic=" + os.Args[0]}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "no time") {
		t.Errorf("a zero time: %v", err)
	}
	err = Run(t.Context(), []string{"-lock", "", "-sources", src, "-names", "small", "-engines", "sharp", "-sharp", "false"}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "sharp, round 1") {
		t.Errorf("a failing engine: %v", err)
	}
	// Not run from the repository root: no scripts/build.sh to build with.
	err = Run(t.Context(), []string{"-lock", "", "-sources", src, "-names", "small", "-engines", "static"}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "building ./service/internal/thumb for the static build (run from the repository root)") {
		t.Errorf("no build.sh: %v", err)
	}
}

func TestFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"-rounds", "0"}, {"-engines", "dynamic,gm"}, {"-bin", "static"}, {"-bin", "other=x"}, {"-formats", ""}, {"extra"},
		{"-formats", "png,gif"}, {"-names", "small,animated"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	c, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil || strings.Join(c.engines, ",") != "dynamic,slim,static,sharp" || strings.Join(c.formats, ",") != "png,jpeg,webp,avif" ||
		strings.Join(c.names, ",") != "small,large,photo12" {
		t.Fatalf("defaults %+v %v", c, err)
	}
	// AVIF is scored through the vips command: without it, say so first.
	t.Setenv("PATH", t.TempDir())
	if _, err := parseFlags([]string{"-formats", "jpeg,avif"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "libvips-tools") {
		t.Errorf("avif without vips: %v", err)
	}
	if _, err := parseFlags([]string{"-formats", "jpeg"}, &bytes.Buffer{}); err != nil {
		t.Errorf("jpeg without vips: %v", err)
	}
}

// The real sharp side (engine-bench.mjs, when scripts/deps.sh node has
// installed the twin's packages) in every format: its figures, and an SSIM
// for each lossy thumbnail, AVIF decoded by the vips command.
func TestRunWithTheRealSharp(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "twins", "node", "engine-bench.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "sharp")); err != nil {
		t.Skip("the twin's packages are not installed (scripts/deps.sh node)")
	}
	var out, errs bytes.Buffer
	err = Run(t.Context(), []string{"-lock", "", "-sources", t.TempDir(), "-names", "small", "-rounds", "1", "-samples", "1",
		"-engines", "sharp", "-sharp", "node " + script}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, f := range []string{"jpeg q80", "webp q80", "avif q58"} {
		row := regexp.MustCompile(`(?s)` + f + `: .*?\nsharp +[\d.]+ +\d+ +(0\.\d{4}) +1\.00x\n`).FindStringSubmatch(out.String())
		if row == nil {
			t.Errorf("no %s table with an SSIM:\n%s", f, out.String())
			continue
		}
		if s, _ := strconv.ParseFloat(row[1], 64); s < 0.8 || s >= 1 {
			t.Errorf("%s: SSIM %s, want a small photo's lossy thumbnail between 0.8 and 1", f, row[1])
		}
	}
	if !strings.Contains(out.String(), "libvips: sharp 8.18.7 (sharp 0.35.5)") {
		t.Errorf("versions:\n%s", out.String())
	}
}
