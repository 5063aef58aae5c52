package thumbhash

import (
	"encoding/base64"
	"math"
	"testing"

	"github.com/thumbd/thumbd/service/internal/thumbhashtest"
)

// pattern is the fixed test image: gradients, and with alpha its right
// half fading by rows. The goldens below are what the published
// JavaScript encoder (npm thumbhash 0.1.1, rgbaToThumbHash) gives for the
// same pixels.
func pattern(w, h int, alpha bool) []byte {
	px := make([]byte, w*h*4)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := 4 * (y*w + x)
			px[i], px[i+1], px[i+2], px[i+3] = byte(x*4%256), byte(y*5%256), byte((x+y)*3%256), 255
			if alpha && 2*x >= w {
				px[i+3] = byte(y * 4 % 256)
			}
		}
	}
	return px
}

func TestEncodeMatchesPublishedEncoder(t *testing.T) {
	for _, c := range []struct {
		w, h  int
		alpha bool
		want  string
	}{
		{64, 48, false, "nxcOLZpgd3dReYeGd3h3d+PxC/eH"},
		{48, 64, false, "3OYJLRRhd1N5B3m3d3V4iLP6Brf4"},
		{64, 48, true, "nceJHIw6QXdQiId3Bz/OUc/2V1eJd4iHCA=="},
		{100, 7, false, "U7YOKZAFiHd3iIeH/ZZnkIc="},
		{1, 1, false, "AAgCBwAAAAAAAAAAAAAAAAAAAAAAAAAA"},
	} {
		hash, err := Encode(c.w, c.h, pattern(c.w, c.h, c.alpha))
		if err != nil {
			t.Fatal(err)
		}
		if got := base64.StdEncoding.EncodeToString(hash); got != c.want {
			t.Errorf("%dx%d alpha=%t: %s, want %s", c.w, c.h, c.alpha, got, c.want)
		}
	}
}

// The hash round-trips through the published decoder: its aspect ratio,
// alpha flag and average colour are the source's.
func TestEncodeRoundTripsThroughReferenceDecoder(t *testing.T) {
	for _, c := range []struct {
		w, h  int
		alpha bool
	}{{64, 48, false}, {48, 64, false}, {64, 48, true}, {100, 25, false}, {30, 90, true}} {
		px := pattern(c.w, c.h, c.alpha)
		hash, err := Encode(c.w, c.h, px)
		if err != nil {
			t.Fatal(err)
		}
		ratio := thumbhashtest.AspectRatio(hash)
		if want := float64(c.w) / float64(c.h); math.Abs(math.Log(ratio/want)) > math.Log(1.5) {
			t.Errorf("%dx%d: aspect ratio %.2f, want about %.2f", c.w, c.h, ratio, want)
		}
		avg := thumbhashtest.AverageRGBA(hash)
		if (avg[3] < 1) != c.alpha {
			t.Errorf("%dx%d alpha=%t: decoded alpha %.2f", c.w, c.h, c.alpha, avg[3])
		}
		want := averageOf(px)
		for i, name := range []string{"r", "g", "b"} {
			// The DC terms are 6 bits of L, P and Q.
			if math.Abs(avg[i]-want[i]) > 0.04 {
				t.Errorf("%dx%d alpha=%t: average %s %.3f, source %.3f", c.w, c.h, c.alpha, name, avg[i], want[i])
			}
		}
		w, h, rgba := thumbhashtest.RGBA(hash)
		if len(rgba) != w*h*4 || max(w, h) != 32 {
			t.Errorf("%dx%d: decoded a %dx%d placeholder with %d bytes", c.w, c.h, w, h, len(rgba))
		}
	}
}

func averageOf(rgba []byte) [4]float64 {
	var s [4]float64
	for i := 0; i < len(rgba); i += 4 {
		a := float64(rgba[i+3]) / 255
		for c := 0; c < 3; c++ {
			s[c] += a * float64(rgba[i+c]) / 255
		}
		s[3] += a
	}
	if s[3] > 0 {
		s[0], s[1], s[2] = s[0]/s[3], s[1]/s[3], s[2]/s[3]
	}
	s[3] /= float64(len(rgba) / 4)
	return s
}

func TestEncodeRefusesWhatTheFormatDoesNot(t *testing.T) {
	for _, c := range []struct{ w, h, n int }{{0, 1, 0}, {101, 1, 404}, {1, 101, 404}, {2, 2, 15}} {
		if _, err := Encode(c.w, c.h, make([]byte, c.n)); err == nil {
			t.Errorf("%dx%d with %d bytes: no error", c.w, c.h, c.n)
		}
	}
}

func BenchmarkEncode100x75(b *testing.B) {
	px := pattern(100, 75, false)
	for b.Loop() {
		if _, err := Encode(100, 75, px); err != nil {
			b.Fatal(err)
		}
	}
}
