package imgproxy

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// option is one path segment NAME:ARG:ARG.
type option struct {
	name string
	args []string
}

// state is the options as imgproxy holds them (later ones override
// earlier ones, presets applied where they are named), made into
// thumbd's values once all are read (asked).
type state struct {
	width, height       int
	minWidth, minHeight int
	rt                  string
	enlarge             bool
	extend              bool
	extendGravity       *gravity
	extendAspect        bool
	extendAspectGravity *gravity
	gravity             gravity
	zoomW, zoomH        float64
	dpr                 float64
	cropW, cropH        float64
	crop                bool
	cropGravity         *gravity
	trim                *thumbjob.Trim
	pad                 [4]int
	bg                  *thumbjob.Colour
	rotate              int
	flipH, flipV        bool
	blur, sharpen       float64
	pixelate            int
	wm                  *thumbjob.Watermark
	quality             int
	maxBytes            int
	stripMetadata       bool
	keepCopyright       bool
	frame               thumbjob.Frame // vts, vtk (imgproxy Pro's)
	formatQuality       map[imagefmt.Format]int
	format              imagefmt.Format
	raw                 bool
	skip                []imagefmt.Format // skip_processing's formats
	expires             time.Time
	filename            string
	attachment          bool
	// by is, for each of thumbd's options (fields), the option of this
	// URL (or its presets) that last set it, as written, and whether the
	// URL's own options did (not a preset).
	by [len(fields)]struct {
		name   string
		client bool
	}
}

// fields are thumbd's names of the options a URL sets (params.Asked's).
var fields = [...]string{"w", "h", "q", "dpr", "fit", "enlarge", "extend", "gravity", "fx", "fy", "crop",
	"trim", "pad", "bg", "rotate", "flip", "blur", "sharpen", "pixelate", "wm", "format", "min", "extend_ar", "offset", "max_bytes", "as_is", "t", "keyframe"}

// field is the index of thumbd's option name in fields (-1: none).
func field(name string) int {
	for i, f := range fields {
		if f == name {
			return i
		}
	}
	return -1
}

func newState() *state {
	return &state{rt: "fit", gravity: gravity{kind: "ce"}, zoomW: 1, zoomH: 1, dpr: 1, stripMetadata: true, keepCopyright: true}
}

// gravity is imgproxy's gravity: a type and its offsets or focal point.
type gravity struct {
	kind   string
	x, y   float64
	offset bool // x or y given as offsets (non-zero)
}

// refused are imgproxy's options thumbd does not do (its Pro options
// among them), named in their 400 rather than reported unknown.
var refused = map[string]string{
	"preserve_hdr": "", "ph": "preserve_hdr", "enforce_thumbnail": "", "eth": "enforce_thumbnail",
	"max_src_resolution": "", "msr": "max_src_resolution", "max_src_file_size": "", "msfs": "max_src_file_size",
	"max_animation_frames": "", "maf": "max_animation_frames", "max_animation_frame_resolution": "", "mafr": "max_animation_frame_resolution",
	"max_result_dimension": "", "mrd": "max_result_dimension",
	// Pro
	"resizing_algorithm": "", "ra": "resizing_algorithm", "adjust": "", "a": "adjust", "brightness": "", "br": "brightness",
	"contrast": "", "co": "contrast", "saturation": "", "sa": "saturation", "monochrome": "", "mc": "monochrome",
	"duotone": "", "dt": "duotone", "unsharp_masking": "", "ush": "unsharp_masking", "blur_detections": "", "bd": "blur_detections",
	"draw_detections": "", "dd": "draw_detections", "colorize": "", "col": "colorize", "gradient": "", "gr": "gradient",
	"watermark_url": "", "wmu": "watermark_url", "watermark_text": "", "wmt": "watermark_text", "watermark_size": "", "wms": "watermark_size",
	"watermark_rotate": "", "wm_rot": "watermark_rotate", "wmr": "watermark_rotate", "watermark_shadow": "", "wmsh": "watermark_shadow",
	"style": "", "st": "style", "autoquality": "", "aq": "autoquality", "jpeg_options": "", "jpgo": "jpeg_options",
	"png_options": "", "pngo": "png_options", "webp_options": "", "webpo": "webp_options", "avif_options": "", "avifo": "avif_options",
	"page": "", "pg": "page", "pages": "", "pgs": "pages", "disable_animation": "", "da": "disable_animation",
	"video_thumbnail_second": "", "vts": "video_thumbnail_second", "video_thumbnail_keyframes": "", "vtk": "video_thumbnail_keyframes",
	"video_thumbnail_tile": "", "vtt": "video_thumbnail_tile", "video_thumbnail_animation": "", "vta": "video_thumbnail_animation",
	"fallback_image_url": "", "fiu": "fallback_image_url", "hashsum": "", "hs": "hashsum", "objects_position": "", "op": "objects_position",
	"crop_aspect_ratio": "", "crop_ar": "crop_aspect_ratio", "car": "crop_aspect_ratio", "smart_subsample": "", "ss": "smart_subsample",
}

