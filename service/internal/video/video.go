// Package video reads the containers of video sources (MP4 and QuickTime
// MOV, fragmented MP4, Matroska and WebM) in pure Go, before any decoder
// runs: what the stream is (codec, sizes, orientation, duration, colour,
// the codec's configuration) and, for a time, the packets a decoder needs
// to show the frame displayed then (from the keyframe before it) with
// their byte ranges. It reads through an io.ReaderAt under a byte budget,
// never the whole file: a bucket or an origin serves it with range
// requests. Every length is checked against its parent and the file,
// nothing is allocated from a declared size, every count is bounded: a
// malformed or truncated file is an error, never a panic.
//
// It is held to issue 45's rule: what ffmpeg's demuxers would read
// differently (an edit list of several edits, an external data reference,
// compressed Matroska tracks, laced video blocks, a display matrix of
// another angle) is refused, never guessed.
package video

import (
	"errors"
	"fmt"
	"io"
)

// Container is a container format as thumbd names it.
type Container string

const (
	MP4      Container = "mp4" // ISO BMFF: MP4, M4V, 3GP, fragmented MP4
	MOV      Container = "mov" // QuickTime
	WebM     Container = "webm"
	Matroska Container = "mkv"
)

// Codec is a video codec as THUMBD_INPUTS would name it.
type Codec string

const (
	H264 Codec = "h264"
	HEVC Codec = "hevc"
	VP8  Codec = "vp8"
	VP9  Codec = "vp9"
	AV1  Codec = "av1"
)

// Transfer is the HDR transfer function of a stream: PQ (SMPTE ST 2084)
// or HLG (ARIB STD-B67); "" for any other (SDR) or none said.
type Transfer string

const (
	PQ  Transfer = "pq"
	HLG Transfer = "hlg"
)

// Colour is what the container (colr, Matroska's Colour, vpcC) says of
// the stream's colour, in ISO/IEC 23091-2 code points (2: unspecified).
// The decoder's own reading of the bitstream is authoritative.
type Colour struct {
	Primaries, Transfer, Matrix int
	FullRange                   bool
}

// TimeBase is the duration of a timestamp tick, Num/Den seconds: an MP4
// track's 1/timescale, Matroska's TimestampScale/1e9.
type TimeBase struct{ Num, Den int64 }

// Seconds is ticks in seconds.
func (tb TimeBase) Seconds(ticks int64) float64 {
	return float64(ticks) * float64(tb.Num) / float64(tb.Den)
}

// Info is what the header says of a video's picture track.
type Info struct {
	Container Container
	Codec     Codec
	// Tag is how the container names the codec: the sample entry's type
	// (avc1, hvc1, ...) or Matroska's CodecID.
	Tag string
	// Track is the picture track's index among the file's tracks, in the
	// file's order: ffmpeg's stream index.
	Track int
	// Width and Height are the frame's size as the container declares it
	// (the sample entry's, PixelWidth and PixelHeight), before the pixel
	// aspect ratio and the rotation.
	Width, Height int
	// CodedWidth and CodedHeight are the size the codec's configuration
	// says (H.264 and HEVC: the sequence parameter set, cropped; AV1: the
	// sequence header's largest frame); 0 when it says none (VP8, VP9).
	CodedWidth, CodedHeight int
	// DisplayWidth and DisplayHeight are the picture as shown: the pixel
	// aspect ratio applied to the width, then turned by Rotation.
	DisplayWidth, DisplayHeight int
	// SampleAspect is the pixel aspect ratio (pasp, the display matrix's
	// scale, DisplayWidth against PixelWidth); {1, 1} when square.
	SampleAspect [2]int
	// Rotation is how far the decoded frame is turned clockwise to be
	// shown (0, 90, 180, 270), after a left-right flip when Mirror:
	// ffmpeg's autorotate applies the same (ffprobe's "rotation" is its
	// negative, modulo 360, when not mirrored).
	Rotation int
	Mirror   bool
	// Duration is the track's presented duration in seconds (the edit
	// list's when there is one).
	Duration float64
	// FrameRate is the average frames per second (0 when unknown).
	FrameRate float64
	// Frames is the number of frames when the index says it (0: unknown).
	Frames   int
	TimeBase TimeBase
	// Profile and Level are the codec configuration's (profile_idc and
	// level_idc, general_profile_idc and general_level_idc, VP9's and
	// AV1's profile and level); BitDepth and Chroma ("4:2:0", "4:2:2",
	// "4:4:4", "4:0:0") likewise, 0 and "" when unsaid.
	Profile, Level int
	BitDepth       int
	Chroma         string
	// MaxRefs is the reference frames the stream may hold (H.264's
	// max_num_ref_frames, HEVC's sps_max_dec_pic_buffering); 0 when
	// unsaid, as for VP8 (3), VP9 and AV1 (8).
	MaxRefs int
	Colour  Colour
	HDR     Transfer
	Audio   bool // the file has an audio track
	// Extradata is the codec configuration as ffmpeg's extradata: avcC's,
	// hvcC's and av1C's payload, Matroska's CodecPrivate; none for VP8
	// and VP9, whose decoders need none.
	Extradata []byte
	// Keyframes lists the first keyframes (at most Limits.Keyframes);
	// MoreKeyframes says there are more.
	Keyframes     []Keyframe
	MoreKeyframes bool
}

