package imagefmt

import (
	"strconv"
	"strings"
)

// Choice is what format=auto resolves to for one Accept header: the format
// for a thumbnail without transparency and the one for a thumbnail with it.
type Choice struct {
	Opaque, Alpha Format
}

// Negotiate picks, for format=auto, the output formats an Accept header
// allows best (RFC 9110 12.5.1): the highest q-value wins, and among equal
// q-values the table's Auto rank (AVIF, then WebP, then JPEG, then PNG).
// A format with Listed must be named exactly: browsers send wildcards
// whatever they decode. Thumbnails with transparency only take formats that
// keep it, unless the header allows none of those (then it is flattened).
// When the header allows nothing, JPEG and PNG are the answer: a thumbnail
// is better than a 406. With animated, formats that animate come first: an
// animated source then keeps its frames whenever the header allows a format
// that holds them, and is a still of its first frame otherwise.
func Negotiate(accept string, animated bool) Choice {
	ranges := parseAccept(accept)
	if animated {
		if c, ok := negotiate(ranges, func(s Spec) bool { return s.Animated }); ok {
			return c
		}
	}
	c, _ := negotiate(ranges, func(Spec) bool { return true })
	return c
}

// negotiate is Negotiate among the formats keep allows; ok is false when
// the header accepts none of them.
func negotiate(ranges accepted, keep func(Spec) bool) (c Choice, ok bool) {
	c = Choice{Opaque: JPEG, Alpha: PNG}
	var bestOpaque, bestAlpha [2]float64 // q, rank
	for _, s := range table {
		if !s.Output || s.Auto == 0 || !keep(s) {
			continue
		}
		q := ranges.q(s)
		if q <= 0 {
			continue
		}
		score := [2]float64{q, float64(s.Auto)}
		if better(score, bestOpaque) {
			bestOpaque, c.Opaque = score, s.Format
		}
		if s.Alpha && better(score, bestAlpha) {
			bestAlpha, c.Alpha = score, s.Format
		}
	}
	if bestAlpha[0] == 0 && bestOpaque[0] > 0 {
		c.Alpha = c.Opaque
	}
	return c, bestOpaque[0] > 0
}

func better(a, b [2]float64) bool { return a[0] > b[0] || (a[0] == b[0] && a[1] > b[1]) }

// mediaRange is one element of an Accept header.
type mediaRange struct {
	typ, sub string // lower case; "*" for wildcards
	q        float64
}

type accepted []mediaRange

// parseAccept reads an Accept header; an empty one accepts everything.
// Elements that do not parse are skipped.
func parseAccept(h string) accepted {
	if strings.TrimSpace(h) == "" {
		return accepted{{"*", "*", 1}}
	}
	var out accepted
	for _, part := range strings.Split(h, ",") {
		media, params, _ := strings.Cut(part, ";")
		typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(media)), "/")
		if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					q = -1 // not a qvalue: the element is skipped
				} else {
					q = f
				}
			}
		}
		if q >= 0 {
			out = append(out, mediaRange{typ, sub, q})
		}
	}
	return out
}

// q is the q-value the header gives a format: that of the most specific
// range matching its media type (exact, then type/*, then */*), 0 when
// none does. A Listed format only counts an exact match.
func (a accepted) q(s Spec) float64 {
	typ, sub, _ := strings.Cut(s.ContentType, "/")
	best, specificity := 0.0, -1
	for _, r := range a {
		var sp int
		switch {
		case r.typ == typ && r.sub == sub:
			sp = 2
		case r.typ == typ && r.sub == "*" && !s.Listed:
			sp = 1
		case r.typ == "*" && !s.Listed:
			sp = 0
		default:
			continue
		}
		if sp > specificity || (sp == specificity && r.q > best) {
			best, specificity = r.q, sp
		}
	}
	return best
}
