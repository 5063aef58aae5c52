package thumb

import (
	"github.com/davidbyttow/govips/v2/vips"

	"github.com/thumbd/thumbd/service/internal/primaries"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// H.273's transfer characteristics that are HDR: PQ (SMPTE ST 2084) and
// HLG (ARIB STD-B67).
const (
	transferPQ  = 16
	transferHLG = 18
)

// nclxMatrix is the primaries conversion an nclx colour needs, false when
// none: no nclx box, sRGB's primaries (1) or unspecified ones (2), a code
// point H.273 gives no chromaticities for, or an HDR transfer (PQ, HLG),
// which thumbd does not tone-map: its coded values are taken for sRGB
// ones, as before nclx was read (the thumbnail looks flat, but is made).
func nclxMatrix(c thumbjob.NCLX) (primaries.Matrix, bool) {
	if c.Transfer == transferPQ || c.Transfer == transferHLG {
		return primaries.Matrix{}, false
	}
	return primaries.ToSRGB(c.Primaries)
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
func recomb(img *vips.ImageRef, m primaries.Matrix) error {
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
