// Package videodecode decodes the frame that service/internal/video found
// with FFmpeg's decoders (libavcodec: H.264, HEVC, VP8, VP9, and AV1
// through dav1d) and gives it as 8-bit sRGB rows. It is handed packets:
// thumbd reads the container in Go, and no FFmpeg demuxer ever reads the
// file (docs/adr/0008-video-decoders.md).
//
// Everything is bounded before or while it is spent: the frame's size
// against a pixel limit before the decoder opens (and every buffer the
// decoder allocates against the same size), the packets and their bytes,
// the decoder's threads, the time between packets. Every decoded frame
// larger than the header said, and every frame decoded with errors, is
// refused: fail closed.
package videodecode

/*
#cgo pkg-config: libavcodec libavutil
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include "decode.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/thumbd/thumbd/service/internal/video"
)

// ErrDecode: the decoder refused the bitstream, or gave the frame with
// errors, or never gave the frame asked for. The bytes are malformed (or
// of a kind this decoder does not read): the answer is the client's
// fault, never the service's.
var ErrDecode = errors.New("the video does not decode")

// Limits bound one Decode. A zero field takes DefaultLimits' value.
type Limits struct {
	// Pixels bounds the frame's size as the header declares it, checked
	// before the decoder opens.
	Pixels int64
	// Packets and Bytes bound the packets fed (a frame needs those from
	// the keyframe before it) and their bytes.
	Packets int
	Bytes   int64
	// Threads is the decoder's threads (at most 16); one by default, as
	// thumbd runs one libvips thread a job.
	Threads int
	// Time bounds the decode, checked before each packet: a packet's own
	// decode is bounded by its size and the pixel limit.
	Time time.Duration
	// DecodeAll decodes every packet, the frames no other refers to
	// included; by default those are skipped (H.264, HEVC and VP8 say
	// which they are), except the frame asked for.
	DecodeAll bool
}

// DefaultLimits: an 8K frame, 10 seconds of 60 fps from its keyframe, the
// video reader's byte budget, one thread, 10 seconds.
func DefaultLimits() Limits {
	return Limits{Pixels: 8192 * 4320, Packets: 600, Bytes: 64 << 20, Threads: 1, Time: 10 * time.Second}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Pixels <= 0 {
		l.Pixels = d.Pixels
	}
	if l.Packets <= 0 {
		l.Packets = d.Packets
	}
	if l.Bytes <= 0 {
		l.Bytes = d.Bytes
	}
	if l.Threads <= 0 {
		l.Threads = d.Threads
	}
	l.Threads = min(l.Threads, 16)
	if l.Time <= 0 {
		l.Time = d.Time
	}
	return l
}

// Picture is a decoded frame as 8-bit sRGB: Height rows of Width pixels,
// R, G, B, no padding. The displayed orientation (Info.Rotation, Mirror)
// and the pixel aspect ratio are not applied: the engine applies them.
type Picture struct {
	Width, Height int
	Pix           []byte
	// Colour is what the conversion read (the bitstream's, else the
	// container's, else the defaults).
	Colour Colour
	// Packets is the packets fed to the decoder, Frames the frames it gave
	// before the one asked for (skipped frames give none).
	Packets, Frames int
}

var codecs = map[video.Codec]C.int{
	video.H264: C.VD_H264, video.HEVC: C.VD_HEVC, video.VP8: C.VD_VP8, video.VP9: C.VD_VP9, video.AV1: C.VD_AV1,
}

// Decode decodes f, the frame of info's video that video.Reader.FrameAt
// found, with its packets' Data read (video.Reader.ReadFrame): its
// packets in decode order, then the decoder drained, until the frame
// whose PTS is f.PTS comes out.
func Decode(info video.Info, f video.Frame, lim Limits) (Picture, error) {
	var pic Picture
	var packets, frames int
	err := decode(info, f, lim, func(d *C.vd_dec, fr frameInfo) error {
		cv, col, err := plan(fr, info.Colour)
		if err != nil {
			return err
		}
		pic = Picture{Width: fr.Width, Height: fr.Height, Colour: col, Pix: make([]byte, fr.Width*fr.Height*3)}
		var eotf *C.float
		var oetf *C.uint8_t
		if cv.Linear {
			eotf, oetf = (*C.float)(unsafe.Pointer(&cv.EOTF[0])), (*C.uint8_t)(unsafe.Pointer(&cv.OETF[0]))
		}
		c := cv.c()
		if ret := C.vd_convert(d, &c, eotf, oetf, (*C.uint8_t)(unsafe.Pointer(&pic.Pix[0])), C.int(fr.Width*3)); ret < 0 {
			return fmt.Errorf("converting the frame: %s", avError(ret))
		}
		return nil
	}, &packets, &frames)
	if err != nil {
		return Picture{}, err
	}
	pic.Packets, pic.Frames = packets, frames
	return pic, nil
}

// pricedSize is the frame's size as the header declares it: the larger of
// the container's and the codec configuration's.
func pricedSize(info video.Info) (int, int) {
	return max(info.Width, info.CodedWidth), max(info.Height, info.CodedHeight)
}

// decode feeds f's packets and hands the frame asked for to keep while
// the decoder holds it.
func decode(info video.Info, f video.Frame, lim Limits, keep func(*C.vd_dec, frameInfo) error, packets, frames *int) error {
	lim = lim.withDefaults()
	start := time.Now()
	codec, ok := codecs[info.Codec]
	if !ok {
		return fmt.Errorf("%w: the codec %q", video.ErrNotServed, info.Codec)
	}
	w, h := pricedSize(info)
	if w <= 0 || h <= 0 {
		return fmt.Errorf("%w: the header declares no frame size", ErrDecode)
	}
	if int64(w)*int64(h) > lim.Pixels {
		return fmt.Errorf("%w: a %dx%d frame is over the limit of %d pixels", video.ErrLimit, w, h, lim.Pixels)
	}
	target, err := checkPackets(f, lim)
	if err != nil {
		return err
	}
	var d *C.vd_dec
	var extra *C.uint8_t
	if len(info.Extradata) > 0 {
		extra = (*C.uint8_t)(unsafe.Pointer(&info.Extradata[0]))
	}
	// The decoder's own check of every buffer, with room for the
	// alignment it pads widths (and H.264's and HEVC's heights) to.
	maxPixels := int64(align(w, 64)) * int64(align(h, 64))
	if ret := C.vd_open(&d, codec, extra, C.int(len(info.Extradata)), C.int(lim.Threads), C.int64_t(maxPixels)); ret < 0 {
		return fmt.Errorf("%w: opening the %s decoder: %s", ErrDecode, info.Codec, avError(ret))
	}
	defer C.vd_close(d)

	found := false
	// receive takes every frame the decoder has ready; after the last
	// packet it drains it.
	receive := func() error {
		for !found {
			var cf C.vd_frame
			ret := C.vd_receive(d, &cf)
			if ret == C.VD_AGAIN || ret == C.VD_END {
				return nil
			}
			if ret < 0 {
				return fmt.Errorf("%w: %s", ErrDecode, avError(ret))
			}
			fr := goFrame(cf)
			if fr.Width > w || fr.Height > h {
				return fmt.Errorf("%w: a decoded frame of %dx%d, larger than the header's %dx%d", ErrDecode, fr.Width, fr.Height, w, h)
			}
			if fr.Corrupt {
				return fmt.Errorf("%w: a frame decoded with errors", ErrDecode)
			}
			if fr.PTS != f.PTS {
				*frames++
				continue
			}
			if !fr.Supported {
				return fmt.Errorf("%w: the pixel format %s", video.ErrNotServed, fr.Format)
			}
			if err := sameAspect(info, fr); err != nil {
				return err
			}
			found = true
			return keep(d, fr)
		}
		return nil
	}
	for i, p := range f.Packets {
		if time.Since(start) > lim.Time {
			return fmt.Errorf("%w: decoding took over %v", video.ErrLimit, lim.Time)
		}
		skip := !lim.DecodeAll && i != target
		// A decoder that holds frames to give refuses the packet (EAGAIN)
		// until they are taken: taken, the packet is sent once more.
		for again := 0; ; again++ {
			ret := C.vd_send(d, (*C.uint8_t)(unsafe.Pointer(&p.Data[0])), C.int(len(p.Data)), C.int64_t(p.PTS), C.int64_t(p.DTS), cbool(p.Key), cbool(skip))
			*packets = i + 1
			if ret < 0 {
				return fmt.Errorf("%w: packet %d of %d: %s", ErrDecode, i+1, len(f.Packets), avError(ret))
			}
			if err := receive(); err != nil || found {
				return err
			}
			if ret != C.VD_AGAIN {
				break
			}
			if again > 0 {
				return fmt.Errorf("%w: the decoder takes no packet and gives no frame", ErrDecode)
			}
		}
	}
	if ret := C.vd_flush(d); ret < 0 {
		return fmt.Errorf("%w: %s", ErrDecode, avError(ret))
	}
	if err := receive(); err != nil || found {
		return err
	}
	return fmt.Errorf("%w: no frame came out at %.3f s (PTS %d)", ErrDecode, f.Time, f.PTS)
}

// checkPackets holds f's packets to the limits and to what a decoder
// needs: data in every one (an empty packet is the decoder's end of
// stream), a keyframe first, the frame asked for among them once. It
// gives that frame's index.
func checkPackets(f video.Frame, lim Limits) (int, error) {
	if len(f.Packets) == 0 {
		return 0, fmt.Errorf("%w: no packets", ErrDecode)
	}
	if len(f.Packets) > lim.Packets {
		return 0, fmt.Errorf("%w: %d packets from the keyframe, over the limit of %d", video.ErrLimit, len(f.Packets), lim.Packets)
	}
	if !f.Packets[0].Key {
		return 0, fmt.Errorf("%w: the first packet is no keyframe", ErrDecode)
	}
	var bytes int64
	target := -1
	for i, p := range f.Packets {
		if len(p.Data) == 0 {
			return 0, fmt.Errorf("%w: packet %d of %d is empty (or unread)", ErrDecode, i+1, len(f.Packets))
		}
		bytes += int64(len(p.Data))
		if p.PTS == f.PTS {
			if target >= 0 {
				return 0, fmt.Errorf("%w: two packets present PTS %d", ErrDecode, f.PTS)
			}
			target = i
		}
	}
	if bytes > lim.Bytes {
		return 0, fmt.Errorf("%w: %d bytes of packets, over the limit of %d", video.ErrLimit, bytes, lim.Bytes)
	}
	if target < 0 {
		return 0, fmt.Errorf("%w: no packet presents PTS %d", ErrDecode, f.PTS)
	}
	return target, nil
}

func align(n, a int) int { return (n + a - 1) / a * a }

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func avError(ret C.int) string {
	var buf [128]C.char
	C.vd_strerror(ret, &buf[0], C.int(len(buf)))
	return C.GoString(&buf[0])
}

func goFrame(c C.vd_frame) frameInfo {
	return frameInfo{
		Width: int(c.width), Height: int(c.height), PTS: int64(c.pts), Corrupt: c.corrupt != 0,
		Matrix: int(c.matrix), Range: int(c._range), Primaries: int(c.primaries), Transfer: int(c.transfer),
		ChromaLoc: int(c.chroma_loc), Supported: c.supported != 0, Depth: int(c.depth),
		Log2ChromaW: int(c.log2_cw), Log2ChromaH: int(c.log2_ch), Components: int(c.components),
		RGB: c.rgb != 0, Format: C.GoString(c.name), MaxCLL: float64(c.max_cll), MaxLuminance: float64(c.max_luminance),
		SampleAspect: [2]int{int(c.sar_num), int(c.sar_den)},
	}
}

func (cv conversion) c() C.vd_conv {
	var c C.vd_conv
	for i := range 3 {
		for j := range 4 {
			c.k[i][j] = C.float(cv.K[i][j])
		}
		for j := range 3 {
			c.gamut[i][j] = C.float(cv.Gamut[i][j])
		}
		c.ys[i] = C.float(cv.Ys[i])
	}
	c.hcosited, c.vcosited = cbool(cv.HCosited), cbool(cv.VCosited)
	c.linear, c.hlg, c.tonemap = cbool(cv.Linear), cbool(cv.HLG), cbool(cv.Tonemap)
	c.hlg_gain, c.hlg_exp, c.peak = C.float(cv.HLGGain), C.float(cv.HLGExp), C.float(cv.Peak)
	c.eotf_max = C.float(cv.EOTFMax)
	return c
}

// sameAspect refuses a frame whose bitstream says a pixel aspect ratio
// other than the container's (H.264's or HEVC's VUI under an MP4 without
// pasp, or whose pasp says otherwise): ffmpeg would show it by the
// stream's, thumbd's plan was made from the container's, so the two
// readers disagree and the answer is a refusal, not a picture at the
// wrong aspect. A bitstream that says nothing agrees with any container.
func sameAspect(info video.Info, fr frameInfo) error {
	num, den := fr.SampleAspect[0], fr.SampleAspect[1]
	if num <= 0 || den <= 0 {
		return nil
	}
	want := info.SampleAspect
	if int64(num)*int64(want[1]) != int64(den)*int64(want[0]) {
		return fmt.Errorf("%w: the stream's pixels are of aspect %d:%d where its container says %d:%d (only square pixels are served)", video.ErrNotServed, num, den, want[0], want[1])
	}
	return nil
}
