package videodecode

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/video"
)

// malformedClips are one clip of each codec, 2 s long, read at 1.3 s:
// a keyframe and the frames after it.
var malformedClips = []clip{
	{name: "h264.mp4", args: x264},
	{name: "hevc10.mkv", args: join(x265, p10)},
	{name: "vp8.webm", args: vp8},
	{name: "vp9.webm", args: vp9},
	{name: "av1.mp4", args: svt},
}

func makeClips(t testing.TB) map[string]string {
	t.Helper()
	needFFmpeg(t)
	dir := t.TempDir()
	paths := map[string]string{}
	for _, c := range malformedClips {
		c.size, c.seconds = "320x240", 2
		paths[c.name] = c.make(t, dir)
	}
	return paths
}

// clone is f with its packets' data copied, so that a test may change them.
func clone(f video.Frame) video.Frame {
	f.Packets = slices.Clone(f.Packets)
	for i := range f.Packets {
		f.Packets[i].Data = slices.Clone(f.Packets[i].Data)
	}
	return f
}

// TestLimits: every limit refuses before its work, with ErrLimit, and a
// header that declares a smaller frame than the stream holds is refused
// by the decoder (its own check of every buffer) or by ours, never
// decoded past.
func TestLimits(t *testing.T) {
	paths := makeClips(t)
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			info, f := frameAt(t, path, 1.3)
			if len(f.Packets) < 3 {
				t.Fatalf("%d packets at 1.3 s: the clip has no frames past its keyframe", len(f.Packets))
			}
			var total int64
			for _, p := range f.Packets {
				total += int64(len(p.Data))
			}
			for _, c := range []struct {
				what string
				lim  Limits
			}{
				{"pixels", Limits{Pixels: 320*240 - 1}},
				{"packets", Limits{Packets: len(f.Packets) - 1}},
				{"bytes", Limits{Bytes: total - 1}},
				{"time", Limits{Time: time.Nanosecond}},
			} {
				if _, err := Decode(info, f, c.lim); !errors.Is(err, video.ErrLimit) {
					t.Errorf("%s: %v, want ErrLimit", c.what, err)
				}
			}
			// At the limits exactly, it decodes.
			if _, err := Decode(info, f, Limits{Pixels: 320 * 240, Packets: len(f.Packets), Bytes: total}); err != nil {
				t.Errorf("at the limits: %v", err)
			}
			small := info
			small.Width, small.Height, small.CodedWidth, small.CodedHeight = 160, 120, 0, 0
			if info.CodedWidth > 0 {
				small.CodedWidth, small.CodedHeight = 160, 120
			}
			if _, err := Decode(small, f, DefaultLimits()); !errors.Is(err, ErrDecode) {
				t.Errorf("a header of 160x120 for a 320x240 stream: %v, want ErrDecode", err)
			}
		})
	}
}

// TestRefusesWhatNoDecoderNeeds: the frame's packets are checked before
// any decoder opens.
func TestRefusesWhatNoDecoderNeeds(t *testing.T) {
	paths := makeClips(t)
	info, f := frameAt(t, paths["h264.mp4"], 1.3)
	cases := []struct {
		what string
		edit func(*video.Info, *video.Frame)
		want error
	}{
		{"an empty packet", func(_ *video.Info, f *video.Frame) { f.Packets[1].Data = nil }, ErrDecode},
		{"no keyframe first", func(_ *video.Info, f *video.Frame) { f.Packets[0].Key = false }, ErrDecode},
		{"no packet at the PTS", func(_ *video.Info, f *video.Frame) { f.PTS = -12345 }, ErrDecode},
		{"two packets at the PTS", func(_ *video.Info, f *video.Frame) { f.Packets[1].PTS = f.PTS; f.Packets[2].PTS = f.PTS }, ErrDecode},
		{"no packets", func(_ *video.Info, f *video.Frame) { f.Packets = nil }, ErrDecode},
		{"no size", func(i *video.Info, _ *video.Frame) { i.Width, i.CodedWidth = 0, 0 }, ErrDecode},
		{"an unknown codec", func(i *video.Info, _ *video.Frame) { i.Codec = "mpeg2" }, video.ErrNotServed},
	}
	for _, c := range cases {
		i, fr := info, clone(f)
		c.edit(&i, &fr)
		if _, err := Decode(i, fr, DefaultLimits()); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, err, c.want)
		}
	}
}

