// Package thumbhash encodes an image placeholder in Evan Wallace's
// ThumbHash format (https://evanw.github.io/thumbhash/, MIT): about 25
// bytes that keep the image's aspect ratio, its alpha and its colours as
// a few DCT terms, decoded by the format's small JavaScript, Swift, Rust
// or Java functions on the client. No Go package of it is served by the
// module proxy here, so this is the published encoder written in Go; its
// test decodes the result with the published decoder.
package thumbhash

import (
	"fmt"
	"math"
)

// MaxSide is the largest width or height Encode takes: the format's own
// limit (larger inputs cost time and add nothing to a handful of terms).
const MaxSide = 100

// Encode returns the ThumbHash of a w x h image of 8-bit RGBA pixels, row
// by row, not premultiplied.
func Encode(w, h int, rgba []byte) ([]byte, error) {
	if w < 1 || h < 1 || w > MaxSide || h > MaxSide {
		return nil, fmt.Errorf("thumbhash: a %dx%d image; each side must be 1..%d", w, h, MaxSide)
	}
	if len(rgba) != w*h*4 {
		return nil, fmt.Errorf("thumbhash: %d bytes for a %dx%d RGBA image", len(rgba), w, h)
	}
	n := w * h

	// The average colour, weighted by alpha.
	var avgR, avgG, avgB, avgA float64
	for i := 0; i < n; i++ {
		a := float64(rgba[4*i+3]) / 255
		avgR += a / 255 * float64(rgba[4*i])
		avgG += a / 255 * float64(rgba[4*i+1])
		avgB += a / 255 * float64(rgba[4*i+2])
		avgA += a
	}
	if avgA > 0 {
		avgR, avgG, avgB = avgR/avgA, avgG/avgA, avgB/avgA
	}
	hasAlpha := avgA < float64(n)

	// Fewer luminance terms when alpha takes room.
	lLimit := 7.0
	if hasAlpha {
		lLimit = 5
	}
	side := float64(max(w, h))
	lx := max(1, int(math.Round(lLimit*float64(w)/side)))
	ly := max(1, int(math.Round(lLimit*float64(h)/side)))

	// RGBA to LPQA, composited over the average colour: luminance, yellow
	// minus blue, red minus green, alpha.
	l, p, q, alpha := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		a := float64(rgba[4*i+3]) / 255
		r := avgR*(1-a) + a/255*float64(rgba[4*i])
		g := avgG*(1-a) + a/255*float64(rgba[4*i+1])
		b := avgB*(1-a) + a/255*float64(rgba[4*i+2])
		l[i] = (r + g + b) / 3
		p[i] = (r+g)/2 - b
		q[i] = r - g
		alpha[i] = a
	}

	enc := newChannelEncoder(w, h)
	lc := enc.encode(l, max(3, lx), max(3, ly))
	pc := enc.encode(p, 3, 3)
	qc := enc.encode(q, 3, 3)
	var ac channel
	if hasAlpha {
		ac = enc.encode(alpha, 5, 5)
	}

	landscape := w > h
	header24 := int(math.Round(63*lc.dc)) |
		int(math.Round(31.5+31.5*pc.dc))<<6 |
		int(math.Round(31.5+31.5*qc.dc))<<12 |
		int(math.Round(31*lc.scale))<<18
	if hasAlpha {
		header24 |= 1 << 23
	}
	header16 := lx
	if landscape {
		header16 = ly
	}
	header16 |= int(math.Round(63*pc.scale))<<3 | int(math.Round(63*qc.scale))<<9
	if landscape {
		header16 |= 1 << 15
	}
	hash := []byte{byte(header24), byte(header24 >> 8), byte(header24 >> 16), byte(header16), byte(header16 >> 8)}
	if hasAlpha {
		hash = append(hash, byte(int(math.Round(15*ac.dc))|int(math.Round(15*ac.scale))<<4))
	}

	// The AC terms, four bits each, two to a byte, low nibble first.
	start := len(hash)
	terms := [][]float64{lc.ac, pc.ac, qc.ac}
	if hasAlpha {
		terms = append(terms, ac.ac)
	}
	k := 0
	for _, t := range terms {
		for _, f := range t {
			if start+k>>1 == len(hash) {
				hash = append(hash, 0)
			}
			hash[start+k>>1] |= byte(int(math.Round(15*f)) << ((k & 1) << 2))
			k++
		}
	}
	return hash, nil
}

// channel is one channel's DCT: the constant term, the varying terms
// normalised to 0..1 by scale, and scale.
type channel struct {
	dc    float64
	ac    []float64
	scale float64
}

type channelEncoder struct {
	w, h int
	// cosX[cx][x] and cosY[cy][y]: the DCT's cosines, computed once for
	// every channel (no channel has more than 7 terms a side).
	cosX, cosY [7][]float64
}

func newChannelEncoder(w, h int) channelEncoder {
	e := channelEncoder{w: w, h: h}
	for c := range e.cosX {
		e.cosX[c], e.cosY[c] = make([]float64, w), make([]float64, h)
		for x := range e.cosX[c] {
			e.cosX[c][x] = math.Cos(math.Pi / float64(w) * float64(c) * (float64(x) + 0.5))
		}
		for y := range e.cosY[c] {
			e.cosY[c][y] = math.Cos(math.Pi / float64(h) * float64(c) * (float64(y) + 0.5))
		}
	}
	return e
}

// encode keeps the terms (cx, cy) of the triangle cx*ny < nx*(ny-cy), as
// the format lays them out.
func (e channelEncoder) encode(c []float64, nx, ny int) channel {
	var out channel
	for cy := 0; cy < ny; cy++ {
		for cx := 0; cx*ny < nx*(ny-cy); cx++ {
			fx, fy := e.cosX[cx], e.cosY[cy]
			f := 0.0
			// Summed in the published encoder's order, so that values
			// on a rounding boundary round as its do.
			for y := 0; y < e.h; y++ {
				row, fyy := c[y*e.w:(y+1)*e.w], fy[y]
				for x, v := range row {
					f += v * fx[x] * fyy
				}
			}
			f /= float64(e.w * e.h)
			if cx > 0 || cy > 0 {
				out.ac = append(out.ac, f)
				out.scale = max(out.scale, math.Abs(f))
			} else {
				out.dc = f
			}
		}
	}
	if out.scale > 0 {
		for i := range out.ac {
			out.ac[i] = 0.5 + 0.5/out.scale*out.ac[i]
		}
	}
	return out
}
