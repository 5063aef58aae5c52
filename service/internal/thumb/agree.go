package thumb

import (
	"fmt"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/plan"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The memory estimate prices a job from the header the pipeline's look
// read in Go (memcost), and libvips then decodes what its own loader reads
// of the same bytes. Where the two readers disagree, thumbd fails closed:
// a source libvips reads larger than the look did is refused before any
// pixel is decoded, never decoded at the smaller price.

// checkLooked refuses a source whose header the look could not read: its
// job was not priced from it, so nothing of it is decoded. Only bytes of no
// input format at all (refused as such by checkSource) have no header.
func checkLooked(src thumbjob.Source) error {
	if len(src.Spans) > 0 {
		// A ranged source is a video's (memcost.LookSource): its spans
		// must hold its bytes exactly, or the reads through them would
		// stray (a cell checks what its supervisor sent).
		if err := src.CheckSpans(); err != nil || src.Header.Video == nil {
			return fmt.Errorf("%w: a source read by range that is not a video's, or whose ranges do not hold its bytes (%v)", thumbjob.ErrUndecodable, err)
		}
	}
	if src.Header.Width > 0 && src.Header.Height > 0 {
		return nil
	}
	name := string(src.Format)
	if spec, ok := imagefmt.Lookup(src.Format); ok {
		name = spec.Name
	}
	why := src.Unread
	if why == "" {
		why = "not read"
	}
	return fmt.Errorf("%w: this %s image cannot be priced (%s), so none of it is decoded", thumbjob.ErrUndecodable, name, why)
}

// agrees refuses a source whose header, as libvips read it (v), is larger
// in any dimension than what the look priced (look): a side (in either
// orientation: libheif applies irot, libjxl its orientation, so libvips'
// sides may be the look's turned), the samples a pixel, the bytes a
// sample, or, for the formats whose frames thumbd decodes, the frames.
func agrees(v header, look thumbjob.Header, format imagefmt.Format) error {
	vl, vs := max(v.width, v.height), min(v.width, v.height)
	ll, ls := max(look.Width, look.Height), min(look.Width, look.Height)
	var what string
	switch {
	case vl > ll || vs > ls:
		what = fmt.Sprintf("%dx%d pixels, the header read before pricing %dx%d", v.width, v.height, look.Width, look.Height)
	case v.bands > look.Bands:
		what = fmt.Sprintf("%d samples a pixel, the header read before pricing %d", v.bands, look.Bands)
	case v.sample > max(look.BytesPerSample, 1):
		what = fmt.Sprintf("%d bytes a sample, the header read before pricing %d", v.sample, look.BytesPerSample)
	case plan.AnimatedInput(format) && v.pages > max(look.Frames, 1):
		what = fmt.Sprintf("%d frames, the header read before pricing %d", v.pages, look.Frames)
	default:
		return nil
	}
	return fmt.Errorf("%w: the decoder reads this %s as %s; a file read two ways is refused", thumbjob.ErrUndecodable, format, what)
}