// TestMalformedPackets: truncated packets and garbage are an error (never
// a picture of garbage, a crash or a hang); random damage in the middle
// of the frames is an error or a picture, within the time limit, never a
// crash. VP8 and VP9 are the exception for truncation: their last
// partition (or tile) runs to the packet's end, so a packet cut short says
// nothing amiss, and FFmpeg's decoders read zeros past the end (VP8 finds
// it, then drops the error with its rows' return values under execute2):
// a cut packet gives a picture whose lower part is grey, bounded like any
// other.
func TestMalformedPackets(t *testing.T) {
	paths := makeClips(t)
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			info, f := frameAt(t, path, 1.3)
			lim := DefaultLimits()
			lim.DecodeAll = true
			lim.Time = 5 * time.Second
			cut := clone(f)
			for i := range cut.Packets {
				cut.Packets[i].Data = cut.Packets[i].Data[:len(cut.Packets[i].Data)/2]
			}
			vpx := info.Codec == video.VP8 || info.Codec == video.VP9
			if _, err := Decode(info, cut, lim); !errors.Is(err, ErrDecode) && !(vpx && err == nil) {
				t.Errorf("every packet cut in half: %v, want ErrDecode", err)
			}
			cut = clone(f)
			cut.Packets[0].Data = cut.Packets[0].Data[:len(cut.Packets[0].Data)/3]
			if _, err := Decode(info, cut, lim); !errors.Is(err, ErrDecode) && !(vpx && err == nil) {
				t.Errorf("the keyframe cut to a third: %v, want ErrDecode", err)
			}
			cut.Packets[0].Data = cut.Packets[0].Data[:8] // VP8's first partition too
			if _, err := Decode(info, cut, lim); !errors.Is(err, ErrDecode) {
				t.Errorf("the keyframe cut to 8 bytes: %v, want ErrDecode", err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			junk := clone(f)
			for i := range junk.Packets {
				for j := range junk.Packets[i].Data {
					junk.Packets[i].Data[j] = byte(rng.Uint32())
				}
			}
			if _, err := Decode(info, junk, lim); !errors.Is(err, ErrDecode) {
				t.Errorf("random bytes: %v, want ErrDecode", err)
			}
			for round := range 40 {
				bad := clone(f)
				for range 1 + rng.IntN(8) {
					p := &bad.Packets[rng.IntN(len(bad.Packets))]
					switch rng.IntN(3) {
					case 0: // a byte changed
						p.Data[rng.IntN(len(p.Data))] = byte(rng.Uint32())
					case 1: // a run zeroed
						at := rng.IntN(len(p.Data))
						clear(p.Data[at:min(len(p.Data), at+1+rng.IntN(64))])
					default: // cut short
						p.Data = p.Data[:1+rng.IntN(len(p.Data))]
					}
				}
				start := time.Now()
				pic, err := Decode(info, bad, lim)
				if err == nil && (pic.Width > 320 || pic.Height > 240 || len(pic.Pix) != pic.Width*pic.Height*3) {
					t.Errorf("round %d: a %dx%d picture of %d bytes", round, pic.Width, pic.Height, len(pic.Pix))
				}
				if err != nil && !errors.Is(err, ErrDecode) && !errors.Is(err, video.ErrNotServed) {
					t.Errorf("round %d: %v, want ErrDecode or ErrNotServed", round, err)
				}
				if d := time.Since(start); d > lim.Time+time.Second {
					t.Errorf("round %d took %v", round, d)
				}
			}
		})
	}
}

