package thumb

import (
	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// chromaticities are a colour space's CIE 1931 xy: red, green, blue and
// the white point.
type chromaticities struct{ rx, ry, gx, gy, bx, by, wx, wy float64 }

// h273Primaries are ITU-T H.273's colour primaries (its table 2), the
// code points an nclx colr box gives; 1 (BT.709, sRGB) and 2
// (unspecified) are sRGB's and need no conversion, and a code point not
// here (10, XYZ; reserved values) is left as coded.
var h273Primaries = map[int]chromaticities{
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

// H.273's transfer characteristics that are HDR: PQ (SMPTE ST 2084) and
// HLG (ARIB STD-B67).
const (
	transferPQ  = 16
	transferHLG = 18
)

type mat3 [3][3]float64

func (a mat3) mul(b mat3) mat3 {
	var m mat3
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				m[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return m
}

func (a mat3) apply(v [3]float64) [3]float64 {
	var out [3]float64
	for i := range 3 {
		out[i] = a[i][0]*v[0] + a[i][1]*v[1] + a[i][2]*v[2]
	}
	return out
}

// inverse by the adjugate; the matrices inverted here (RGB to XYZ of real
// primaries, Bradford's) are far from singular.
func (a mat3) inverse() mat3 {
	c := func(i, j int) float64 {
		r0, r1 := (i+1)%3, (i+2)%3
		c0, c1 := (j+1)%3, (j+2)%3
		return a[r0][c0]*a[r1][c1] - a[r0][c1]*a[r1][c0]
	}
	det := a[0][0]*c(0, 0) + a[0][1]*c(0, 1) + a[0][2]*c(0, 2)
	var m mat3
	for i := range 3 {
		for j := range 3 {
			m[j][i] = c(i, j) / det
		}
	}
	return m
}

func xyz(x, y float64) [3]float64 { return [3]float64{x / y, 1, (1 - x - y) / y} }

// toXYZ is the linear RGB to XYZ matrix of c: the primaries' XYZ, each
// scaled so that RGB 1,1,1 is the white point at Y 1.
func (c chromaticities) toXYZ() mat3 {
	r, g, b := xyz(c.rx, c.ry), xyz(c.gx, c.gy), xyz(c.bx, c.by)
	p := mat3{{r[0], g[0], b[0]}, {r[1], g[1], b[1]}, {r[2], g[2], b[2]}}
	s := p.inverse().apply(xyz(c.wx, c.wy))
	for i := range 3 {
		for j := range 3 {
			p[i][j] *= s[j]
		}
	}
	return p
}

// bradford is the Bradford cone response matrix, for the chromatic
// adaptation of a white other than sRGB's D65 (DCI-P3's, illuminant C).
var bradford = mat3{{0.8951, 0.2664, -0.1614}, {-0.7502, 1.7135, 0.0367}, {0.0389, -0.0685, 1.0296}}

// toSRGB is the matrix from c's linear RGB to linear sRGB: through XYZ,
// with a Bradford adaptation of c's white to D65 when they differ.
func (c chromaticities) toSRGB() mat3 {
	srgb := h273Primaries[1]
	m := c.toXYZ()
	if c.wx != srgb.wx || c.wy != srgb.wy {
		src, dst := bradford.apply(xyz(c.wx, c.wy)), bradford.apply(xyz(srgb.wx, srgb.wy))
		scale := mat3{{dst[0] / src[0], 0, 0}, {0, dst[1] / src[1], 0}, {0, 0, dst[2] / src[2]}}
		m = bradford.inverse().mul(scale).mul(bradford).mul(m)
	}
	return srgb.toXYZ().inverse().mul(m)
}

// nclxMatrix is the primaries conversion an nclx colour needs, false when
// none: no nclx box, sRGB's primaries (1) or unspecified ones (2), a code
// point H.273 gives no chromaticities for, or an HDR transfer (PQ, HLG),
// which thumbd does not tone-map: its coded values are taken for sRGB
// ones, as before nclx was read (the thumbnail looks flat, but is made).
func nclxMatrix(c thumbjob.NCLX) (mat3, bool) {
	p, ok := h273Primaries[c.Primaries]
	if !ok || c.Primaries == 1 || c.Transfer == transferPQ || c.Transfer == transferHLG {
		return mat3{}, false
	}
	return p.toSRGB(), true
}

// fromNCLX converts a HEIF's pixels, whose colour its nclx box gives, to
// sRGB's primaries. libheif has already turned YUV into RGB by the box's
// matrix coefficients, so what remains is the primaries: in linear light
// (libvips' scRGB, with sRGB's transfer curve, which the SDR curves of
// BT.709 and BT.601 are close to), the 3x3 matrix, then back to 8-bit
// sRGB, which clips what lies outside its gamut. A source with an ICC
// profile keeps the ICC path (finishOn): libheif gives libvips the
// profile, and the profile describes the pixels as its author meant.
// It runs on the thumbnail, after the resize, as the ICC transform does.
func fromNCLX(img *vips.ImageRef, c thumbjob.NCLX) error {
	m, ok := nclxMatrix(c)
	if !ok || img.HasICCProfile() || img.Bands() < 3 {
		return nil
	}
	if err := img.ToColorSpace(vips.InterpretationScRGB); err != nil {
		return err
	}
	if err := recomb(img, m); err != nil {
		return err
	}
	return img.ToColorSpace(vips.InterpretationSRGB)
}

// recomb applies m to img's first three bands, in place, keeping an alpha
// band: img's colour zeroed, then, for each input band j, that band made
// three, scaled by m's column j and added. govips' Recomb is not used: it
// builds its matrix image on Go memory and never frees it (a leak a
// thumbnail), and it reports any stale message in libvips' error buffer
// (a loader's harmless "bad seek") as its own failure.
func recomb(img *vips.ImageRef, m mat3) error {
	alpha := img.Bands() - 3
	keep := append([]float64{0, 0, 0}, make([]float64, alpha)...)
	for i := range alpha {
		keep[3+i] = 1
	}
	var terms []*vips.ImageRef
	defer func() {
		for _, t := range terms {
			t.Close()
		}
	}()
	for j := range 3 {
		t, err := img.ExtractBandToImage(j, 1)
		if err != nil {
			return err
		}
		terms = append(terms, t)
		if err := t.BandJoin(t, t); err != nil {
			return err
		}
		if alpha > 0 {
			if err := t.BandJoinConst(make([]float64, alpha)); err != nil {
				return err
			}
		}
		scale := append([]float64{m[0][j], m[1][j], m[2][j]}, make([]float64, alpha)...)
		if err := t.Linear(scale, make([]float64, len(scale))); err != nil {
			return err
		}
	}
	if err := img.Linear(keep, make([]float64, len(keep))); err != nil {
		return err
	}
	for _, t := range terms {
		if err := img.Add(t); err != nil {
			return err
		}
	}
	return nil
}
