package videodecode

import (
	"fmt"
	"math"

	"github.com/thumbd/thumbd/service/internal/primaries"
	"github.com/thumbd/thumbd/service/internal/video"
)

// ISO/IEC 23091-2 code points (FFmpeg's AVCOL_* enums are the same
// numbers).
const (
	unspecified = 2
	reserved    = 3

	matrixRGB    = 0
	matrixBT709  = 1
	matrixFCC    = 4
	matrixBT470  = 5
	matrix170M   = 6
	matrix240M   = 7
	matrixYCgCo  = 8
	matrix2020NC = 9
	matrix2020C  = 10

	primariesBT709 = 1
	primaries2020  = 9
	primariesXYZ   = 10

	transferPQ  = 16
	transferHLG = 18

	rangeLimited = 1
	rangeFull    = 2
)

// frameInfo is the C side's vd_frame in Go.
type frameInfo struct {
	Width, Height                                 int
	PTS                                           int64
	Corrupt                                       bool
	Matrix, Range, Primaries, Transfer, ChromaLoc int
	Supported                                     bool
	Depth, Log2ChromaW, Log2ChromaH, Components   int
	RGB                                           bool
	Format                                        string
	MaxCLL, MaxLuminance                          float64
	// SampleAspect is the pixel aspect ratio the bitstream says; {0, 1}
	// or {0, 0} when it says none.
	SampleAspect [2]int
}

// conversion is the C side's vd_conv, with its two tables.
type conversion struct {
	K                  [3][4]float32
	HCosited, VCosited bool
	Linear             bool
	HLG                bool
	HLGGain, HLGExp    float32
	Ys                 [3]float32
	Gamut              [3][3]float32
	Tonemap            bool
	Peak               float32
	EOTF               []float32 // 4097 entries over the signal 0..EOTFMax
	EOTFMax            float32
	OETF               []uint8 // 16384 entries over the light 0..1
}

// Colour is what a picture's conversion read: the bitstream's code
// points where it says them, else the container's, else the defaults
// (decideColour).
type Colour struct {
	Matrix, Primaries, Transfer int
	FullRange                   bool
	// Peak is the light mapped to SDR white by the tone map (cd/m2); 0
	// for SDR.
	Peak float64
}

// decideColour: each code point from the bitstream, else the container,
// else a default. An unspecified matrix is BT.709 from 1280x720 up and
// BT.601 below (what players and browsers assume); unspecified primaries
// are BT.709's; an unspecified range is limited, but full for RGB.
func decideColour(fr frameInfo, c video.Colour) Colour {
	pick := func(stream, container int) int {
		if stream != unspecified && stream != reserved {
			return stream
		}
		return container
	}
	col := Colour{
		Matrix:    pick(fr.Matrix, c.Matrix),
		Primaries: pick(fr.Primaries, c.Primaries),
		Transfer:  pick(fr.Transfer, c.Transfer),
	}
	if col.Matrix == unspecified || col.Matrix == reserved {
		col.Matrix = matrix170M
		if fr.Width >= 1280 || fr.Height >= 720 {
			col.Matrix = matrixBT709
		}
	}
	if fr.RGB {
		col.Matrix = matrixRGB
	}
	if col.Primaries == unspecified || col.Primaries == reserved {
		col.Primaries = primariesBT709
	}
	switch fr.Range {
	case rangeFull:
		col.FullRange = true
	case rangeLimited:
	default:
		col.FullRange = c.FullRange || fr.RGB
	}
	return col
}

// kr and kb are each YCbCr matrix's luma weights of red and blue.
var lumaWeights = map[int][2]float64{
	matrixBT709:  {0.2126, 0.0722},
	matrixFCC:    {0.30, 0.11},
	matrixBT470:  {0.299, 0.114},
	matrix170M:   {0.299, 0.114},
	matrix240M:   {0.212, 0.087},
	matrix2020NC: {0.2627, 0.0593},
	// The constant-luminance form read as the non-constant one, as
	// FFmpeg's swscale reads it: rare, and near.
	matrix2020C: {0.2627, 0.0593},
}