// badOption is the 400 of option name (as the URL wrote it).
func badOption(name, format string, args ...any) error {
	return apierr.New(apierr.BadParameter, "imgproxy option %q %s.", name, fmt.Sprintf(format, args...))
}

// apply applies opts in order; used are the presets being applied (a
// preset naming one of them is skipped, as imgproxy does).
func (s *state) apply(c Config, opts []option, used []string) error {
	for _, o := range opts {
		if err := s.set(c, o, used); err != nil {
			return err
		}
	}
	return nil
}

// set applies one option with imgproxy's argument rules, and records
// which of thumbd's options it set, and whether the URL's own options
// (used is empty) or a preset did.
func (s *state) set(c Config, o option, used []string) error {
	n, a := o.name, o.args
	if n == "preset" || n == "pr" {
		return s.presets(c, n, a, used)
	}
	st, ok := setters[n]
	if !ok {
		if full, ok := refused[n]; ok {
			if full == "" {
				full = n
			}
			return badOption(n, "(%s) is an imgproxy option thumbd does not do", full)
		}
		return badOption(n, "is not an imgproxy option thumbd knows")
	}
	if st.max > 0 && len(a) > st.max {
		return badOption(n, "takes at most %d arguments, not %d", st.max, len(a))
	}
	if err := st.set(s, c, n, a, used); err != nil {
		return err
	}
	for _, f := range st.sets {
		i := field(f)
		s.by[i].name, s.by[i].client = n, len(used) == 0
	}
	return nil
}

// setter is one imgproxy option: its most arguments (0: its setter
// checks), how it applies them, and thumbd's options it sets.
type setter struct {
	max  int
	set  func(s *state, c Config, n string, a []string, used []string) error
	sets []string
}

