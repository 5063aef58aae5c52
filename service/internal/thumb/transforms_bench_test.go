package thumb

import (
	"context"
	"testing"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// BenchmarkTransforms times each transform of issue 36 on the engine
// sources (photo12 and large.jpg with THUMBD_ENGINE_SOURCES pointing at
// bench/results/tmp/sources), beside the plain resize: a 256x256 WebP
// cover at q 80, one libvips thread. Reports the median in milliseconds
// (what the docs quote) and the output bytes.
//
//	VIPS_CONCURRENCY=1 THUMBD_ENGINE_SOURCES=bench/results/tmp/sources \
//	  go test -run '^$' -bench Transforms -benchtime 20x ./service/internal/thumb
func BenchmarkTransforms(b *testing.B) {
	cases := []struct {
		name string
		t    thumbjob.Transforms
		fit  thumbjob.Fit
	}{
		{"plain", thumbjob.Transforms{}, thumbjob.FitCover},
		{"enlarge=false", thumbjob.Transforms{NoEnlarge: true}, thumbjob.FitCover},
		{"rotate=90", thumbjob.Transforms{Rotate: 90}, thumbjob.FitCover},
		{"flip=hv", thumbjob.Transforms{Flip: thumbjob.FlipBoth}, thumbjob.FitCover},
		{"crop=0.25,0.25,0.5,0.5", thumbjob.Transforms{Crop: &thumbjob.Region{X: 0.25, Y: 0.25, W: 0.5, H: 0.5, Fractions: true}}, thumbjob.FitCover},
		{"trim=10", thumbjob.Transforms{Trim: &thumbjob.Trim{Threshold: 10}}, thumbjob.FitCover},
		{"blur=2", thumbjob.Transforms{Blur: 2}, thumbjob.FitCover},
		{"sharpen=1", thumbjob.Transforms{Sharpen: 1}, thumbjob.FitCover},
		{"pixelate=8", thumbjob.Transforms{Pixelate: 8}, thumbjob.FitCover},
		{"pad=16", thumbjob.Transforms{Pad: thumbjob.Sides{Top: 16, Right: 16, Bottom: 16, Left: 16}}, thumbjob.FitCover},
		{"inside+extend", thumbjob.Transforms{Extend: true}, thumbjob.FitInside},
	}
	for _, s := range engineSources(b) {
		for _, c := range cases {
			o := thumbjob.Options{Width: 256, Height: 256, Fit: c.fit, Gravity: thumbjob.GravityCentre, Format: imagefmt.WebP, Quality: 80, Transforms: c.t}
			b.Run(s.name+"/"+c.name, func(b *testing.B) {
				var bytes int
				timeMedian(b, func() error {
					img, err := testEngine.Thumbnail(context.Background(), s.src, o)
					bytes = len(img.Bytes)
					return err
				})
				b.ReportMetric(float64(bytes), "out-bytes")
			})
		}
	}
}
