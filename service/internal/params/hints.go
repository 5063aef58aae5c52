package params

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// Client hints (THUMBD_CLIENT_HINTS): request headers that fill in what
// the query leaves open. They are outside a signed URL's signature, so
// they are bounded as the parameters are and can only choose within what
// the query left open.
const (
	HintDPR      = "Sec-CH-DPR"
	HintWidth    = "Sec-CH-Width"
	HintSaveData = "Save-Data"
)

// SaveDataStep is how many points of quality Save-Data: on takes off the
// format's default quality (JPEG and WebP 80 to 60, AVIF 58 to 38): about
// a third fewer bytes on a photo, still free of visible blocking at
// thumbnail sizes.
const SaveDataStep = 20

// Hints are one request's client hints: every value of each header (a
// header given twice is refused, as a repeated parameter is).
type Hints struct {
	DPR, Width, SaveData []string
}

// apply fills q's open options from h and returns the headers the answer
// now varies with (whether or not this request sent them: a CDN must key
// on them for this URL):
//   - Sec-CH-Width gives w when the query gives none of w, h and dpr (the
//     hint is in device pixels, DPR included, so no dpr may scale it
//     again; h alone fixes the box's height);
//   - Sec-CH-DPR gives dpr when the query gives none (and no width hint
//     was used);
//
// A malformed value is a 400 naming the header; a well-formed one beyond
// the bounds is brought within them (a zoomed-out page reports a DPR under
// 1, a wide screen a width over the max side: refusing would break the
// page), as dpr's scaling already stops at the max side.
func (h *Hints) apply(q map[string]string, maxSide int) (map[string]string, []string, error) {
	if h == nil {
		return q, nil, nil
	}
	var vary []string
	_, hasW := q["w"]
	_, hasH := q["h"]
	_, hasDPR := q["dpr"]
	out := make(map[string]string, len(q)+1)
	for k, v := range q {
		out[k] = v
	}
	if !hasW && !hasH && !hasDPR {
		// Without the width hint, the DPR hint would be used: the
		// answer varies with both.
		vary = append(vary, HintDPR, HintWidth)
		if v, ok, err := one(HintWidth, h.Width); err != nil {
			return nil, nil, err
		} else if ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || strings.TrimLeft(v, "0123456789") != "" {
				return nil, nil, badHeader(HintWidth, "must be a positive integer (device pixels)")
			}
			out["w"] = strconv.FormatInt(min(n, int64(maxSide)), 10)
			return out, vary, nil
		}
	}
	if !hasDPR {
		if len(vary) == 0 {
			vary = append(vary, HintDPR)
		}
		if v, ok, err := one(HintDPR, h.DPR); err != nil {
			return nil, nil, err
		} else if ok {
			digits := strings.Trim(strings.Replace(v, ".", "", 1), "0123456789")
			dpr, err := strconv.ParseFloat(v, 64)
			if err != nil || digits != "" || !(dpr > 0) || math.IsInf(dpr, 0) {
				return nil, nil, badHeader(HintDPR, "must be a positive decimal number, such as 2 or 2.625")
			}
			out["dpr"] = strconv.FormatFloat(min(max(dpr, 1), 4), 'f', -1, 64)
		}
	}
	return out, vary, nil
}

// one is a header's only value: absent is (ok false), twice is a 400.
func one(name string, values []string) (string, bool, error) {
	switch len(values) {
	case 0:
		return "", false, nil
	case 1:
		return strings.TrimSpace(values[0]), true, nil
	}
	return "", false, badHeader(name, "is given %d times; give it once", len(values))
}

func badHeader(name, format string, args ...any) error {
	return apierr.New(apierr.BadParameter, "Header %s %s.", name, fmt.Sprintf(format, args...))
}

// SaveData lowers the quality by SaveDataStep when the request's hints
// (those it was read with) say Save-Data: on and the query gave no q;
// called once the format is chosen (format=auto negotiated). It reports
// whether the answer varies with Save-Data (the query left the quality
// open and the format has one). Values other than "on" mean nothing (as
// the header's spec says).
func (t *Thumbnail) SaveData() bool {
	h := t.hints
	if h == nil || t.qualityGiven {
		return false
	}
	spec, _ := imagefmt.Lookup(t.Options.Format)
	if spec.Quality == 0 {
		return false
	}
	for _, v := range h.SaveData {
		if strings.EqualFold(strings.TrimSpace(v), "on") {
			t.Options.Quality = max(spec.Quality-SaveDataStep, 1)
		}
	}
	return true
}