// setters are the options thumbd does, by every name imgproxy gives them.
var setters = func() map[string]setter {
	m := map[string]setter{}
	add := func(names []string, st setter) {
		for _, n := range names {
			m[n] = st
		}
	}
	add([]string{"resize", "rs"}, setter{8, func(s *state, _ Config, n string, a, _ []string) error {
		if a[0] != "" {
			if err := s.resizingType(n, a[0]); err != nil {
				return err
			}
		}
		if len(a) > 1 {
			return s.size(n, a[1:])
		}
		return nil
	}, []string{"fit", "w", "h", "enlarge", "extend"}})
	add([]string{"size", "s"}, setter{7, func(s *state, _ Config, n string, a, _ []string) error { return s.size(n, a) }, []string{"w", "h", "enlarge", "extend"}})
	add([]string{"resizing_type", "rt"}, setter{1, func(s *state, _ Config, n string, a, _ []string) error { return s.resizingType(n, a[0]) }, []string{"fit"}})
	add([]string{"width", "w"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneInt(n, a, &s.width) }, []string{"w"}})
	add([]string{"height", "h"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneInt(n, a, &s.height) }, []string{"h"}})
	add([]string{"min-width", "mw"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneInt(n, a, &s.minWidth) }, []string{"min"}})
	add([]string{"min-height", "mh"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneInt(n, a, &s.minHeight) }, []string{"min"}})
	add([]string{"zoom", "z"}, setter{2, func(s *state, _ Config, n string, a, _ []string) (err error) {
		if s.zoomW, err = positiveFloat(n, a[0], false); err == nil {
			s.zoomH = s.zoomW
			if len(a) > 1 {
				s.zoomH, err = positiveFloat(n, a[1], false)
			}
		}
		return err
	}, []string{"w", "h"}})
	add([]string{"dpr"}, setter{1, func(s *state, _ Config, n string, a, _ []string) (err error) {
		s.dpr, err = positiveFloat(n, a[0], false)
		return err
	}, []string{"dpr"}})
	add([]string{"enlarge", "el"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneBool(n, a, &s.enlarge) }, []string{"enlarge"}})
	add([]string{"extend", "ex"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return s.setExtend(n, a) }, []string{"extend"}})
	add([]string{"extend_aspect_ratio", "extend_ar", "exar"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error {
		on, g, err := extendArgs(n, a)
		s.extendAspect, s.extendAspectGravity = on, g
		return err
	}, []string{"extend_ar"}})
	add([]string{"gravity", "g"}, setter{0, func(s *state, _ Config, n string, a, _ []string) (err error) {
		s.gravity, err = parseGravity(n, a)
		return err
	}, []string{"gravity", "fx", "fy", "offset"}})
	add([]string{"crop", "c"}, setter{5, func(s *state, _ Config, n string, a, _ []string) error { return s.setCrop(n, a) }, []string{"crop"}})
	add([]string{"trim", "t"}, setter{4, func(s *state, _ Config, n string, a, _ []string) error { return s.setTrim(n, a) }, []string{"trim"}})
	add([]string{"padding", "pd"}, setter{4, func(s *state, _ Config, n string, a, _ []string) error { return s.setPadding(n, a) }, []string{"pad"}})
	add([]string{"auto_rotate", "ar"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error {
		var on bool
		if err := oneBool(n, a, &on); err != nil || on {
			return err
		}
		return badOption(n, "is false, and thumbd always applies the EXIF orientation")
	}, nil})
	add([]string{"rotate", "rot"}, setter{1, func(s *state, _ Config, n string, a, _ []string) error {
		deg, err := strconv.Atoi(a[0])
		if err != nil || deg%90 != 0 {
			return badOption(n, "must be a multiple of 90 (degrees clockwise)")
		}
		s.rotate = (deg%360 + 360) % 360
		return nil
	}, []string{"rotate"}})
	add([]string{"flip", "fl"}, setter{2, func(s *state, _ Config, n string, a, _ []string) error {
		if a[0] != "" {
			if err := oneBool(n, a[:1], &s.flipH); err != nil {
				return err
			}
		}
		if len(a) > 1 && a[1] != "" {
			return oneBool(n, a[1:], &s.flipV)
		}
		return nil
	}, []string{"flip"}})
	add([]string{"background", "bg"}, setter{0, func(s *state, _ Config, n string, a, _ []string) (err error) {
		s.bg, err = background(n, a)
		return err
	}, []string{"bg"}})
	add([]string{"blur", "bl"}, setter{1, func(s *state, _ Config, n string, a, _ []string) (err error) {
		s.blur, err = positiveFloat(n, a[0], true)
		return err
	}, []string{"blur"}})
	add([]string{"sharpen", "sh"}, setter{1, func(s *state, _ Config, n string, a, _ []string) (err error) {
		s.sharpen, err = positiveFloat(n, a[0], true)
		return err
	}, []string{"sharpen"}})
	add([]string{"pixelate", "pix"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneInt(n, a, &s.pixelate) }, []string{"pixelate"}})
	add([]string{"watermark", "wm"}, setter{5, func(s *state, _ Config, n string, a, _ []string) error { return s.setWatermark(n, a) }, []string{"wm"}})
	// thumbd keeps at most the EXIF copyright and artist
	// (thumbjob.Options.KeepCopyright): with sm:false, as with kcr.
	add([]string{"strip_metadata", "sm"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error {
		return oneBool(n, a, &s.stripMetadata)
	}, nil})
	add([]string{"keep_copyright", "kcr"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error {
		return oneBool(n, a, &s.keepCopyright)
	}, nil})
	// imgproxy Pro's video thumbnails: the second (a number of seconds)
	// and whether to take the keyframe at or before it.
	add([]string{"video_thumbnail_second", "vts"}, setter{1, func(s *state, _ Config, n string, a, _ []string) error {
		t, err := number(a[0])
		if err != nil || t < 0 || t > thumbjob.MaxFrameSeconds {
			return badOption(n, "must be seconds from 0 to %d, not %q", thumbjob.MaxFrameSeconds, a[0])
		}
		s.frame.At, s.frame.Given = t, true
		return nil
	}, []string{"t"}})
	add([]string{"video_thumbnail_keyframes", "vtk"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error {
		return oneBool(n, a, &s.frame.Keyframe)
	}, []string{"keyframe"}})
	add([]string{"strip_color_profile", "scp"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error {
		var on bool
		if err := oneBool(n, a, &on); err != nil || on {
			return err
		}
		return badOption(n, "is false, and thumbd always converts to sRGB and drops the profile")
	}, nil})
	add([]string{"quality", "q"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneQuality(n, a, &s.quality) }, []string{"q"}})
	add([]string{"max_bytes", "mb"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneInt(n, a, &s.maxBytes) }, []string{"max_bytes"}})
	add([]string{"format_quality", "fq"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return s.setFormatQuality(n, a) }, []string{"q"}})
	add([]string{"format", "f", "ext"}, setter{1, func(s *state, _ Config, n string, a, _ []string) (err error) {
		s.format, err = outputFormat(n, a[0])
		return err
	}, []string{"format"}})
	add([]string{"raw"}, setter{1, func(s *state, _ Config, n string, a, _ []string) error { return oneBool(n, a, &s.raw) }, []string{"as_is"}})
	add([]string{"skip_processing", "skp"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error {
		s.skip = s.skip[:0:0]
		for _, v := range a {
			f := imagefmt.Format(strings.ToLower(v))
			switch f {
			case "svg":
				continue // thumbd reads no SVG: its source is refused either way
			case "jpg":
				f = imagefmt.JPEG
			case "tif":
				f = imagefmt.TIFF
			}
			if !slices.Contains(imagefmt.Images(), f) {
				return badOption(n, "names format %q, which thumbd does not read", v)
			}
			s.skip = append(s.skip, f)
		}
		return nil
	}, []string{"as_is"}})
	add([]string{"cachebuster", "cb"}, setter{1, func(*state, Config, string, []string, []string) error { return nil }, nil}) // it only changes the URL, as in imgproxy
	add([]string{"expires", "exp"}, setter{1, func(s *state, _ Config, n string, a, _ []string) error {
		ts, err := strconv.ParseInt(a[0], 10, 64)
		if err != nil {
			return badOption(n, "must be a Unix timestamp")
		}
		s.expires = time.Time{}
		if ts > 0 {
			s.expires = time.Unix(ts, 0)
		}
		return nil
	}, nil})
	add([]string{"filename", "fn"}, setter{2, func(s *state, _ Config, n string, a, _ []string) error { return s.setFilename(n, a) }, nil})
	add([]string{"return_attachment", "att"}, setter{0, func(s *state, _ Config, n string, a, _ []string) error { return oneBool(n, a, &s.attachment) }, nil})
	return m
}()

