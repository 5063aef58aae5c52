package thumb

import (
	"fmt"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
	"github.com/thumbd/thumbd/service/internal/videodecode"
)

// decodeVideo decodes f (its packets read) with FFmpeg's decoder
// (libavcodec: the recipe's 7.1 in the images' builds, Debian's 5.1 in
// the dynamic build), one thread, under the pixel limit; the picture is
// 8-bit sRGB.
func decodeVideo(info video.Info, f video.Frame, maxPixels int64) (picture, error) {
	p, err := videodecode.Decode(info, f, videodecode.Limits{Pixels: maxPixels})
	if err != nil {
		return picture{}, fmt.Errorf("%w: %s", thumbjob.ErrUndecodable, err)
	}
	return picture{width: p.Width, height: p.Height, pix: p.Pix}, nil
}