// TestConcealedFrameRefused: H.264's decoder conceals a damaged slice
// and says so on the frame (decode_error_flags): the frame is refused,
// not answered. (HEVC's, VP8's and VP9's decoders say nothing of damage
// inside their entropy-coded data: they give a damaged picture, bounded
// like any other.)
func TestConcealedFrameRefused(t *testing.T) {
	paths := makeClips(t)
	info, f := frameAt(t, paths["h264.mp4"], 1.3)
	bad := clone(f)
	last := bad.Packets[len(bad.Packets)-1].Data
	at := len(last) * 3 / 10
	for i := at; i < at+16; i++ {
		last[i] ^= 0x5a
	}
	if _, err := Decode(info, bad, DefaultLimits()); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "decoded with errors") {
		t.Errorf("a damaged slice: %v, want ErrDecode for a frame decoded with errors", err)
	}
}

// FuzzDecode feeds the keyframe of each codec's clip, changed, and the
// frames after it: an error or a picture, never a crash. Seeds: the
// clips' own keyframes.
func FuzzDecode(f *testing.F) {
	paths := makeClips(f)
	type seed struct {
		info  video.Info
		frame video.Frame
	}
	var seeds []seed
	for _, c := range malformedClips {
		info, fr := frameAt(f, paths[c.name], 0.3)
		seeds = append(seeds, seed{info, fr})
		f.Add(uint8(len(seeds)-1), bytes.Clone(fr.Packets[0].Data))
	}
	lim := DefaultLimits()
	lim.DecodeAll = true
	lim.Time = 5 * time.Second
	f.Fuzz(func(t *testing.T, which uint8, key []byte) {
		s := seeds[int(which)%len(seeds)]
		fr := clone(s.frame)
		fr.Packets[0].Data = key
		pic, err := Decode(s.info, fr, lim)
		if err == nil && len(pic.Pix) != pic.Width*pic.Height*3 {
			t.Fatalf("a %dx%d picture of %d bytes", pic.Width, pic.Height, len(pic.Pix))
		}
	})
}

// TestStreamAspectAgainstContainer: a bitstream whose VUI says pixels of
// 32:27 (h264_metadata and hevc_metadata write the VUI only) under an MP4
// without pasp is shown stretched by ffmpeg, while thumbd's plan read
// square pixels from the container: refused. Under a pasp of 1:1 ffmpeg
// follows the container, but the two readers still disagree: refused
// too, by the decoders' rule. A VUI that says 1:1 agrees, and decodes.
func TestStreamAspectAgainstContainer(t *testing.T) {
	dir := t.TempDir()
	needFFmpeg(t)
	vui := func(codec, sar string) []string {
		return []string{"-bsf:v", codec + "_metadata=sample_aspect_ratio=" + sar}
	}
	for _, c := range []struct {
		clip clip
		sar  string // what ffprobe reads of the stream
		want error
	}{
		{clip{name: "h264-sar.mp4", filter: "setsar=0", args: join(x264, vui("h264", "32/27"))}, "32:27", video.ErrNotServed},
		{clip{name: "hevc-sar.mp4", filter: "setsar=0", args: join(x265, vui("hevc", "32/27"))}, "32:27", video.ErrNotServed},
		{clip{name: "h264-sar-pasp.mp4", args: join(x264, vui("h264", "32/27"))}, "1:1", video.ErrNotServed},
		{clip{name: "h264-square.mp4", filter: "setsar=0", args: join(x264, vui("h264", "1/1"))}, "1:1", nil},
	} {
		c.clip.size, c.clip.seconds = "320x240", 1
		path := c.clip.make(t, dir)
		out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=sample_aspect_ratio", "-of", "csv=p=0", path).Output()
		if err != nil || strings.TrimSpace(string(out)) != c.sar {
			t.Fatalf("%s: ffprobe reads the stream's aspect as %q (%v), want %s", c.clip.name, out, err, c.sar)
		}
		info, f := frameAt(t, path, 0.5)
		if info.SampleAspect != [2]int{1, 1} {
			t.Fatalf("%s: the container reads %v, want square", c.clip.name, info.SampleAspect)
		}
		_, err = Decode(info, f, DefaultLimits())
		if !errors.Is(err, c.want) || (c.want != nil && !strings.Contains(err.Error(), "32:27")) {
			t.Errorf("%s: %v, want %v", c.clip.name, err, c.want)
		}
	}
}
