package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary doubles as a BenchmarkEngine test binary
// (ENGINE_FAKE=go) and as engine-bench.mjs (ENGINE_FAKE=sharp), each
// printing what the real one prints, with times from ENGINE_FAKE_MS.
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
	formats := "png"
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--versions":
			return 0
		case "--iterations":
			i++
		case "--formats":
			i++
			formats = args[i]
		default:
			files = append(files, args[i])
		}
	}
	for _, file := range files {
		for _, f := range strings.Split(formats, ",") {
			b, _ := json.Marshal(map[string]any{"file": file, "format": f, "iterations": 3, "median_ms": 10.0, "bytes": 2000})
			fmt.Println(string(b))
		}
	}
	return 0
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
	c := config{rounds: 3, samples: 20, names: []string{"small", "photo12"}, formats: []string{"png", "webp"}, engines: []string{"static", sharp}}
	rounds := map[key][]sample{}
	for _, f := range c.formats {
		for _, n := range c.names {
			rounds[key{"static", n, f}] = []sample{{9, 100}, {30, 100}, {8, 100}} // median 9
			rounds[key{sharp, n, f}] = []sample{{10, 120}, {12, 120}, {11, 120}}  // median 11
		}
	}
	var b bytes.Buffer
	render(&b, c, rounds)
	want := `
png: 256x256 cover, one libvips thread; per-thumbnail medians over 3 rounds x 20 samples
engine    small ms  small B vs sharp photo12 ms photo12 B vs sharp
static        9.00      100    0.82x       9.00       100    0.82x
sharp        11.00      120    1.00x      11.00       120    1.00x

webp q80: 256x256 cover, one libvips thread; per-thumbnail medians over 3 rounds x 20 samples
engine    small ms  small B vs sharp photo12 ms photo12 B vs sharp
static        9.00      100    0.82x       9.00       100    0.82x
sharp        11.00      120    1.00x      11.00       120    1.00x
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
	err := Run(t.Context(), []string{"-lock", "", "-sources", src, "-names", "small,large", "-formats", "png,jpeg",
		"-rounds", "2", "-engines", "dynamic,sharp", "-bin", "dynamic=" + os.Args[0],
		"-sharp", "env ENGINE_FAKE=sharp " + os.Args[0]}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	for _, want := range []string{
		"libvips: dynamic ", "sharp 8.18.7 (sharp 0.35.5)",
		"jpeg q80: 256x256 cover", "dynamic       5.50     1004    0.55x      5.50     1004    0.55x",
		"sharp        10.00     2000    1.00x",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errs.String(), "round 2/2") {
		t.Errorf("progress: %s", errs.String())
	}

	// An engine whose output lacks a figure, and one that fails.
	t.Setenv("ENGINE_FAKE_MS", "0")
	err = Run(t.Context(), []string{"-lock", "", "-sources", src, "-names", "small", "-engines", "dynamic", "-bin", "dynamic=" + os.Args[0]}, &out, &errs)
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
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	c, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil || strings.Join(c.engines, ",") != "dynamic,slim,static,sharp" || strings.Join(c.formats, ",") != "png,jpeg,webp" ||
		strings.Join(c.names, ",") != "small,large,photo12" {
		t.Fatalf("defaults %+v %v", c, err)
	}
}
