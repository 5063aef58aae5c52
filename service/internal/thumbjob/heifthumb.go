package thumbjob

import "math"

// HEIFThumbnailAspectTolerance is how far, relatively, a HEIF's embedded
// thumbnail's aspect ratio may be from its primary image's for thumbd to
// let libvips decode it instead. libvips' own check (0.1 apart, absolute)
// only catches a broken 512x512 thumbnail of a 3:2 photo: it lets a 4:3
// photo's 320x256 thumbnail through, and the thumbnail made from it is
// 256x205, not 256x192. Within 1 %, the result is the primary's size to
// the pixel, as the tests check; an honest encoder's rounding of a 320-
// pixel side errs by 0.3 % at most.
const HEIFThumbnailAspectTolerance = 0.01

// HEIFThumbnail says whether libvips' thumbnail operation, asked for a
// w x h thumbnail with fit, decodes a HEIF's first embedded thumbnail (tw x
// th as decoded, its own irot applied) rather than its primary image (dw x
// dh as displayed): libvips (resample/thumbnail.c, vips_thumbnail_open,
// 8.14 to 8.16) opens the thumbnail when it is narrower than the image,
// its aspect ratio within 0.1 of the image's (heifload.c,
// vips_foreign_load_heif_set_thumbnail) and the common shrink from it to
// the box is above 1 (it need not be enlarged, and is not the box's exact
// size). The fits map onto libvips' sizes as the engine's loadFrom does:
// cover crops (the smaller shrink of the two sides), contain and inside fit
// the box (the larger), fill forces each side (the smaller). thumbd is
// stricter (use): the aspect ratios within HEIFThumbnailAspectTolerance.
func HEIFThumbnail(dw, dh, tw, th, w, h int, fit Fit) (libvips, use bool) {
	if dw <= 0 || dh <= 0 || tw <= 0 || th <= 0 || w <= 0 || h <= 0 || tw >= dw {
		return false, false
	}
	image, thumb := float64(dw)/float64(dh), float64(tw)/float64(th)
	if math.Abs(image-thumb) > 0.1 {
		return false, false
	}
	sx, sy := float64(tw)/float64(w), float64(th)/float64(h)
	shrink := min(sx, sy)
	if fit == FitContain || fit == FitInside {
		shrink = max(sx, sy)
	}
	libvips = shrink > 1
	return libvips, libvips && math.Abs(thumb-image) <= HEIFThumbnailAspectTolerance*image
}
