package video

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const one = 1 << 16 // 1.0 in 16.16

// orientations are the eight display matrices of a right angle, with and
// without a flip, as {a, b, c, d}, and what each shows: the clockwise
// turn after a left-right flip, and the EXIF orientation of the same.
var orientations = []struct {
	name           string
	abcd           [4]int32
	rotation       int
	mirror         bool
	exif           int
	ffprobeDegrees int // av_display_rotation_get, counterclockwise
}{
	{"identity", [4]int32{one, 0, 0, one}, 0, false, 1, 0},
	{"hflip", [4]int32{-one, 0, 0, one}, 0, true, 2, -180},
	{"180", [4]int32{-one, 0, 0, -one}, 180, false, 3, -180},
	{"vflip", [4]int32{one, 0, 0, -one}, 180, true, 4, 0},
	{"transpose", [4]int32{0, one, one, 0}, 270, true, 5, -90},
	{"90 clockwise", [4]int32{0, one, -one, 0}, 90, false, 6, -90},
	{"transverse", [4]int32{0, -one, -one, 0}, 90, true, 7, 90},
	{"270 clockwise", [4]int32{0, -one, one, 0}, 270, false, 8, 90},
}

func withABCD(abcd [4]int32) matrix {
	return matrix{abcd[0], abcd[1], 0, abcd[2], abcd[3], 0, 0, 0, 1 << 30}
}

// The flip and the turn each matrix decodes to move a test point where
// the matrix moves it: the reading is the matrix, not a table of it.
func TestOrientationMovesPointsAsTheMatrix(t *testing.T) {
	for _, o := range orientations {
		rotation, mirror, sar, err := withABCD(o.abcd).orientation()
		if err != nil || rotation != o.rotation || mirror != o.mirror || sar != [2]int{1, 1} {
			t.Errorf("%s: %d %v %v %v", o.name, rotation, mirror, sar, err)
		}
		if got := (Info{Rotation: rotation, Mirror: mirror}).Orientation(); got != o.exif {
			t.Errorf("%s: EXIF orientation %d, want %d", o.name, got, o.exif)
		}
		// (p, q) = (2, 1): the matrix shows it at (a*p + c*q, b*p + d*q).
		a, b, c, d := o.abcd[0]/one, o.abcd[1]/one, o.abcd[2]/one, o.abcd[3]/one
		want := [2]int32{a*2 + c*1, b*2 + d*1}
		p, q := int32(2), int32(1)
		if mirror {
			p = -p
		}
		for range rotation / 90 { // a quarter turn clockwise, y down
			p, q = -q, p
		}
		if [2]int32{p, q} != want {
			t.Errorf("%s: (2, 1) shown at %v, the matrix says %v", o.name, [2]int32{p, q}, want)
		}
	}
}

func TestOrientationRefusesOtherAngles(t *testing.T) {
	c, s := int32(math.Round(one*math.Cos(math.Pi/4))), int32(math.Round(one*math.Sin(math.Pi/4)))
	if _, _, _, err := withABCD([4]int32{c, s, -s, c}).orientation(); !errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), "45.0 degrees") {
		t.Errorf("45 degrees: %v", err)
	}
	// Degenerate: ffmpeg turns nothing, nor does the reader.
	if r, m, _, err := withABCD([4]int32{0, 0, 0, 0}).orientation(); err != nil || r != 0 || m {
		t.Errorf("degenerate: %d %v %v", r, m, err)
	}
	// A scale is a pixel aspect ratio, as ffmpeg derives it.
	if _, _, sar, err := withABCD([4]int32{2 * one, 0, 0, one}).orientation(); err != nil || sar != [2]int{2, 1} {
		t.Errorf("scaled: %v %v", sar, err)
	}
}

