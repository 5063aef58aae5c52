package primaries

import (
	"math"
	"testing"
)

// TestToSRGB holds the matrices to published ones: BT.2020 to BT.709 from
// ITU-R BT.2087 (its equation 5, four decimals), Display P3 to sRGB as
// Apple's and the CSS Color 4 specification's (four decimals).
func TestToSRGB(t *testing.T) {
	cases := []struct {
		code int
		want Matrix
	}{
		{9, Matrix{{1.6605, -0.5876, -0.0728}, {-0.1246, 1.1329, -0.0083}, {-0.0182, -0.1006, 1.1187}}},
		{12, Matrix{{1.2249, -0.2247, 0}, {-0.0420, 1.0419, 0}, {-0.0197, -0.0786, 1.0979}}},
	}
	for _, c := range cases {
		m, ok := ToSRGB(c.code)
		if !ok {
			t.Fatalf("%d: no matrix", c.code)
		}
		for i := range 3 {
			for j := range 3 {
				if math.Abs(m[i][j]-c.want[i][j]) > 0.0006 {
					t.Errorf("%d: [%d][%d] = %.4f, want %.4f", c.code, i, j, m[i][j], c.want[i][j])
				}
			}
		}
	}
}

// TestWhiteStaysWhite: every matrix maps its white (1, 1, 1) to sRGB's,
// the Bradford adaptation included (DCI-P3's white, illuminant C's).
func TestWhiteStaysWhite(t *testing.T) {
	for code := range h273 {
		m, ok := ToSRGB(code)
		if code == SRGB {
			if ok {
				t.Error("sRGB converts to itself")
			}
			continue
		}
		w := m.Apply([3]float64{1, 1, 1})
		for i := range 3 {
			if math.Abs(w[i]-1) > 1e-9 {
				t.Errorf("%d: white to %v", code, w)
				break
			}
		}
	}
	for _, code := range []int{0, 2, 3, 10, 13, 23} {
		if _, ok := ToSRGB(code); ok || Known(code) {
			t.Errorf("%d: has a matrix", code)
		}
	}
}

// TestLuminance: BT.2020's weights are BT.2100's (0.2627, 0.6780, 0.0593),
// BT.709's its own (0.2126, 0.7152, 0.0722).
func TestLuminance(t *testing.T) {
	for code, want := range map[int][3]float64{9: {0.2627, 0.6780, 0.0593}, 1: {0.2126, 0.7152, 0.0722}, 2: {0.2126, 0.7152, 0.0722}} {
		got := Luminance(code)
		for i := range 3 {
			if math.Abs(got[i]-want[i]) > 0.0001 {
				t.Errorf("%d: %.4f, want %.4f", code, got, want)
				break
			}
		}
	}
}
