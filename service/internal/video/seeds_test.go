package video

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The seeds are the recipes' videos of one second, kept in testdata for
// the fuzz targets and the damaged-file tests (which then need no
// ffmpeg). THUMBD_UPDATE_VIDEO_SEEDS=1 makes them again.
const seeds = "testdata/seeds"

func TestUpdateSeeds(t *testing.T) {
	if os.Getenv("THUMBD_UPDATE_VIDEO_SEEDS") == "" {
		t.Skip("THUMBD_UPDATE_VIDEO_SEEDS=1 makes testdata/seeds again")
	}
	needTools(t, "ffmpeg")
	dir := t.TempDir()
	if err := os.MkdirAll(seeds, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, r := range recipes {
		b, err := os.ReadFile(r.make(t, dir, 1))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 100<<10 {
			t.Errorf("%s: %d bytes", r.name, len(b))
		}
		if err := os.WriteFile(filepath.Join(seeds, r.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func seedFiles(t testing.TB, exts ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	paths, _ := filepath.Glob(filepath.Join(seeds, "*"))
	for _, p := range paths {
		if !slices.Contains(exts, filepath.Ext(p)) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	if len(out) == 0 {
		t.Fatalf("no seeds in %s", seeds)
	}
	return out
}

// Every seed is read, as its recipe says, and its frames hold together.
func TestSeeds(t *testing.T) {
	files := seedFiles(t, ".mp4", ".mov", ".webm", ".mkv")
	for _, r := range recipes {
		b, ok := files[r.name]
		if !ok {
			t.Errorf("no seed %s", r.name)
			continue
		}
		v, err := Open(bytes.NewReader(b), int64(len(b)), DefaultLimits())
		if err != nil {
			t.Errorf("%s: %v", r.name, err)
			continue
		}
		if i := v.Info(); i.Codec != r.codec || i.Audio != r.audio || i.Width != 320 || i.Height != 240 {
			t.Errorf("%s: %+v", r.name, i)
		}
		if err := exercise(v, int64(len(b)), DefaultLimits()); err != nil {
			t.Errorf("%s: %v", r.name, err)
		}
	}
}

// exercise asks a reader that opened for frames across its video and
// checks what it answers: every packet and range inside the file, the
// first packet a keyframe, the budget kept. An error is an answer; a
// broken invariant is the error returned.
func exercise(v *Reader, size int64, lim Limits) error {
	i := v.Info()
	switch {
	case i.Width <= 0 || i.Height <= 0 || i.DisplayWidth <= 0 || i.DisplayHeight <= 0:
		return fmt.Errorf("sizes %+v", i)
	case !slices.Contains([]Codec{H264, HEVC, VP8, VP9, AV1}, i.Codec):
		return fmt.Errorf("codec %q", i.Codec)
	case i.Rotation%90 != 0 || i.Rotation < 0 || i.Rotation > 270:
		return fmt.Errorf("rotation %d", i.Rotation)
	case math.IsNaN(i.Duration) || i.Duration < 0 || math.IsInf(i.Duration, 0) || math.IsNaN(i.FrameRate) || i.FrameRate < 0:
		return fmt.Errorf("duration %v, rate %v", i.Duration, i.FrameRate)
	case len(i.Keyframes) > lim.Keyframes || i.TimeBase.Num <= 0 || i.TimeBase.Den <= 0:
		return fmt.Errorf("%d keyframes, time base %v", len(i.Keyframes), i.TimeBase)
	}
	times := []float64{0, 0.1, 0.5, 0.77}
	if i.Duration > 0 {
		times = append(times, i.Duration/2, i.Duration*0.99, i.Duration+1)
	}
	// Times count from the first frame's (Start); a file whose first
	// frame cannot be found fails every FrameAt, with any error.
	start, startErr := v.Start()
	for _, at := range times {
		f, err := v.FrameAt(at)
		if err != nil {
			if startErr == nil && i.Duration > 0 && at >= start+i.Duration && !errors.Is(err, ErrPastEnd) {
				return fmt.Errorf("t=%v past the end: %v", at, err)
			}
			continue
		}
		if len(f.Packets) == 0 || !f.Packets[0].Key || f.Packets[len(f.Packets)-1].PTS != f.PTS {
			return fmt.Errorf("t=%v: %d packets, the first a key %v", at, len(f.Packets), len(f.Packets) > 0 && f.Packets[0].Key)
		}
		for _, p := range f.Packets {
			if p.Offset < 0 || p.Size <= 0 || p.Offset+p.Size > size {
				return fmt.Errorf("t=%v: a packet of %d bytes at %d in %d", at, p.Size, p.Offset, size)
			}
		}
		for k, r := range f.Ranges {
			if r.Offset < 0 || r.Size <= 0 || r.Offset+r.Size > size || k > 0 && r.Offset <= f.Ranges[k-1].Offset+f.Ranges[k-1].Size {
				return fmt.Errorf("t=%v: ranges %v", at, f.Ranges)
			}
		}
		if err := v.ReadFrame(&f); err == nil {
			for _, p := range f.Packets {
				if int64(len(p.Data)) != p.Size {
					return fmt.Errorf("t=%v: %d bytes read of %d", at, len(p.Data), p.Size)
				}
			}
		}
	}
	if s := v.Stats(); s.Bytes > lim.Bytes {
		return fmt.Errorf("%d bytes read, over the budget of %d", s.Bytes, lim.Bytes)
	}
	return nil
}

// fuzzLimits are small, so that a fuzzed file is quick to refuse.
func fuzzLimits() Limits {
	return Limits{Bytes: 4 << 20, Samples: 20_000, Keyframes: 50, Tracks: 8, Boxes: 2_000, Cues: 2_000, Clusters: 200}
}

// Truncated and bit-flipped copies of every seed: an error or a reading
// that holds together, never a panic. A truncated file whose sizes say
// where it ends (all but the live Matroska) is an error.
func TestDamagedSeeds(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 47))
	for name, b := range seedFiles(t, ".mp4", ".mov", ".webm", ".mkv") {
		cuts := []int{}
		for n := 0; n < len(b); n += max(1, len(b)/300) {
			cuts = append(cuts, n)
		}
		for n := range min(len(b), 1500) {
			cuts = append(cuts, n)
		}
		for _, n := range cuts {
			short := b[:n]
			v, err := Open(bytes.NewReader(short), int64(n), fuzzLimits())
			if err != nil {
				continue
			}
			if err := exercise(v, int64(n), fuzzLimits()); err != nil {
				t.Fatalf("%s cut at %d: %v", name, n, err)
			}
			if !strings.Contains(name, "live") && allFramesRead(v) {
				t.Errorf("%s cut at %d of %d: no error", name, n, len(b))
			}
		}
		for range 1500 {
			c := bytes.Clone(b)
			for range 1 + rng.IntN(3) {
				c[rng.IntN(len(c))] ^= 1 << rng.IntN(8)
			}
			if v, err := Open(bytes.NewReader(c), int64(len(c)), fuzzLimits()); err == nil {
				if err := exercise(v, int64(len(c)), fuzzLimits()); err != nil {
					t.Fatalf("%s flipped: %v", name, err)
				}
			}
		}
	}
}

// allFramesRead says whether every frame of the video can be found and
// read (a truncated file must fail somewhere on the way).
func allFramesRead(v *Reader) bool {
	for _, k := range v.Info().Keyframes {
		f, err := v.FrameAt(k.Time)
		if err != nil || v.ReadFrame(&f) != nil {
			return false
		}
	}
	f, err := v.FrameAt(math.Max(0, v.Info().Duration-0.001))
	return err == nil && v.ReadFrame(&f) == nil
}

func fuzzReader(f *testing.F, built [][]byte, exts ...string) {
	for _, b := range seedFiles(f, exts...) {
		f.Add(b)
	}
	for _, b := range built {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Open(bytes.NewReader(b), int64(len(b)), fuzzLimits())
		if err != nil {
			return
		}
		if err := exercise(v, int64(len(b)), fuzzLimits()); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzMP4: the MP4 and MOV reader (moov, sample tables, fragments, edit
// lists, display matrices, codec configurations), seeded with the seeds.
// The small files built box by box come first: the fuzzer mutates them
// quickest.
func FuzzMP4(f *testing.F) {
	elst := bx("edts", fullBx("elst", 0, 0, u32(2), u32(1000), u32(0xFFFFFFFF), u32(1<<16), u32(1000), u32(1024), u32(1<<16)))
	fuzzReader(f, [][]byte{
		synth{n: 12, sync: []uint32{1, 7}}.build(),
		synth{n: 12, sync: []uint32{1, 7}, moovLast: true, elst: elst, tkhdM: withABCD([4]int32{0, one, -one, 0})}.build(),
		syntheticFragments(),
	}, ".mp4", ".mov")
}

// FuzzMatroska: the Matroska and WebM reader (EBML, SeekHead, Tracks,
// Cues, clusters and blocks), seeded with the seeds.
func FuzzMatroska(f *testing.F) {
	fuzzReader(f, [][]byte{
		mkvSynth{frames: 12, keyEvery: 5, clustersOf: 4, cues: true}.build(),
		mkvSynth{frames: 12, keyEvery: 5, clustersOf: 4, live: true}.build(),
		mkvSynth{frames: 12, keyEvery: 5, clustersOf: 12, video: [][]byte{uel(idDisplayWidth, 640), uel(idDisplayHeight, 240)}}.build(),
	}, ".webm", ".mkv")
}
