// Package thumbhashtest is the published ThumbHash decoder
// (thumbHashToRGBA, thumbHashToAverageRGBA, thumbHashToApproximateAspectRatio
// of https://evanw.github.io/thumbhash/), written in Go for the tests alone:
// what a client does with a hash. The encoder's tests and the engine's
// (which compares the hash of an EXIF thumbnail with the full decode's)
// read hashes through it.
package thumbhashtest

import "math"

// AspectRatio is the width / height a hash says.
func AspectRatio(hash []byte) float64 {
	lx, ly := terms(hash)
	return float64(lx) / float64(ly)
}

func terms(hash []byte) (lx, ly int) {
	header := int(hash[3])
	hasAlpha, landscape := hash[2]&0x80 != 0, hash[4]&0x80 != 0
	long := 7
	if hasAlpha {
		long = 5
	}
	if landscape {
		return long, header & 7
	}
	return header & 7, long
}

// AverageRGBA is the hash's average colour, each 0..1.
func AverageRGBA(hash []byte) [4]float64 {
	header := int(hash[0]) | int(hash[1])<<8 | int(hash[2])<<16
	l := float64(header&63) / 63
	p := float64(header>>6&63)/31.5 - 1
	q := float64(header>>12&63)/31.5 - 1
	a := 1.0
	if header>>23 != 0 {
		a = float64(hash[5]&15) / 15
	}
	r, g, b := lpqToRGB(l, p, q)
	return [4]float64{clamp01(r), clamp01(g), clamp01(b), a}
}

func lpqToRGB(l, p, q float64) (r, g, b float64) {
	b = l - 2.0/3*p
	r = (3*l - b + q) / 2
	g = r - q
	return r, g, b
}

func clamp01(v float64) float64 { return max(0, min(1, v)) }

// RGBA renders the placeholder, at most 32 pixels a side.
func RGBA(hash []byte) (w, h int, rgba []byte) {
	header24 := int(hash[0]) | int(hash[1])<<8 | int(hash[2])<<16
	header16 := int(hash[3]) | int(hash[4])<<8
	lDC := float64(header24&63) / 63
	pDC := float64(header24>>6&63)/31.5 - 1
	qDC := float64(header24>>12&63)/31.5 - 1
	lScale := float64(header24>>18&31) / 31
	hasAlpha := header24>>23 != 0
	pScale := float64(header16>>3&63) / 63
	qScale := float64(header16>>9&63) / 63
	lx, ly := terms(hash)
	lx, ly = max(3, lx), max(3, ly)
	aDC, aScale := 1.0, 0.0
	start := 5
	if hasAlpha {
		aDC, aScale = float64(hash[5]&15)/15, float64(hash[5]>>4)/15
		start = 6
	}
	k := 0
	decode := func(nx, ny int, scale float64) []float64 {
		var ac []float64
		for cy := 0; cy < ny; cy++ {
			cx := 0
			if cy == 0 {
				cx = 1
			}
			for ; cx*ny < nx*(ny-cy); cx++ {
				v := float64(hash[start+k>>1]>>((k&1)<<2)&15)/7.5 - 1
				ac = append(ac, v*scale)
				k++
			}
		}
		return ac
	}
	lAC := decode(lx, ly, lScale)
	pAC := decode(3, 3, pScale*1.25)
	qAC := decode(3, 3, qScale*1.25)
	var aAC []float64
	if hasAlpha {
		aAC = decode(5, 5, aScale)
	}
	ratio := AspectRatio(hash)
	if ratio > 1 {
		w, h = 32, int(math.Round(32/ratio))
	} else {
		w, h = int(math.Round(32*ratio)), 32
	}
	rgba = make([]byte, w*h*4)
	fx, fy := make([]float64, 7), make([]float64, 7)
	sum := func(ac []float64, nx, ny int, v float64) float64 {
		j := 0
		for cy := 0; cy < ny; cy++ {
			cx := 0
			if cy == 0 {
				cx = 1
			}
			for ; cx*ny < nx*(ny-cy); cx++ {
				v += ac[j] * fx[cx] * fy[cy] * 2
				j++
			}
		}
		return v
	}
	for y, i := 0, 0; y < h; y++ {
		for x := 0; x < w; x, i = x+1, i+4 {
			for c := range fx {
				fx[c] = math.Cos(math.Pi / float64(w) * (float64(x) + 0.5) * float64(c))
				fy[c] = math.Cos(math.Pi / float64(h) * (float64(y) + 0.5) * float64(c))
			}
			l := sum(lAC, lx, ly, lDC)
			// P and Q keep the terms cx < 3-cy, the same triangle for 3x3.
			p, q := sum(pAC, 3, 3, pDC), sum(qAC, 3, 3, qDC)
			a := aDC
			if hasAlpha {
				a = sum(aAC, 5, 5, aDC)
			}
			r, g, b := lpqToRGB(l, p, q)
			rgba[i], rgba[i+1], rgba[i+2], rgba[i+3] = byte(255*clamp01(r)), byte(255*clamp01(g)), byte(255*clamp01(b)), byte(255*clamp01(a))
		}
	}
	return w, h, rgba
}