func (s *state) resizingType(n, v string) error {
	if !slices.Contains([]string{"fit", "fill", "fill-down", "force", "auto"}, v) {
		return badOption(n, "has resizing type %q: it must be fit, fill, fill-down, force or auto", v)
	}
	s.rt = v
	return nil
}

// size is size's W:H:ENLARGE:EXTEND... arguments.
func (s *state) size(n string, a []string) error {
	if len(a) > 0 && a[0] != "" {
		if err := oneInt(n, a[:1], &s.width); err != nil {
			return err
		}
	}
	if len(a) > 1 && a[1] != "" {
		if err := oneInt(n, a[1:2], &s.height); err != nil {
			return err
		}
	}
	if len(a) > 2 && a[2] != "" {
		if err := oneBool(n, a[2:3], &s.enlarge); err != nil {
			return err
		}
	}
	if len(a) > 3 && a[3] != "" {
		return s.setExtend(n, a[3:])
	}
	return nil
}

// setExtend is extend's EXTEND[:GRAVITY[:X:Y]].
func (s *state) setExtend(n string, a []string) (err error) {
	s.extend, s.extendGravity, err = extendArgs(n, a)
	return err
}

// extendArgs reads EXTEND[:GRAVITY[:X:Y]] (extend's and
// extend_aspect_ratio's): a compass gravity or ce, with offsets.
func extendArgs(n string, a []string) (on bool, g *gravity, err error) {
	if len(a) > 4 {
		return false, nil, badOption(n, "takes at most 4 arguments for extend")
	}
	if err := oneBool(n, a[:1], &on); err != nil {
		return false, nil, err
	}
	if len(a) > 1 && a[1] != "" {
		eg, err := parseGravity(n, a[1:])
		if err != nil {
			return false, nil, err
		}
		if eg.kind == "sm" || eg.kind == "fp" {
			return false, nil, badOption(n, "has gravity %s: extend takes a compass gravity or ce", eg.kind)
		}
		g = &eg
	}
	return on, g, nil
}

