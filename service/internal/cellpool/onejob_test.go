package cellpool

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// One job kind through a real cell (libvips in this test binary, the
// protocol's one job frame): a description, with and without its
// ThumbHash, and a thumbnail are each the in-process engine's answer to the
// same job on the same look, and an engine error is the same error.
func TestOneJobThroughARealCellAsInProcess(t *testing.T) {
	engCfg := thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxAnimationPixels: 16_777_216, MaxSide: 4096, Threads: 1}
	settings, err := cell.Settings{Engine: engCfg, MaxSource: 8 << 20, LogLevel: slog.LevelWarn}.Env()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := startArmCell(t, &cell.Spec{Path: os.Args[0], Args: []string{"cell"}, Env: []string{settings, armsCellEnv + "=1"},
		Stderr: os.Stderr, MaxSource: 8 << 20, MaxSide: 4096, MaxAnimationPixels: 1 << 24})
	defer c.Close(5 * time.Second)
	inproc := thumb.New(engCfg)
	inproc.Start()

	src, _ := memcost.Look(warmup(t))
	for _, job := range []thumbjob.Job{
		{Info: &thumbjob.InfoJob{ThumbHash: true}},
		{Info: &thumbjob.InfoJob{}},
		{Options: coverPNG()},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		want, wantErr := inproc.Run(ctx, src, job)
		got, _, err := c.Run(ctx, src, job)
		cancel()
		if err != nil || wantErr != nil {
			t.Fatalf("%s: cell %v, in process %v", job.Normalised(), err, wantErr)
		}
		if job.Info != nil {
			if got.Info == nil || !reflect.DeepEqual(*got.Info, *want.Info) {
				t.Errorf("%s: cell %+v, in process %+v", job.Normalised(), got.Info, want.Info)
			}
			continue
		}
		if !bytes.Equal(got.Image.Bytes, want.Image.Bytes) || got.Image.Format != want.Image.Format {
			t.Errorf("thumbnail: cell %d bytes of %s, in process %d of %s", len(got.Image.Bytes), got.Image.Format, len(want.Image.Bytes), want.Image.Format)
		}
	}
	// A description of bytes whose look found no format: the same typed
	// error from both.
	bad, _ := memcost.Look([]byte("not an image"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := thumbjob.Job{Info: &thumbjob.InfoJob{ThumbHash: true}}
	_, wantErr := inproc.Run(ctx, bad, job)
	_, _, err = c.Run(ctx, bad, job)
	if !errors.Is(wantErr, thumbjob.ErrUnsupportedFormat) || !errors.Is(err, thumbjob.ErrUnsupportedFormat) || err.Error() != wantErr.Error() {
		t.Errorf("no format: cell %v, in process %v", err, wantErr)
	}
}
