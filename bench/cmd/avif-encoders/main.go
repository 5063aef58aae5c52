// Command avif-encoders is the study behind the recipe's AV1 encoder
// (docs/engine.md, "AVIF"): aom against SVT-AV1 through libvips' heifsave,
// per 256x256 thumbnail of each source given, at effort 4 and a range of Q:
// milliseconds (the median of 7 heifsave runs less the median of 7 copy
// runs of the same image: process start and load cancel out), bytes, and
// SSIM against the uncompressed thumbnail. It needs a libvips prefix built
// with both encoders (VIPS_PREFIX; the shipped recipe has aom only) and
// Debian's vips command (libvips-tools) to decode AVIF.
//
//	VIPS_PREFIX=/var/cache/thumbd/avif-exp go run ./bench/cmd/avif-encoders [-q 35,45] [-encoders aom,svt] SOURCE...
package main

import (
	"flag"
	"fmt"
	"image"
	_ "image/png"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/quality"
)

var P = os.Getenv("VIPS_PREFIX")

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+P+"/lib")
	if out, err := cmd.CombinedOutput(); err != nil {
		panic(fmt.Sprint(name, args, err, string(out)))
	}
}

func load(p string) image.Image {
	f, _ := os.Open(p)
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		panic(err)
	}
	return img
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func main() {
	qs := flag.String("q", "35,45,50,55,65", "comma-separated Q values")
	encs := flag.String("encoders", "aom,svt", "comma-separated encoders")
	flag.Parse()
	srcs := flag.Args()
	for _, src := range srcs {
		run(P+"/bin/vips", "thumbnail", src, "/tmp/st-ref.v", "256", "--height", "256", "--crop", "centre")
		run(P+"/bin/vips", "copy", "/tmp/st-ref.v", "/tmp/st-ref.png")
		ref := load("/tmp/st-ref.png")
		for _, q := range strings.Split(*qs, ",") {
			for _, enc := range strings.Split(*encs, ",") {
				var ts []time.Duration
				for i := 0; i < 7; i++ {
					t0 := time.Now()
					run(P+"/bin/vips", "heifsave", "/tmp/st-ref.v", "/tmp/st.avif", "--compression", "av1", "--Q", q, "--effort", "4", "--encoder", enc)
					ts = append(ts, time.Since(t0))
				}
				var bs []time.Duration
				for i := 0; i < 7; i++ {
					t0 := time.Now()
					run(P+"/bin/vips", "copy", "/tmp/st-ref.v", "/tmp/st-base.v")
					bs = append(bs, time.Since(t0))
				}
				st, _ := os.Stat("/tmp/st.avif")
				exec.Command("vips", "copy", "/tmp/st.avif", "/tmp/st.png").Run()
				s, err := quality.SSIM(ref, load("/tmp/st.png"))
				if err != nil {
					panic(err)
				}
				fmt.Printf("%s\tQ%s\t%s\t%.1f ms\t%d B\tSSIM %.4f\n", src, q, enc, float64(median(ts)-median(bs))/1e6, st.Size(), s)
			}
		}
	}
}