// Keyframe is a keyframe's presentation time and where its packet is
// (MP4); in Matroska, from its cue point, the position of the cluster
// that holds it, and a Size of 0 (a Matroska file without Cues lists
// none).
type Keyframe struct {
	Time   float64
	Offset int64
	Size   int64
}

// Orientation is Rotation and Mirror as an EXIF orientation (1 to 8),
// which the engine already applies to images.
func (i Info) Orientation() int {
	switch {
	case i.Rotation == 0:
		return map[bool]int{false: 1, true: 2}[i.Mirror]
	case i.Rotation == 180:
		return map[bool]int{false: 3, true: 4}[i.Mirror]
	case i.Rotation == 270:
		return map[bool]int{false: 8, true: 5}[i.Mirror]
	default:
		return map[bool]int{false: 6, true: 7}[i.Mirror]
	}
}

// Packet is one coded frame: where its data is in the file, its
// timestamps in the track's TimeBase (PTS as presented, after the edit
// list; Matroska stores no decode time, its DTS is its PTS) and whether
// it is a keyframe. Data is the frame's bytes: read on the way for
// Matroska, by ReadFrame for MP4.
type Packet struct {
	Offset, Size int64
	PTS, DTS     int64
	Key          bool
	Data         []byte
}

// Range is a span of the file: Size bytes from Offset.
type Range struct{ Offset, Size int64 }

// Frame is what decoding the frame displayed at a time needs: its
// packets from the keyframe before it to itself in decode order, and
// their bytes merged into contiguous ranges.
type Frame struct {
	// Time is the frame's presentation time in seconds, PTS in ticks.
	Time float64
	PTS  int64
	// Packets are in decode order; the first is the keyframe, the frame
	// shown is the one whose PTS is PTS (the last decoded is not always
	// it: B-frames are decoded after the frames they refer to).
	Packets []Packet
	Ranges  []Range
}

// Bytes is the frame's bytes in all.
func (f Frame) Bytes() int64 {
	var n int64
	for _, r := range f.Ranges {
		n += r.Size
	}
	return n
}

// Limits bound what reading one video may cost. Each is a count the file
// declares or a reader walks; going past one is an error wrapping
// ErrLimit that names it.
type Limits struct {
	// Bytes bounds every byte read from the file: boxes, elements,
	// indexes, clusters walked and packets.
	Bytes int64
	// Samples bounds the picture track's frames held in memory (about 24
	// bytes each).
	Samples int
	// Keyframes bounds Info.Keyframes.
	Keyframes int
	// Tracks bounds the tracks of a file.
	Tracks int
	// Boxes bounds the top-level boxes (or Matroska elements) walked, a
	// fragmented MP4's moof boxes among them.
	Boxes int
	// Cues bounds Matroska's cue points.
	Cues int
	// Clusters bounds the Matroska clusters walked for one frame.
	Clusters int
}

// DefaultLimits suit a video of a few hours: a million frames (an hour at
// 60 fps is 216,000), 64 MiB read.
func DefaultLimits() Limits {
	return Limits{Bytes: 64 << 20, Samples: 1 << 20, Keyframes: 1000, Tracks: 64, Boxes: 100_000, Cues: 100_000, Clusters: 10_000}
}

var (
	// ErrUnknown: the bytes are no container this package reads.
	ErrUnknown = errors.New("not an MP4, MOV, WebM or Matroska video")
	// ErrNotServed: a file read whole that thumbd refuses by its own
	// rules (a codec it does not decode, an edit list ffmpeg would read
	// otherwise); a decoder might open it, thumbd decodes none of it.
	ErrNotServed = errors.New("not served")
	// ErrLimit: a count or the byte budget past its limit.
	ErrLimit = errors.New("over a limit")
	// ErrPastEnd: a time after the video's end.
	ErrPastEnd = errors.New("past the end of the video")
)

