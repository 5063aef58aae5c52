// Package primaries converts linear RGB of the colour primaries ITU-T
// H.273 (ISO/IEC 23091-2) names by code point into sRGB's (BT.709's): the
// matrix a video frame or an nclx-tagged image needs before it is shown
// as sRGB. Pure Go, no cgo.
package primaries

// Matrix is a linear-light 3x3 matrix: out[i] = sum over j of m[i][j]*in[j].
type Matrix [3][3]float64

// chromaticities are a colour space's CIE 1931 xy: red, green, blue and
// the white point.
type chromaticities struct{ rx, ry, gx, gy, bx, by, wx, wy float64 }

// h273 are H.273's colour primaries (its table 2). 10 (SMPTE ST 428, XYZ)
// and the reserved values have none.
var h273 = map[int]chromaticities{
	1:  {0.640, 0.330, 0.300, 0.600, 0.150, 0.060, 0.3127, 0.3290}, // BT.709, sRGB
	4:  {0.67, 0.33, 0.21, 0.71, 0.14, 0.08, 0.310, 0.316},         // BT.470 M (illuminant C)
	5:  {0.64, 0.33, 0.29, 0.60, 0.15, 0.06, 0.3127, 0.3290},       // BT.601 625 lines, BT.470 B/G
	6:  {0.630, 0.340, 0.310, 0.595, 0.155, 0.070, 0.3127, 0.3290}, // BT.601 525 lines, SMPTE 170M
	7:  {0.630, 0.340, 0.310, 0.595, 0.155, 0.070, 0.3127, 0.3290}, // SMPTE 240M
	8:  {0.681, 0.319, 0.243, 0.692, 0.145, 0.049, 0.310, 0.316},   // generic film (illuminant C)
	9:  {0.708, 0.292, 0.170, 0.797, 0.131, 0.046, 0.3127, 0.3290}, // BT.2020, BT.2100
	11: {0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.314, 0.351},   // DCI-P3 (the DCI white)
	12: {0.680, 0.320, 0.265, 0.690, 0.150, 0.060, 0.3127, 0.3290}, // Display P3
	22: {0.630, 0.340, 0.295, 0.605, 0.155, 0.077, 0.3127, 0.3290}, // EBU Tech. 3213
}

// SRGB is sRGB's (and BT.709's) code point.
const SRGB = 1

// Known says whether H.273 gives code's chromaticities.
func Known(code int) bool {
	_, ok := h273[code]
	return ok
}

// ToSRGB is the matrix from code's linear RGB to linear sRGB: through
// XYZ, with a Bradford adaptation of code's white to D65 when they
// differ. False when there is nothing to convert: sRGB's own primaries,
// or a code point without chromaticities (2, unspecified, among them).
func ToSRGB(code int) (Matrix, bool) {
	c, ok := h273[code]
	if !ok || code == SRGB {
		return Matrix{}, false
	}
	srgb := h273[SRGB]
	m := c.toXYZ()
	if c.wx != srgb.wx || c.wy != srgb.wy {
		src, dst := bradford.Apply(xyz(c.wx, c.wy)), bradford.Apply(xyz(srgb.wx, srgb.wy))
		scale := Matrix{{dst[0] / src[0], 0, 0}, {0, dst[1] / src[1], 0}, {0, 0, dst[2] / src[2]}}
		m = bradford.inverse().mul(scale).mul(bradford).mul(m)
	}
	return srgb.toXYZ().inverse().mul(m), true
}

// Luminance is the weights of code's linear R, G and B in its luminance
// (Y's row of its RGB to XYZ matrix); sRGB's for a code point without
// chromaticities.
func Luminance(code int) [3]float64 {
	c, ok := h273[code]
	if !ok {
		c = h273[SRGB]
	}
	return c.toXYZ()[1]
}

func xyz(x, y float64) [3]float64 { return [3]float64{x / y, 1, (1 - x - y) / y} }

// toXYZ is the linear RGB to XYZ matrix of c: the primaries' XYZ, each
// scaled so that RGB 1,1,1 is the white point at Y 1.
func (c chromaticities) toXYZ() Matrix {
	r, g, b := xyz(c.rx, c.ry), xyz(c.gx, c.gy), xyz(c.bx, c.by)
	p := Matrix{{r[0], g[0], b[0]}, {r[1], g[1], b[1]}, {r[2], g[2], b[2]}}
	s := p.inverse().Apply(xyz(c.wx, c.wy))
	for i := range 3 {
		for j := range 3 {
			p[i][j] *= s[j]
		}
	}
	return p
}

// bradford is the Bradford cone response matrix, for the chromatic
// adaptation of a white other than sRGB's D65 (DCI-P3's, illuminant C).
var bradford = Matrix{{0.8951, 0.2664, -0.1614}, {-0.7502, 1.7135, 0.0367}, {0.0389, -0.0685, 1.0296}}

func (a Matrix) mul(b Matrix) Matrix {
	var m Matrix
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				m[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return m
}

// Apply is a applied to the column vector v.
func (a Matrix) Apply(v [3]float64) [3]float64 {
	var out [3]float64
	for i := range 3 {
		out[i] = a[i][0]*v[0] + a[i][1]*v[1] + a[i][2]*v[2]
	}
	return out
}

// inverse by the adjugate; the matrices inverted here (RGB to XYZ of real
// primaries, Bradford's) are far from singular.
func (a Matrix) inverse() Matrix {
	c := func(i, j int) float64 {
		r0, r1 := (i+1)%3, (i+2)%3
		c0, c1 := (j+1)%3, (j+2)%3
		return a[r0][c0]*a[r1][c1] - a[r0][c1]*a[r1][c0]
	}
	det := a[0][0]*c(0, 0) + a[0][1]*c(0, 1) + a[0][2]*c(0, 2)
	var m Matrix
	for i := range 3 {
		for j := range 3 {
			m[j][i] = c(i, j) / det
		}
	}
	return m
}
