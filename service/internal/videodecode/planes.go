package videodecode

/*
#include "decode.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/thumbd/thumbd/service/internal/video"
)

// planes is a decoded frame as the decoder gave it, each plane's rows
// packed: for the tests, which hold the decode to FFmpeg's own bit for bit
// (the conversion is held to FFmpeg's apart).
type planes struct {
	frameInfo
	Planes [][]byte
}

func decodePlanes(info video.Info, f video.Frame, lim Limits) (planes, error) {
	var out planes
	var packets, frames int
	err := decode(info, f, lim, func(d *C.vd_dec, fr frameInfo) error {
		out.frameInfo = fr
		bps := 1
		if fr.Depth > 8 {
			bps = 2
		}
		for p := range fr.Components {
			w, h := fr.Width, fr.Height
			if p > 0 && !fr.RGB {
				w, h = -(-w >> fr.Log2ChromaW), -(-h >> fr.Log2ChromaH)
			}
			b := make([]byte, w*h*bps)
			if ret := C.vd_plane(d, C.int(p), (*C.uint8_t)(unsafe.Pointer(&b[0])), C.int(w*bps), C.int(h)); ret < 0 {
				return fmt.Errorf("plane %d: %s", p, avError(ret))
			}
			out.Planes = append(out.Planes, b)
		}
		return nil
	}, &packets, &frames)
	return out, err
}
