package params

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Allowed is the bounded unsigned mode (THUMBD_ALLOWED_WIDTHS,
// THUMBD_ALLOWED_QUALITIES), as Next.js's own optimizer bounds its
// deviceSizes, imageSizes and qualities: what an unsigned client chooses
// of a thumbnail's size and quality must be on these lists, so that it
// cannot make one fresh job per width from 1 to the max side. What the
// operator chose (a preset's options, the default box, a format's default
// quality) is not bound, nor is a signed request (Rules.Signed). A nil list is no bound.
type Allowed struct {
	Sides     []int // w and h, after dpr and client hints; sorted
	Qualities []int // q; sorted
}

// Signed are the rules for a signed request: its signer chose its
// options, so the allow-lists do not bind it.
func (r Rules) Signed() Rules {
	r.Allowed = Allowed{}
	return r
}

// ParseAllowedSides reads THUMBD_ALLOWED_WIDTHS: comma-separated pixel
// counts such as Next.js's "640,750,828,1080,1200,1920,2048,3840". Values
// over the max side are refused by the config's check.
func ParseAllowedSides(s string) ([]int, error) { return parseInts(s, 1, 1<<20, "widths") }

// ParseAllowedQualities reads THUMBD_ALLOWED_QUALITIES: comma-separated
// qualities 1 to 100, such as "75".
func ParseAllowedQualities(s string) ([]int, error) { return parseInts(s, 1, 100, "qualities") }

func parseInts(s string, lo, hi int, what string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < lo || n > hi || strings.TrimLeft(f, "0123456789") != "" {
			return nil, fmt.Errorf("%q: want comma-separated %s, integers %d to %d", f, what, lo, hi)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatInts writes a list back in the settings' syntax.
func FormatInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// check refuses what the client chose off the lists: o is the final
// options, asked the source of each of q's values: the query (or a client
// hint, named by its header), or "" when the operator's preset or default
// gave it.
func (a Allowed) check(o thumbjob.Options, q map[string]string, asked func(string) string) error {
	dpr := asked("dpr")
	side := func(name string, n int, what string) error {
		by := asked(name)
		if n == 0 || a.Sides == nil || by == "" && dpr == "" || slices.Contains(a.Sides, n) {
			return nil
		}
		if by == "" {
			by = dpr
		}
		scaled := ""
		if _, ok := q["dpr"]; ok {
			scaled = " at dpr " + q["dpr"]
		}
		return apierr.New(apierr.BadParameter, "%s makes the %s %d%s, which is not allowed here: %s (THUMBD_ALLOWED_WIDTHS).", by, what, n, scaled, nearest(a.Sides, n, "size"))
	}
	if err := side("w", o.Width, "width"); err != nil {
		return err
	}
	if err := side("h", o.Height, "height"); err != nil {
		return err
	}
	if by := asked("q"); by != "" && a.Qualities != nil {
		n, _ := strconv.Atoi(q["q"]) // options read it: an integer 1..100
		if !slices.Contains(a.Qualities, n) {
			return apierr.New(apierr.BadParameter, "%s asks for quality %d, which is not allowed here: %s (THUMBD_ALLOWED_QUALITIES).", by, n, nearest(a.Qualities, n, "quality"))
		}
	}
	return nil
}

// nearest names the allowed values either side of n (sorted is sorted).
func nearest(sorted []int, n int, what string) string {
	i, _ := slices.BinarySearch(sorted, n)
	switch {
	case len(sorted) == 1:
		return fmt.Sprintf("the only allowed %s is %d", what, sorted[0])
	case i == 0:
		return fmt.Sprintf("the smallest allowed %s is %d", what, sorted[0])
	case i == len(sorted):
		return fmt.Sprintf("the largest allowed %s is %d", what, sorted[i-1])
	}
	return fmt.Sprintf("the nearest allowed are %d and %d", sorted[i-1], sorted[i])
}