// plan decides the conversion of a decoded frame into 8-bit sRGB.
func plan(fr frameInfo, container video.Colour) (conversion, Colour, error) {
	var cv conversion
	col := decideColour(fr, container)
	if fr.RGB != (col.Matrix == matrixRGB) {
		return cv, col, fmt.Errorf("%w: a %s frame with matrix coefficients %d", video.ErrNotServed, fr.Format, col.Matrix)
	}
	// rows: R', G', B' from (Y', Pb, Pr) or, for RGB, from (G, B, R).
	var rows [3][3]float64
	switch col.Matrix {
	case matrixRGB:
		rows = [3][3]float64{{0, 0, 1}, {1, 0, 0}, {0, 1, 0}}
	case matrixYCgCo: // Pb is Cg, Pr is Co
		rows = [3][3]float64{{1, -1, 1}, {1, 1, 0}, {1, -1, -1}}
	default:
		w, ok := lumaWeights[col.Matrix]
		if !ok {
			return cv, col, fmt.Errorf("%w: matrix coefficients %d", video.ErrNotServed, col.Matrix)
		}
		kr, kb := w[0], w[1]
		kg := 1 - kr - kb
		rows = [3][3]float64{
			{1, 0, 2 * (1 - kr)},
			{1, -2 * kb * (1 - kb) / kg, -2 * kr * (1 - kr) / kg},
			{1, 2 * (1 - kb), 0},
		}
	}
	// The samples' offsets and ranges at the frame's depth.
	d := float64(int(1) << (fr.Depth - 8))
	yOff, yRange, cOff, cRange := 16*d, 219*d, 128*d, 224*d
	if col.FullRange {
		full := float64(int(1)<<fr.Depth - 1)
		yOff, yRange, cOff, cRange = 0, full, float64(int(1)<<(fr.Depth-1)), full
	}
	off, scale := [3]float64{yOff, cOff, cOff}, [3]float64{yRange, cRange, cRange}
	if col.Matrix == matrixRGB {
		off, scale = [3]float64{yOff, yOff, yOff}, [3]float64{yRange, yRange, yRange}
	}
	if fr.Components == 1 { // grey: no chroma planes, the C side reads 0
		for i := range rows {
			rows[i][1], rows[i][2] = 0, 0
		}
	}

	hdr := col.Transfer == transferPQ || col.Transfer == transferHLG
	gamut, convert, err := gamutTo709(col.Primaries)
	if err != nil {
		return cv, col, err
	}
	if !convert {
		gamut = primaries.Matrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	}
	cv.Linear = hdr || convert
	out := 1.0 // the signal 0..1 into the linear path
	if !cv.Linear {
		out = 255 // 8-bit values straight
	}
	for i := range rows {
		var c float64
		for j := range 3 {
			cv.K[i][j] = float32(out * rows[i][j] / scale[j])
			c -= rows[i][j] * off[j] / scale[j]
		}
		cv.K[i][3] = float32(out * c)
	}
	// Chroma siting (AVChromaLocation): horizontally co-sited with the
	// even luma samples unless centred (center, top, bottom); vertically
	// centred unless on the top row (topleft, top). Unspecified is
	// MPEG-2's, H.264's and HEVC's default: left.
	cv.HCosited = fr.ChromaLoc != 2 && fr.ChromaLoc != 4 && fr.ChromaLoc != 6
	cv.VCosited = fr.ChromaLoc == 3 || fr.ChromaLoc == 4
	if !cv.Linear {
		return cv, col, nil
	}
	for i := range 3 {
		for j := range 3 {
			cv.Gamut[i][j] = float32(gamut[i][j])
		}
	}
	cv.OETF = oetfTable()
	// Narrow-range signals go past 1.0 (super-whites; BT.2100 allows
	// HLG's, and saturated edges overshoot) and below 0 (colours outside
	// the gamut): read up to 1.09 (10-bit code 1019), negative ones
	// mirrored, as FFmpeg's zscale reads them.
	cv.EOTFMax = signalMax
	eotf := srgbEOTF
	switch col.Transfer {
	case transferPQ:
		eotf = func(v float64) float64 { return pqEOTF(v) / refWhite }
	case transferHLG:
		// BT.2100's HLG display: scene light E, then the OOTF
		// Lw * Ys^(gamma-1) * E for a 1000 cd/m2 display (gamma 1.2).
		eotf = hlgInverseOETF
		cv.HLG, cv.HLGGain, cv.HLGExp = true, hlgPeak/refWhite, hlgGamma-1
		y := primaries.Luminance(col.Primaries)
		cv.Ys = [3]float32{float32(y[0]), float32(y[1]), float32(y[2])}
	}
	cv.EOTF = table(4097, func(v float64) float64 { return eotf(v * signalMax) })
	if hdr {
		col.Peak = peakOf(fr)
		cv.Tonemap, cv.Peak = true, float32(col.Peak/refWhite)
	}
	return cv, col, nil
}

