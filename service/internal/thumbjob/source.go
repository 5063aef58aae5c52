package thumbjob

import "github.com/thumbd/thumbd/service/internal/imagefmt"

// Source is a job's source as the engine gets it: the bytes, and what the
// pipeline's one look at them found (memcost.Look: the format sniffed,
// the header read in Go). Carried from that look into the engine, in
// process and through a cell, so that no later step sniffs the bytes
// again.
type Source struct {
	Bytes []byte `json:"-"` // a cell's travel as the frame's payload
	// Format is the sniffed input format; "" when the bytes are no input
	// format (the engine refuses them).
	Format imagefmt.Format `json:"format"`
	// Header is what memcost read of the header: zero (Width 0) when it
	// could not, for a format it has no reader for or a broken header.
	Header Header `json:"header"`
}

// Sniffed is src looked at for its format alone (no header): for callers
// that have bytes and no pipeline (tests, tools).
func Sniffed(src []byte) Source {
	spec, _ := imagefmt.Sniff(src)
	return Source{Bytes: src, Format: spec.Format}
}

// Header is what sizing a job needs of a source (memcost reads it).
type Header struct {
	Format         imagefmt.Format `json:"format"`
	Width          int             `json:"w"` // as stored (before EXIF orientation)
	Height         int             `json:"h"`
	Bands          int             `json:"bands"` // samples per pixel after decoding
	Alpha          bool            `json:"alpha"`
	BytesPerSample int             `json:"bps"`    // 1, or 2 for 16-bit PNG
	Frames         int             `json:"frames"` // 1 unless animated
	// Progressive: a progressive JPEG, whose decoder keeps every DCT
	// coefficient of the whole image (2 bytes a sample) whatever the
	// shrink-on-load: a 12 MP one holds 73 MB to make a 256-pixel thumbnail.
	Progressive bool `json:"progressive"`
}

// Pixels is the first frame's width x height.
func (h Header) Pixels() int64 { return int64(h.Width) * int64(h.Height) }
