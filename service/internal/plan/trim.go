package plan

import (
	"image"
	"math"
)

// The trim's search (the engine's findTrim, libvips' find_trim without
// running it on every pixel: a 3x3 median, then a difference and a
// threshold in float, then the projections, cost 54 times a plain resize
// on a 12 MP photo). It looks first on a copy shrunk TrimCoarse times,
// whose box is within a few of its pixels of the full image's; then on
// four strips of the full image along that box's edges, wide enough to
// hold the true edge with its median's rows on both sides, which gives
// each edge as find_trim on the whole image does. Images under
// TrimCoarse*TrimSmall a side are searched whole.
const (
	TrimCoarse = 8
	TrimSmall  = 32
	// trimMargin is the coarse box's error, and the median's row.
	trimMargin = 2*TrimCoarse + 2
)

// TrimWhole reports whether an image of size is searched whole, without
// the coarse look.
func TrimWhole(size image.Point) bool { return min(size.X, size.Y) < TrimCoarse*TrimSmall }

// TrimStrips are the four strips (top, bottom, left, right) of an image
// of size along the edges of the box found on its coarse copy (of size
// coarseSize); ok is false when one is too thin for find_trim's 3x3
// median, and the whole image must be searched.
func TrimStrips(box image.Rectangle, coarseSize, size image.Point) (strips [4]image.Rectangle, ok bool) {
	sx, sy := float64(size.X)/float64(coarseSize.X), float64(size.Y)/float64(coarseSize.Y)
	near := image.Rect(int(float64(box.Min.X)*sx), int(float64(box.Min.Y)*sy), int(math.Ceil(float64(box.Max.X)*sx)), int(math.Ceil(float64(box.Max.Y)*sy)))
	all := image.Rectangle{Max: size}
	grown := near.Inset(-trimMargin).Intersect(all)
	strips = [4]image.Rectangle{
		image.Rect(grown.Min.X, grown.Min.Y, grown.Max.X, near.Min.Y+trimMargin), // top
		image.Rect(grown.Min.X, near.Max.Y-trimMargin, grown.Max.X, grown.Max.Y), // bottom
		image.Rect(grown.Min.X, grown.Min.Y, near.Min.X+trimMargin, grown.Max.Y), // left
		image.Rect(near.Max.X-trimMargin, grown.Min.Y, grown.Max.X, grown.Max.Y), // right
	}
	for i := range strips {
		strips[i] = strips[i].Intersect(all)
		if strips[i].Dx() < 3 || strips[i].Dy() < 3 {
			return strips, false
		}
	}
	return strips, true
}

// TrimOuter reports whether what strip i found (in the image's pixels)
// reaches the strip's outer side, where the content may go on past it:
// the coarse box was wrong there.
func TrimOuter(i int, found, strip image.Rectangle, size image.Point) bool {
	outer := [4]bool{found.Min.Y == strip.Min.Y && strip.Min.Y > 0, found.Max.Y == strip.Max.Y && strip.Max.Y < size.Y,
		found.Min.X == strip.Min.X && strip.Min.X > 0, found.Max.X == strip.Max.X && strip.Max.X < size.X}
	return outer[i]
}

// TrimJoin is the box the four strips found: each gives its edge.
func TrimJoin(found [4]image.Rectangle) image.Rectangle {
	return image.Rect(found[2].Min.X, found[0].Min.Y, found[3].Max.X, found[1].Max.Y)
}