// The HDR conversion's constants (docs/adr/0008-video-decoders.md): light
// in units of refWhite cd/m2, the SDR white FFmpeg's usual recipe maps
// (zscale npl=100); HLG shown on a display of hlgPeak.
const (
	refWhite    = 100
	hlgPeak     = 1000
	hlgGamma    = 1.2
	defaultPeak = 1000
	// signalMax is the largest signal read: (1019-64)/876.
	signalMax = 1.09
)

// peakOf is the brightest light the stream says it holds: its content
// light level (MaxCLL), else its mastering display's peak, else 1000
// cd/m2 (BT.2408's usual grade); within 100..10000.
func peakOf(fr frameInfo) float64 {
	p := float64(defaultPeak)
	switch {
	case fr.MaxCLL > 0:
		p = fr.MaxCLL
	case fr.MaxLuminance > 0:
		p = fr.MaxLuminance
	}
	return math.Min(math.Max(p, refWhite), 10000)
}

func table(n int, f func(float64) float64) []float32 {
	t := make([]float32, n)
	for i := range t {
		t[i] = float32(f(float64(i) / float64(n-1)))
	}
	return t
}

func oetfTable() []uint8 {
	t := make([]uint8, 16384)
	for i := range t {
		t[i] = uint8(math.Round(255 * srgbOETF(float64(i)/16383)))
	}
	return t
}

// pqEOTF is SMPTE ST 2084's: the signal 0..1 to cd/m2.
func pqEOTF(e float64) float64 {
	const m1, m2 = 2610.0 / 16384, 2523.0 / 4096 * 128
	const c1, c2, c3 = 3424.0 / 4096, 2413.0 / 4096 * 32, 2392.0 / 4096 * 32
	p := math.Pow(e, 1/m2)
	return 10000 * math.Pow(math.Max(p-c1, 0)/(c2-c3*p), 1/m1)
}

// hlgInverseOETF is BT.2100's: the HLG signal 0..1 to scene light 0..1.
func hlgInverseOETF(e float64) float64 {
	const a, b, c = 0.17883277, 1 - 4*0.17883277, 0.55991073
	if e <= 0.5 {
		return e * e / 3
	}
	return (math.Exp((e-c)/a) + b) / 12
}

func srgbEOTF(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func srgbOETF(v float64) float64 {
	if v <= 0.0031308 {
		return 12.92 * v
	}
	return 1.055*math.Pow(v, 1/2.4) - 0.055
}

// gamutTo709 is the linear-light matrix from the primaries to BT.709's
// (sRGB's), false when there is none to apply: BT.709's own, or a code
// point without chromaticities, read as BT.709's as players read it.
// XYZ (SMPTE ST 428) is refused.
func gamutTo709(code int) (primaries.Matrix, bool, error) {
	if code == primariesXYZ {
		return primaries.Matrix{}, false, fmt.Errorf("%w: colour primaries %d (XYZ)", video.ErrNotServed, code)
	}
	m, ok := primaries.ToSRGB(code)
	return m, ok, nil
}
