package thumb

import (
	"context"
	"errors"
	"testing"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The engine's Run takes the source's format from the look it is given
// (the pipeline's one sniff) and never sniffs the bytes again: a JPEG
// whose look found no format is refused as no input format, and one whose
// look says WebP is described as WebP. A second sniff in Run's path (of a
// thumbnail or a description) would answer from the bytes and fail this.
func TestRunTrustsTheLookItIsGiven(t *testing.T) {
	small := source(t, "small.jpg")
	thumbnail := thumbjob.Job{Options: thumbjob.Options{Width: 32, Height: 32, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}}
	info := thumbjob.Job{Info: &thumbjob.InfoJob{}}
	for _, job := range []thumbjob.Job{thumbnail, info} {
		_, err := testEngine.Run(context.Background(), thumbjob.Source{Bytes: small}, job)
		if !errors.Is(err, thumbjob.ErrUnsupportedFormat) {
			t.Errorf("%s, no format in the look: %v, want %v", job.Normalised(), err, thumbjob.ErrUnsupportedFormat)
		}
		if _, err := testEngine.Run(context.Background(), looked(small), job); err != nil {
			t.Errorf("%s, the look's format: %v", job.Normalised(), err)
		}
	}
	webp := looked(small)
	webp.Format = imagefmt.WebP
	res, err := testEngine.Run(context.Background(), webp, info)
	if err != nil || res.Info.Format != imagefmt.WebP {
		t.Errorf("described as %+v (%v), want the look's webp", res.Info, err)
	}
	// Thumbnail and Info, for callers with bytes alone, sniff once.
	if i, err := testEngine.Info(context.Background(), small, thumbjob.InfoJob{}); err != nil || i.Format != imagefmt.JPEG {
		t.Errorf("Info: %+v %v", i, err)
	}
}
