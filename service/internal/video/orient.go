package video

import (
	"fmt"
	"math"
)

// matrix is a display matrix as ISO/IEC 14496-12 stores it (tkhd, mvhd):
// {a, b, u, c, d, v, x, y, w}, a point (p, q) of the decoded frame shown
// at (a*p + c*q + x, b*p + d*q + y); a, b, c, d, x, y in 16.16 fixed
// point, u, v, w in 2.30.
type matrix [9]int32

// identity is the matrix that shows the frame as decoded.
var identity = matrix{1 << 16, 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30}

// times is m*n as ffmpeg's mov demuxer combines a track's matrix with the
// movie's (each product shifted by its row's fixed point: 16, 16, 30).
func (m matrix) times(n matrix) matrix {
	var out matrix
	shift := [3]uint{16, 16, 30}
	for i := range 3 {
		for j := range 3 {
			var sum int64
			for e := range 3 {
				sum += int64(m[i*3+e]) * int64(n[e*3+j]) >> shift[e]
			}
			out[i*3+j] = int32(sum)
		}
	}
	return out
}

// orientation decodes the 2x2 part of a display matrix: the rotation
// clockwise after a left-right flip (as ffmpeg 7's autorotate applies
// it: transpose, hflip and vflip chosen by the signs), and the pixel
// aspect ratio its scale implies (as ffmpeg's mov demuxer derives it:
// the columns' lengths, when they differ by more than 1 %). A matrix
// that turns by another angle than a multiple of 90 degrees is refused:
// ffmpeg would rotate the picture by it, thumbd does not. A degenerate
// matrix (a column of zeros) is read as ffmpeg reads it: not turned.
func (m matrix) orientation() (rotation int, mirror bool, sar [2]int, err error) {
	a, b, c, d := int64(m[0]), int64(m[1]), int64(m[3]), int64(m[4])
	sar = [2]int{1, 1}
	sx, sy := math.Hypot(float64(a), float64(c)), math.Hypot(float64(b), float64(d))
	if sx == 0 || sy == 0 {
		return 0, false, sar, nil
	}
	if r := sx / sy; math.Abs(r-1) > 0.01 && sx < 1<<40 && sy < 1<<40 {
		sar = ratio(int64(math.Round(sx)), int64(math.Round(sy)))
	}
	sign := func(v int64) int {
		switch {
		case v > 0:
			return 1
		case v < 0:
			return -1
		}
		return 0
	}
	switch {
	case b == 0 && c == 0:
		switch [2]int{sign(a), sign(d)} {
		case [2]int{1, 1}:
			return 0, false, sar, nil
		case [2]int{-1, -1}:
			return 180, false, sar, nil
		case [2]int{-1, 1}:
			return 0, true, sar, nil // hflip
		default:
			return 180, true, sar, nil // vflip
		}
	case a == 0 && d == 0:
		switch [2]int{sign(b), sign(c)} {
		case [2]int{1, -1}:
			return 90, false, sar, nil
		case [2]int{-1, 1}:
			return 270, false, sar, nil
		case [2]int{1, 1}:
			return 270, true, sar, nil // transpose
		default:
			return 90, true, sar, nil // transverse
		}
	}
	// ffmpeg's av_display_rotation_get, counterclockwise.
	angle := -math.Atan2(float64(b)/sy, float64(a)/sx) * 180 / math.Pi
	return 0, false, sar, fmt.Errorf("%w: a display matrix that turns the picture by %.1f degrees", ErrNotServed, -angle)
}

// ratio is p:q in lowest terms.
func ratio(p, q int64) [2]int {
	g := gcd(p, q)
	if g == 0 {
		return [2]int{1, 1}
	}
	p, q = p/g, q/g
	for p > math.MaxInt32 || q > math.MaxInt32 {
		p, q = p>>1, q>>1
	}
	if p == 0 || q == 0 {
		return [2]int{1, 1}
	}
	return [2]int{int(p), int(q)}
}

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// displaySize is the picture as shown: the width scaled by the pixel
// aspect ratio, then the sides swapped for a quarter turn. A pixel
// aspect ratio past 16:1 either way is refused: no camera or encoder
// writes one, and it would make a picture of one pixel's width.
func displaySize(info *Info) error {
	w, h, sar := info.Width, info.Height, info.SampleAspect
	if sar[0] <= 0 || sar[1] <= 0 || sar[0] > 16*sar[1] || sar[1] > 16*sar[0] {
		return fmt.Errorf("a pixel aspect ratio of %d:%d", sar[0], sar[1])
	}
	if sar[0] != sar[1] {
		w = int(math.Round(float64(w) * float64(sar[0]) / float64(sar[1])))
	}
	if info.Rotation == 90 || info.Rotation == 270 {
		w, h = h, w
	}
	info.DisplayWidth, info.DisplayHeight = w, h
	return nil
}

// rollOrientation is Matroska's rectangular Projection as ffmpeg's
// demuxer reads it (mkv_create_display_matrix): the roll a
// counterclockwise rotation, a yaw of 180 degrees a left-right flip
// applied after it, any other pose (a pitch, another yaw) ignored.
func rollOrientation(yaw, pitch, roll float64) (rotation int, mirror bool, err error) {
	if pitch != 0 || (yaw != 0 && yaw != 180 && yaw != -180) || math.IsNaN(roll) || math.IsInf(roll, 0) || (yaw == 0 && roll == 0) {
		return 0, false, nil
	}
	r := math.Mod(roll, 360)
	if r < 0 {
		r += 360
	}
	if r != math.Round(r/90)*90 {
		return 0, false, fmt.Errorf("%w: a projection that turns the picture by %.1f degrees", ErrNotServed, roll)
	}
	// Counterclockwise by r is clockwise by -r; a flip after turning
	// clockwise by r is the flip first, then the turn by -r: the same.
	cw := (360 - int(r)%360) % 360
	return cw, yaw != 0, nil
}
