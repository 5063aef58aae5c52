package videodecode

import (
	"fmt"
	"testing"
)

// The sources of the colour tests: testsrc2 (sRGB) converted by zimg
// into each colour space, so that its colours lie inside the target's
// gamut, as a camera's would.
func toColour(transfer, primaries, matrix, format string, npl int) string {
	return fmt.Sprintf("format=gbrp,zscale=tin=iec61966-2-1:pin=709:min=gbr:rin=full:t=%s:p=%s:m=%s:r=limited:npl=%d:agamma=0,format=%s",
		transfer, primaries, matrix, npl, format)
}

func tags(transfer, primaries, matrix string) []string {
	return []string{"-color_trc", transfer, "-color_primaries", primaries, "-colorspace", matrix}
}

// zimgHDR is the conversion of the ADR in FFmpeg's filters: to light with
// 100 cd/m2 as 1.0 (BT.2100's HLG display, agamma=0: the OOTF on the
// luminance), BT.2020 to BT.709 primaries, Hable's curve on the largest
// component (desat=0) with the picture's peak, the sRGB curve.
func zimgHDR(c Colour) string {
	return fmt.Sprintf("zscale=f=bilinear:d=none:t=linear:npl=%d:agamma=0,format=gbrpf32le,zscale=p=bt709,"+
		"tonemap=tonemap=hable:desat=0:peak=%g,zscale=t=iec61966-2-1:d=none,format=gbrp", refWhite, c.Peak/refWhite)
}

// zimgGamut converts SDR of other primaries as we do: through light, the
// sRGB curve both ways.
func zimgGamut(Colour) string {
	return "zscale=f=bilinear:d=none:tin=iec61966-2-1:t=iec61966-2-1:p=709,format=gbrp"
}

// hdrTolerance is the mean difference per channel allowed against
// zimgHDR. The arithmetic is the same; ours reads the transfer curves
// from 4097-entry tables, interpolated, and the light into 8 bits from a
// 16384-entry one: a level now and then (measured 0.006 for PQ). HLG's
// signal past 1.09 (narrow-range overshoot on testsrc2's saturated
// edges) is clipped where zimg extrapolates: a few pixels far off,
// measured 0.21 over the frame.
const hdrTolerance = 0.5

// TestColourMatchesZimg: HDR (PQ with its light level metadata, HLG) and
// SDR of wider or other primaries, each held to FFmpeg's filters doing
// the same conversion; FFmpeg's plain rgb24 (no tone map, no gamut) is
// logged beside, to show what the conversion changes.
func TestColourMatchesZimg(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	cases := []struct {
		clip clip
		peak float64
		ref  func(Colour) string
	}{
		{clip{name: "pq.mp4", filter: toColour("smpte2084", "2020", "2020_ncl", "yuv420p10le", 1000),
			args: join(x265, []string{"-x265-params", "log-level=error:keyint=24:hdr10=1:max-cll=4000,400:master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,50)"},
				tags("smpte2084", "bt2020", "bt2020nc"))}, 4000, zimgHDR},
		{clip{name: "pq-bare.mkv", filter: toColour("smpte2084", "2020", "2020_ncl", "yuv420p10le", 1000),
			args: join(x265, tags("smpte2084", "bt2020", "bt2020nc"))}, defaultPeak, zimgHDR},
		{clip{name: "hlg.mov", filter: toColour("arib-std-b67", "2020", "2020_ncl", "yuv420p10le", 1000),
			args: join(x265, tags("arib-std-b67", "bt2020", "bt2020nc"))}, defaultPeak, zimgHDR},
		{clip{name: "hlg.webm", filter: toColour("arib-std-b67", "2020", "2020_ncl", "yuv420p10le", 1000),
			args: join(vp9, []string{"-profile:v", "2"}, tags("arib-std-b67", "bt2020", "bt2020nc"))}, defaultPeak, zimgHDR},
		{clip{name: "sdr2020.mp4", filter: toColour("iec61966-2-1", "2020", "2020_ncl", "yuv420p", 100),
			args: join(x265, tags("bt709", "bt2020", "bt2020nc"))}, 0, zimgGamut},
		{clip{name: "sdr170m.mp4", filter: toColour("iec61966-2-1", "170m", "170m", "yuv420p", 100),
			args: join(x264, tags("smpte170m", "smpte170m", "smpte170m"))}, 0, zimgGamut},
	}
	for _, c := range cases {
		c.clip.size, c.clip.seconds = "320x240", 2
		t.Run(c.clip.name, func(t *testing.T) {
			t.Parallel()
			path := c.clip.make(t, dir)
			info, f := frameAt(t, path, 1.3)
			pic, err := Decode(info, f, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if pic.Colour.Peak != c.peak {
				t.Errorf("peak %g cd/m2, want %g", pic.Colour.Peak, c.peak)
			}
			z := meanDiff(t, pic.Pix, ffmpegFrame(t, path, f.Time, c.ref(pic.Colour), "rgb24"))
			s := meanDiff(t, pic.Pix, ffmpegFrame(t, path, f.Time, "", "rgb24"))
			t.Logf("%+v: mean difference from zimg %.3f %.3f %.3f, from plain rgb24 %.1f %.1f %.1f", pic.Colour, z[0], z[1], z[2], s[0], s[1], s[2])
			if worst(z) > hdrTolerance {
				t.Errorf("mean difference %.3f from zimg, over %g", worst(z), hdrTolerance)
			}
		})
	}
}