// Stats counts what a Reader read: its ReadAt calls (round trips to a
// bucket or an origin) and their bytes.
type Stats struct {
	Reads int
	Bytes int64
}

// Reader reads one video file. It is not safe for concurrent use.
type Reader struct {
	src   *source
	info  Info
	mp4   *mp4Track // MP4 and MOV
	mkv   *mkvFile  // Matroska and WebM
	start *float64  // Start's, once found
}

// Open reads r's header: size is the file's length (an object's
// Content-Length). The container is sniffed from the first bytes.
func Open(r io.ReaderAt, size int64, lim Limits) (*Reader, error) {
	src := &source{r: r, size: size, budget: lim.Bytes}
	head, err := src.read(0, min(size, sniffBytes), readAhead)
	if err != nil {
		return nil, err
	}
	c, ok := Sniff(head)
	if !ok {
		return nil, ErrUnknown
	}
	v := &Reader{src: src}
	switch c {
	case MP4, MOV:
		v.mp4, v.info, err = openMP4(src, c, lim)
	default:
		v.mkv, v.info, err = openMatroska(src, lim)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	return v, nil
}

// Info is what the header says.
func (v *Reader) Info() Info { return v.info }

// Stats is what the Reader has read so far.
func (v *Reader) Stats() Stats { return v.src.stats }

// FrameAt finds the frame displayed at t seconds (the last frame whose
// presentation time is at most t; the first frame for a t before it) and
// the packets its decoding needs. t is a presentation time, as the
// packets' (Start is the first frame's); a t at or past Start plus the
// duration is ErrPastEnd.
func (v *Reader) FrameAt(t float64) (Frame, error) {
	if t < 0 || t != t {
		return Frame{}, fmt.Errorf("a time of %v seconds", t)
	}
	if v.info.Duration > 0 {
		start, err := v.Start()
		if err != nil {
			return Frame{}, err
		}
		if t >= start+v.info.Duration {
			return Frame{}, fmt.Errorf("%w: %.3f s of %.3f s from %.3f s", ErrPastEnd, t, v.info.Duration, start)
		}
	}
	return v.frameAt(t)
}

// Start is the presentation time of the first frame, in seconds: the
// time a player shows as 0, from which ffmpeg's -ss counts (a fragmented
// MP4 without an edit list, whose B-frames delay the first frame, starts
// after 0). A Matroska file's first cluster is read to find it.
func (v *Reader) Start() (float64, error) {
	if v.start == nil {
		f, err := v.frameAt(0)
		if err != nil {
			return 0, err
		}
		v.start = &f.Time
	}
	return *v.start, nil
}

func (v *Reader) frameAt(t float64) (Frame, error) {
	if v.mp4 != nil {
		return v.mp4.frameAt(v.src, t)
	}
	return v.mkv.frameAt(v.src, t)
}

// ReadFrame fills the Data of f's packets that have none, reading f's
// ranges through the Reader's budget: one read per range.
func (v *Reader) ReadFrame(f *Frame) error {
	for _, r := range f.Ranges {
		missing := false
		for _, p := range f.Packets {
			if p.Data == nil && p.Offset >= r.Offset && p.Offset+p.Size <= r.Offset+r.Size {
				missing = true
				break
			}
		}
		if !missing {
			continue
		}
		b, err := v.src.readExact(r.Offset, r.Size)
		if err != nil {
			return err
		}
		for i, p := range f.Packets {
			if p.Data == nil && p.Offset >= r.Offset && p.Offset+p.Size <= r.Offset+r.Size {
				f.Packets[i].Data = b[p.Offset-r.Offset : p.Offset-r.Offset+p.Size]
			}
		}
	}
	return nil
}

// merge is packets' bytes as contiguous ranges, in file order.
func merge(ps []Packet) []Range {
	var out []Range
	for _, p := range sortedByOffset(ps) {
		if n := len(out); n > 0 && out[n-1].Offset+out[n-1].Size >= p.Offset {
			if end := p.Offset + p.Size; end > out[n-1].Offset+out[n-1].Size {
				out[n-1].Size = end - out[n-1].Offset
			}
			continue
		}
		out = append(out, Range{Offset: p.Offset, Size: p.Size})
	}
	return out
}

// Keyframe is f cut to its first packet, the keyframe the frame decodes
// from: one packet, and the frame shown is that keyframe. tb is the
// track's Info.TimeBase.
func (f Frame) Keyframe(tb TimeBase) Frame {
	if len(f.Packets) == 0 {
		return f
	}
	k := f.Packets[0]
	return Frame{Time: tb.Seconds(k.PTS), PTS: k.PTS, Packets: []Packet{k}, Ranges: merge([]Packet{k})}
}
