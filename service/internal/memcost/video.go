package memcost

import (
	"errors"
	"fmt"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/video"
)

// defaultRefs are the frames a codec's decoder may hold when the stream
// does not say (VP8: the last, golden and altref frames; VP9 and AV1:
// their 8 reference slots; H.264 and HEVC: their levels' most, 16).
var defaultRefs = map[video.Codec]int{video.H264: 16, video.HEVC: 16, video.VP8: 3, video.VP9: 8, video.AV1: 8}

// videoHeader reads a video's header from its container, in Go
// (service/internal/video: the moov box, Matroska's Tracks and Cues),
// under the video reader's limits. Its format is the stream's codec.
// Pixels that are not square are refused by thumbd's rule (ErrNotServed):
// ffmpeg would scale the frame to its display width, thumbd does not yet.
func videoHeader(s thumbjob.Source) (Header, error) {
	ra, size := s.ReaderAt()
	r, err := video.Open(ra, size, video.DefaultLimits())
	if err != nil {
		if errors.Is(err, video.ErrNotServed) {
			return Header{}, fmt.Errorf("%w: %w", ErrNotServed, err)
		}
		return Header{}, err
	}
	i := r.Info()
	// The codec's row of the format table: the video package names its
	// codecs as the table does.
	f := imagefmt.Format(i.Codec)
	if spec, ok := imagefmt.Lookup(f); !ok || !spec.Video {
		return Header{}, fmt.Errorf("%w: a %s stream (%s)", ErrNotServed, i.Codec, i.Tag)
	}
	if i.SampleAspect[0] != i.SampleAspect[1] {
		return Header{}, fmt.Errorf("%w: pixels of aspect %d:%d (only square pixels are served)", ErrNotServed, i.SampleAspect[0], i.SampleAspect[1])
	}
	refs := i.MaxRefs
	if refs <= 0 {
		refs = defaultRefs[i.Codec]
	}
	h := Header{Format: f, Width: max(i.Width, i.CodedWidth), Height: max(i.Height, i.CodedHeight),
		Bands: 3, BytesPerSample: 1, Frames: 1, BitDepth: i.BitDepth,
		Video: &thumbjob.Video{Container: string(i.Container), Duration: i.Duration, FrameRate: i.FrameRate,
			Rotation: i.Rotation, Mirror: i.Mirror, Refs: refs,
			HDR: string(i.HDR), Audio: i.Audio, Bytes: size}}
	return h, nil
}

// videoCodecBytes is what decoding a video's frame holds per pixel of
// the frame, beyond the RGB frame libvips reads (the decoded image the
// estimate already counts): the decoder's pictures at the coded size (its
// reference frames, the frame being decoded and the one it outputs, in
// YUV at the stream's chroma and bit depth), the 8-bit RGB picture the
// conversion writes, and the default poster frame's best candidate kept
// while the next keyframe decodes.
func videoCodecBytes(h Header) float64 {
	v := h.Video
	samples := 1.5 // 4:2:0
	if h.BitDepth > 8 {
		samples *= 2
	}
	// The decoders' pictures are their blocks' multiples (H.264's 16,
	// HEVC's and VP9's 64, AV1's 128 at most), and FFmpeg's pools pad
	// each plane further: 1.2 over 128-pixel multiples covers them.
	const padding = 1.2
	coded := float64(align(h.Width, 128)) * float64(align(h.Height, 128)) / (float64(h.Width) * float64(h.Height))
	return float64(v.Refs+2)*samples*coded*padding + 3 + 3
}

// videoPacketBytes is what the packets of a frame's group of pictures
// take, read from the file: at most the file, and at most the video
// reader's byte budget.
func videoPacketBytes(h Header) float64 {
	return float64(min(h.Video.Bytes, video.DefaultLimits().Bytes))
}

// videoPreviewBytes is what a preview of frames frames holds beyond
// one frame's (codecBytes' 6 bytes a pixel): each frame's RGB picture,
// kept until the last decodes, its page of the TIFF handed to libvips,
// and libvips' copy of the pages, which it loads for random access
// (thumb's loadPreview): 9 bytes a pixel of every frame, and the turned
// copy of one. Measured (TestEstimateCoversMeasuredPeaks): 8 frames of
// 1080p at 169 MiB, 10.2 bytes a pixel of a frame with the rest of the
// job; priced at 12.
func videoPreviewBytes(h Header, frames float64) float64 {
	if frames <= 1 {
		return 0
	}
	const perFrame = 12
	return (frames*perFrame - 6) * float64(h.Width) * float64(h.Height)
}

func align(n, a int) int { return (n + a - 1) / a * a }

// lookVideo is Look's answer for a video in container c: its format is
// its codec when its header reads, else imagefmt.Video, which no server
// accepts (a 422 that says why: the source is a video, and thumbd prices
// nothing it cannot read).
func lookVideo(s thumbjob.Source, c video.Container) (thumbjob.Source, error) {
	h, err := videoHeader(s)
	if err != nil {
		s.Format = imagefmt.Video
		s.Unread = fmt.Sprintf("%s video: %s", c, err)
		return s, err
	}
	s.Format, s.Header = h.Format, h
	return s, nil
}