// compass maps imgproxy's gravities to thumbd's.
var compass = map[string]thumbjob.Gravity{
	"ce": thumbjob.GravityCentre, "no": thumbjob.GravityNorth, "so": thumbjob.GravitySouth,
	"ea": thumbjob.GravityEast, "we": thumbjob.GravityWest, "noea": thumbjob.GravityNorthEast,
	"nowe": thumbjob.GravityNorthWest, "soea": thumbjob.GravitySouthEast, "sowe": thumbjob.GravitySouthWest,
	"sm": thumbjob.GravityAttention, "fp": thumbjob.GravityFocal,
}

// parseGravity is TYPE[:X:Y]: a compass type with offsets, sm, or fp:X:Y.
func parseGravity(n string, a []string) (gravity, error) {
	g := gravity{kind: a[0]}
	if _, ok := compass[g.kind]; !ok {
		return g, badOption(n, "has gravity %q: thumbd takes ce, no, so, ea, we, noea, nowe, soea, sowe, sm and fp:X:Y (obj is imgproxy Pro's)", g.kind)
	}
	switch {
	case g.kind == "fp":
		if len(a) != 3 {
			return g, badOption(n, "fp takes two fractions, fp:X:Y")
		}
		x, err1 := number(a[1])
		y, err2 := number(a[2])
		if err1 != nil || err2 != nil || x < 0 || x > 1 || y < 0 || y > 1 {
			return g, badOption(n, "fp takes two fractions from 0 to 1, fp:X:Y")
		}
		g.x, g.y = x, y
	case g.kind == "sm" && len(a) > 1:
		return g, badOption(n, "sm takes no arguments")
	case len(a) > 3 || len(a) == 2:
		return g, badOption(n, "takes TYPE[:X_OFFSET:Y_OFFSET]")
	case len(a) == 3:
		x, err1 := number(a[1])
		y, err2 := number(a[2])
		if err1 != nil || err2 != nil {
			return g, badOption(n, "has offsets that are not numbers")
		}
		g.x, g.y, g.offset = x, y, x != 0 || y != 0
	}
	return g, nil
}

// setCrop is crop's W:H[:GRAVITY].
func (s *state) setCrop(n string, a []string) error {
	if len(a) > 5 {
		return badOption(n, "takes W:H[:GRAVITY]")
	}
	var err error
	if s.cropW, err = positiveFloat(n, a[0], true); err != nil {
		return err
	}
	s.cropH = 0
	if len(a) > 1 {
		if s.cropH, err = positiveFloat(n, a[1], true); err != nil {
			return err
		}
	}
	s.cropGravity = nil
	if len(a) > 2 {
		g, err := parseGravity(n, a[2:])
		if err != nil {
			return err
		}
		s.cropGravity = &g
	}
	s.crop = true
	return nil
}

