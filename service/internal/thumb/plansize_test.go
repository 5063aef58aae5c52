package thumb

import (
	"context"
	"image/color"
	"strings"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/imgproxy"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// FuzzPlanSize: over the transform space params' FuzzTransforms explores
// (its seeds, and any query params takes) and imgproxy's options that
// need the source's size (an input beginning with "/" is an imgproxy
// path's options), the engine's answer is the plan's size, on sources of each shape (landscape, portrait, a JPEG
// stored on its side with EXIF orientation 6, a thin strip with alpha),
// in both JPEG shrink modes, with a watermark loaded: no step of the
// engine sizes anything the plan did not.
//
//	go test -run '^$' -fuzz '^FuzzPlanSize$' -fuzztime 2m ./service/internal/thumb
func FuzzPlanSize(f *testing.F) {
	for _, seed := range []string{"pad=1,2,3,4,5", "crop=0,0,1,1", "crop=0.5,0.5,0.5,0.5", "trim=10,ffffff", "bg=ff000080",
		"rotate=90&flip=hv", "blur=100&sharpen=10&pixelate=256", "wm=1,re,4,4,0.5", "enlarge=false&extend=true&gravity=se", "pad=,,,",
		// and each fit with what moves its size
		"w=37&h=53&fit=inside", "w=37&h=53&fit=contain&pad=3", "w=100&fit=fill&rotate=270", "h=77&fit=cover&gravity=focal&fx=0.1&fy=0.9",
		"w=333&h=111&fit=inside&enlarge=false&extend=true&gravity=nw", "w=50&h=50&crop=7,3,101,77&rotate=90", "w=64&trim=30&fit=inside",
		"w=200&h=20&fit=contain&wm=0.5,soea,3,4,0.3&dpr=1.5", "w=1&h=1", "w=4096&h=3&fit=inside"} {
		f.Add(seed)
	}
	strip := pngOf(f, 301, 7, func(x, y int) color.NRGBA { return color.NRGBA{uint8(x), 90, 160, uint8(100 + y*20)} })
	sources := [][]byte{source(f, "small.jpg"), onItsSide(f, source(f, "small.jpg")), quadrants(f, 90, 160), strip}
	cfg := testEngine.cfg
	cfg.Watermark = pngOf(f, 9, 5, func(x, y int) color.NRGBA { return color.NRGBA{255, 0, 0, 200} })
	fast := New(cfg) // libvips is started (TestMain): only the watermark loads
	cfg.JPEGShrink = thumbjob.JPEGShrinkQuality
	quality := New(cfg)
	for _, e := range []*Engine{fast, quality} {
		if err := e.LoadWatermark(); err != nil {
			f.Fatal(err)
		}
	}
	rules := params.Rules{MaxSide: 4096, Watermark: params.Watermark{Configured: true}}
	grammar := imgproxy.Config{MaxSide: 4096}
	f.Fuzz(func(t *testing.T, raw string) {
		var req params.Thumbnail
		if strings.HasPrefix(raw, "/") { // an imgproxy path's options
			r, err := grammar.Parse("/_" + raw + "/plain/local:///a.png")
			if err != nil {
				return
			}
			if req, err = rules.Make(r.Asked); err != nil {
				return
			}
			req.Options = req.Options.FromSource(imagefmt.PNG)
		} else {
			q, err := params.UploadQuery(raw)
			if err != nil {
				return
			}
			if req, err = rules.Upload(q); err != nil {
				return
			}
		}
		o := req.Options
		if o.Width*o.Height > 1<<20 || o.Blur > 10 {
			return // large answers and wide blurs cost seconds each: their sizes are the small ones' rule
		}
		for i, src := range sources {
			for _, e := range []*Engine{fast, quality} {
				m, err := e.pixels(src, o)
				if err != nil {
					continue // refused (a crop outside, a cover past the pixel limit): no size to compare
				}
				got, want := [2]int{m.img.Width(), m.img.PageHeight()}, [2]int{m.p.Out.X, m.p.Out.Y}
				m.close()
				if got != want {
					t.Fatalf("%q on source %d (%s shrink): the engine made %dx%d, the plan %dx%d", raw, i, e.cfg.JPEGShrink, got[0], got[1], want[0], want[1])
				}
				img, err := e.Thumbnail(context.Background(), src, o)
				if err != nil || img.Width != want[0] || img.Height != want[1] {
					t.Fatalf("%q on source %d: the answer is %dx%d (%v), the plan %dx%d", raw, i, img.Width, img.Height, err, want[0], want[1])
				}
			}
		}
	})
}

// onItsSide is src stored turned 270 degrees with EXIF orientation 6:
// displayed as src.
func onItsSide(t testing.TB, src []byte) []byte {
	t.Helper()
	img, err := vips.NewImageFromBuffer(src)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if err := img.Rotate(vips.Angle270); err != nil {
		t.Fatal(err)
	}
	if err := img.SetOrientation(6); err != nil {
		t.Fatal(err)
	}
	b, _, err := img.ExportJpeg(&vips.JpegExportParams{Quality: 90})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
