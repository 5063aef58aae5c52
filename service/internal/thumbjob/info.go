package thumbjob

import "github.com/thumbd/thumbd/service/internal/imagefmt"

// InfoJob asks the engine to describe a source (GET and POST /info).
type InfoJob struct {
	// ThumbHash also makes the source's ThumbHash, from a decode of at
	// most ThumbHashSide pixels a side; without it only the header is read.
	ThumbHash bool `json:"thumbhash"`
}

// ThumbHashSide bounds the image a ThumbHash is made from: the format's
// own limit, reached with shrink-on-load.
const ThumbHashSide = 100

// Info describes a source, from its header (and a small decode for the
// ThumbHash). It is the body of /info's answer.
type Info struct {
	Format imagefmt.Format `json:"format"`
	// Width and Height are as displayed, after EXIF orientation: the
	// sides fx/fy, w and h refer to.
	Width  int `json:"width"`
	Height int `json:"height"`
	// StoredWidth and StoredHeight are as stored, before orientation.
	StoredWidth  int `json:"stored_width"`
	StoredHeight int `json:"stored_height"`
	Orientation  int `json:"orientation"` // EXIF 1..8; 1 when there is none
	Frames       int `json:"frames"`      // 1 unless animated
	// DelaysMS is each frame's display time, and Loop how many times the
	// animation plays (0: forever); both only for an animation.
	DelaysMS []int `json:"delays_ms,omitempty"`
	Loop     *int  `json:"loop,omitempty"`
	Alpha    bool  `json:"alpha"`
	// Space is libvips' interpretation of the pixels: srgb, b-w, cmyk,
	// rgb16, grey16...
	Space string `json:"space"`
	ICC   bool   `json:"icc"` // an ICC profile is embedded
	Bytes int64  `json:"bytes"`
	// ThumbHash is the placeholder, base64 (standard, padded); absent when
	// not asked for. A video's is its default poster frame's.
	ThumbHash string `json:"thumbhash,omitempty"`
	// Video is what a video source's container says; absent for images.
	// Format is then the stream's codec, and Width x Height the frame as
	// shown (its display matrix applied).
	Video *VideoInfo `json:"video,omitempty"`
}

// VideoInfo is /info's account of a video source.
type VideoInfo struct {
	Container string  `json:"container"` // mp4, mov, webm, mkv
	Duration  float64 `json:"duration"`  // seconds
	FrameRate float64 `json:"fps,omitempty"`
	// Rotation is the display matrix's turn, clockwise degrees, after a
	// left-right flip when Mirror.
	Rotation int    `json:"rotation"`
	Mirror   bool   `json:"mirror,omitempty"`
	HDR      string `json:"hdr,omitempty"` // pq, hlg
	Audio    bool   `json:"audio"`         // the file has an audio track
}

// AsThumbnail is the thumbnail job an info job's decode resembles, for its
// memory estimate: the ThumbHash's box, fit inside, in a format with alpha.
func (InfoJob) AsThumbnail() Options {
	return Options{Width: ThumbHashSide, Height: ThumbHashSide, Fit: FitInside, Format: imagefmt.PNG}
}

// Normalised is a canonical text of the job, for ETags.
func (j InfoJob) Normalised() string {
	if j.ThumbHash {
		return "info,thumbhash=true"
	}
	return "info,thumbhash=false"
}