// Matroska's Projection, read as ffmpeg 7 reads it: the matrix it builds
// (av_display_rotation_set of the roll, negated without a flip, then
// av_display_matrix_flip for a yaw of 180) is the one the reader's
// turn and flip describe.
func TestRollOrientationIsFFmpegs(t *testing.T) {
	for _, yaw := range []float64{0, 180, -180} {
		for _, roll := range []float64{0, 90, 180, 270, -90, 450} {
			hflip := 0.0
			if yaw != 0 {
				hflip = 1
			}
			angle := roll * (2*hflip - 1)
			rad := -angle * math.Pi / 180
			cos, sin := math.Cos(rad), math.Sin(rad)
			m := withABCD([4]int32{int32(math.Round(cos * one)), int32(math.Round(-sin * one)), int32(math.Round(sin * one)), int32(math.Round(cos * one))})
			if hflip == 1 {
				m[0], m[3], m[6] = -m[0], -m[3], -m[6]
			}
			wantR, wantM, _, _ := m.orientation()
			if yaw == 0 && roll == 0 {
				wantR, wantM = 0, false
			}
			r, mirror, err := rollOrientation(yaw, 0, roll)
			if err != nil || r != wantR || mirror != wantM {
				t.Errorf("yaw %v roll %v: %d %v %v, ffmpeg's matrix says %d %v", yaw, roll, r, mirror, err, wantR, wantM)
			}
		}
	}
	if _, _, err := rollOrientation(0, 0, 30); !errors.Is(err, ErrNotServed) {
		t.Errorf("a roll of 30: %v", err)
	}
	if r, m, err := rollOrientation(0, 10, 90); err != nil || r != 0 || m {
		t.Errorf("a pitch is ignored, as ffmpeg ignores it: %d %v %v", r, m, err)
	}
}

// patchMatrix writes m over the matrix of the first box of the type
// (tkhd or mvhd, version 0) in an MP4 file.
func patchMatrix(t *testing.T, b []byte, typ string, m matrix) []byte {
	t.Helper()
	i := bytes.Index(b, []byte(typ))
	if i < 4 || b[i+4] != 0 {
		t.Fatalf("no version 0 %s", typ)
	}
	at := i + 4 + map[string]int{"tkhd": 40, "mvhd": 36}[typ]
	out := bytes.Clone(b)
	for k, v := range m {
		binary.BigEndian.PutUint32(out[at+4*k:], uint32(v))
	}
	return out
}

// Every orientation patched into a real file's tkhd (and one into mvhd
// too, which combines) is read by ffprobe as the same matrix, and its
// rotation is the one the reader gives.
func TestDisplayMatrixAgainstFFprobe(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	dir := t.TempDir()
	base, err := os.ReadFile(recipe{name: "base.mp4", args: x264}.make(t, dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name       string
		tkhd, mvhd matrix
		rotation   int
		mirror     bool
		ffprobe    int
	}
	var cases []tc
	for _, o := range orientations {
		cases = append(cases, tc{o.name, withABCD(o.abcd), identity, o.rotation, o.mirror, o.ffprobeDegrees})
	}
	quarter := withABCD([4]int32{0, one, -one, 0})
	cases = append(cases, tc{"90 and 90 in mvhd", quarter, quarter, 180, false, -180})
	for _, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".mp4")
		b := patchMatrix(t, patchMatrix(t, base, "tkhd", c.tkhd), "mvhd", c.mvhd)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := Open(bytes.NewReader(b), int64(len(b)), DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if i := v.Info(); i.Rotation != c.rotation || i.Mirror != c.mirror {
			t.Errorf("%s: %d %v, want %d %v", c.name, i.Rotation, i.Mirror, c.rotation, c.mirror)
		}
		out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v", "-show_streams", "-of", "json", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Streams []struct {
				SideData []struct {
					Matrix   string `json:"displaymatrix"`
					Rotation int    `json:"rotation"`
				} `json:"side_data_list"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		want := c.tkhd.times(c.mvhd)
		got := identity // no side data: the identity
		rotation := 0
		if sd := p.Streams[0].SideData; len(sd) > 0 {
			got, rotation = parseDisplayMatrix(t, sd[0].Matrix), sd[0].Rotation
		}
		if got != want {
			t.Errorf("%s: ffprobe reads %v, the reader %v", c.name, got, want)
		}
		if rotation != c.ffprobe && !(rotation == 180 && c.ffprobe == -180) {
			t.Errorf("%s: ffprobe's rotation %d, want %d", c.name, rotation, c.ffprobe)
		}
	}
}

// parseDisplayMatrix reads ffprobe's printed matrix: three rows of three
// integers, each row after its index.
func parseDisplayMatrix(t *testing.T, s string) matrix {
	t.Helper()
	var m matrix
	k := 0
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		_, rest, _ := strings.Cut(line, ":")
		for _, f := range strings.Fields(rest) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil || k == 9 {
				t.Fatalf("display matrix %q", s)
			}
			m[k] = int32(v)
			k++
		}
	}
	return m
}