// setTrim is trim's THRESHOLD[:COLOR[:EQUAL_HOR[:EQUAL_VER]]].
func (s *state) setTrim(n string, a []string) error {
	if a[0] == "" {
		s.trim = nil
		return nil
	}
	t, err := number(a[0])
	if err != nil {
		return badOption(n, "has threshold %q: thumbd takes a number from 0 to 255", a[0])
	}
	s.trim = &thumbjob.Trim{Threshold: t}
	if len(a) > 1 && a[1] != "" {
		c, err := hexColour(a[1])
		if err != nil {
			return badOption(n, "has colour %q: it must be RRGGBB hex digits", a[1])
		}
		s.trim.Colour = c
	}
	for i, dst := range []*bool{&s.trim.EqualHor, &s.trim.EqualVer} {
		if 2+i < len(a) && a[2+i] != "" {
			if err := oneBool(n, a[2+i:3+i], dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// setPadding is padding's T[:R[:B[:L]]], CSS-like.
func (s *state) setPadding(n string, a []string) error {
	if len(a) > 4 {
		return badOption(n, "takes at most 4 arguments")
	}
	var p [4]int
	for i := range 4 {
		switch {
		case i < len(a) && a[i] != "":
			if err := oneInt(n, a[i:i+1], &p[i]); err != nil {
				return err
			}
		case i == 0:
		case i == 3:
			p[3] = p[1]
		default:
			p[i] = p[0]
		}
	}
	s.pad = p
	return nil
}

// background is bg's RRGGBB or R:G:B; no argument: none.
func background(n string, a []string) (*thumbjob.Colour, error) {
	switch len(a) {
	case 1:
		if a[0] == "" {
			return nil, nil
		}
		if c, err := hexColour(a[0]); err == nil {
			return c, nil
		}
	case 3:
		var b [3]byte
		for i, v := range a {
			c, err := strconv.ParseUint(v, 10, 8)
			if err != nil {
				return nil, badOption(n, "must be RRGGBB hex digits or R:G:B, each 0 to 255")
			}
			b[i] = byte(c)
		}
		return &thumbjob.Colour{R: b[0], G: b[1], B: b[2], A: 255}, nil
	}
	return nil, badOption(n, "must be RRGGBB hex digits or R:G:B, each 0 to 255")
}

// hexColour reads RRGGBB, opaque.
func hexColour(v string) (*thumbjob.Colour, error) {
	b, err := hex.DecodeString(v)
	if len(v) != 6 || err != nil {
		return nil, errArgs
	}
	return &thumbjob.Colour{R: b[0], G: b[1], B: b[2], A: 255}, nil
}

// setWatermark is watermark's OPACITY[:POSITION[:X:Y[:SCALE]]]; the
// bounds are the job's (params).
func (s *state) setWatermark(n string, a []string) error {
	op, err := number(a[0])
	if err != nil || op < 0 {
		return badOption(n, "has opacity %q: it must be a number from 0 to 1", a[0])
	}
	if op == 0 {
		s.wm = nil // imgproxy: no watermark
		return nil
	}
	w := &thumbjob.Watermark{Opacity: op, Position: thumbjob.PositionCentre}
	if len(a) > 1 && a[1] != "" {
		w.Position = thumbjob.Position(a[1])
		if !slices.Contains(thumbjob.Positions(), w.Position) {
			return badOption(n, "has position %q: it must be one of imgproxy's (ce, no, so, ea, we, noea, nowe, soea, sowe, re)", a[1])
		}
	}
	for i, dst := range []*int{&w.X, &w.Y} {
		if 2+i >= len(a) || a[2+i] == "" {
			continue
		}
		f, err := number(a[2+i])
		if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return badOption(n, "has offset %q: thumbd takes whole pixels from 0", a[2+i])
		}
		*dst = int(f)
	}
	if len(a) > 4 && a[4] != "" {
		if w.Scale, err = positiveFloat(n, a[4], false); err != nil {
			return err
		}
	}
	s.wm = w
	return nil
}

// setFormatQuality is format_quality's FORMAT:Q pairs.
func (s *state) setFormatQuality(n string, a []string) error {
	if len(a)%2 != 0 {
		return badOption(n, "takes FORMAT:QUALITY pairs")
	}
	if s.formatQuality == nil {
		s.formatQuality = map[imagefmt.Format]int{}
	}
	for i := 0; i < len(a); i += 2 {
		f, err := outputFormat(n, a[i])
		if err != nil {
			return err
		}
		var q int
		if err := oneQuality(n, a[i+1:i+2], &q); err != nil {
			return err
		}
		s.formatQuality[f] = q
	}
	return nil
}

// setFilename is filename's NAME[:ENCODED].
func (s *state) setFilename(n string, a []string) error {
	if len(a) > 2 {
		return badOption(n, "takes NAME[:ENCODED]")
	}
	s.filename = a[0]
	if len(a) > 1 && a[1] != "" {
		var enc bool
		if err := oneBool(n, a[1:], &enc); err != nil {
			return err
		}
		if enc {
			b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(a[0], "="))
			if err != nil {
				return badOption(n, "is not base64url although ENCODED is true")
			}
			s.filename = string(b)
		}
	}
	if strings.ContainsAny(s.filename, "\"\\\r\n/") {
		return badOption(n, "has a character a file name cannot hold here (\", \\, /, a line break)")
	}
	return nil
}

// presets applies the named presets; one being applied is skipped.
func (s *state) presets(c Config, n string, a []string, used []string) error {
	for _, name := range a {
		p, ok := c.Presets[name]
		if !ok {
			return badOption(n, "names preset %q, which THUMBD_IMGPROXY_PRESETS does not define", name)
		}
		if slices.Contains(used, name) {
			continue
		}
		if err := s.apply(c, p, append(slices.Clone(used), name)); err != nil {
			return err
		}
	}
	return nil
}

// outputFormat reads imgproxy's format names as thumbd's outputs.
func outputFormat(n, v string) (imagefmt.Format, error) {
	f := imagefmt.Format(strings.ToLower(v))
	switch f {
	case "jpg":
		f = imagefmt.JPEG
	case "tif":
		f = imagefmt.TIFF
	}
	if !slices.Contains(imagefmt.Outputs(), f) {
		names := make([]string, 0, 8)
		for _, o := range imagefmt.Outputs() {
			names = append(names, string(o))
		}
		return "", badOption(n, "names format %q, which thumbd does not write; it writes %s (best is imgproxy Pro's)", v, strings.Join(names, ", "))
	}
	return f, nil
}

func oneInt(n string, a []string, dst *int) error {
	if len(a) != 1 {
		return badOption(n, "takes one whole number")
	}
	v, err := strconv.Atoi(a[0])
	if err != nil || v < 0 {
		return badOption(n, "must be a whole number 0 or above, not %q", a[0])
	}
	*dst = v
	return nil
}

func oneQuality(n string, a []string, dst *int) error {
	if err := oneInt(n, a, dst); err != nil {
		return err
	}
	if *dst > 100 {
		return badOption(n, "must be a quality from 0 (the default) to 100")
	}
	return nil
}

// oneBool is imgproxy's boolean: 1, t, true (any case) and 0, f, false.
func oneBool(n string, a []string, dst *bool) error {
	if len(a) != 1 {
		return badOption(n, "takes one boolean (1, t, true, 0, f, false)")
	}
	v, err := strconv.ParseBool(a[0])
	if err != nil {
		return badOption(n, "must be a boolean (1, t, true, 0, f, false), not %q", a[0])
	}
	*dst = v
	return nil
}

// positiveFloat reads a number above 0 (zero: 0 or above).
func positiveFloat(n, v string, zero bool) (float64, error) {
	f, err := number(v)
	if err != nil || f < 0 || f == 0 && !zero {
		return 0, badOption(n, "must be a number above 0, not %q", v)
	}
	return f, nil
}

// number reads a finite number ("nan" and "inf" are errors).
func number(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		err = errArgs
	}
	return f, err
}
