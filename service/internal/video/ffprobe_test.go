package video

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// needTools skips when ffmpeg or ffprobe is missing: scripts/deps.sh dev
// installs them, so CI never skips.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing (scripts/deps.sh dev installs it)", tool)
			}
			t.Skipf("%s is missing (scripts/deps.sh dev installs it)", tool)
		}
	}
}

// recipe makes a video with Debian's ffmpeg from a generated source.
type recipe struct {
	name string
	// args are ffmpeg's between the inputs and the output; the inputs
	// are a 320x240 test pattern at 25 fps (and a sine with audio).
	args  []string
	audio bool
	// copy remuxes the made file with these arguments (ffmpeg 5.1 writes
	// a rotation only when it copies a stream).
	copy  []string
	pipe  bool // written to a pipe: a live Matroska, no cues, no sizes
	codec Codec
	// fragmented: ffprobe counts only moov's samples in nb_frames.
	fragmented bool
	// patch rewrites the made file.
	patch func(t *testing.T, b []byte) []byte
}

var x264 = []string{"-c:v", "libx264", "-b:v", "60k", "-g", "12"}

func x265(more ...string) []string {
	return append([]string{"-c:v", "libx265", "-b:v", "60k", "-tag:v", "hvc1", "-x265-params", "log-level=error:keyint=12"}, more...)
}

var vp9 = []string{"-c:v", "libvpx-vp9", "-b:v", "60k", "-g", "12", "-deadline", "realtime", "-cpu-used", "8"}

// recipes are the videos the tests make: every container, codec and
// layout the reader reads.
var recipes = []recipe{
	{name: "h264-moov-last.mp4", args: x264, codec: H264},
	{name: "h264-faststart.mp4", args: append(slices.Clone(x264), "-movflags", "+faststart"), codec: H264},
	{name: "h264-audio.mp4", args: append(slices.Clone(x264), "-c:a", "aac", "-shortest"), audio: true, codec: H264},
	{name: "h264-rot90.mov", args: x264, copy: []string{"-metadata:s:v:0", "rotate=90"}, codec: H264},
	{name: "h264-rot180.mov", args: x264, copy: []string{"-metadata:s:v:0", "rotate=180"}, codec: H264},
	{name: "hevc-iphone.mov", args: append(x265("-pix_fmt", "yuv420p10le", "-color_trc", "arib-std-b67", "-color_primaries", "bt2020", "-colorspace", "bt2020nc"), "-c:a", "aac", "-shortest"), audio: true, copy: []string{"-metadata:s:v:0", "rotate=270", "-movflags", "+faststart"}, codec: HEVC},
	{name: "hevc8.mp4", args: x265(), codec: HEVC},
	{name: "hevc10-pq.mp4", args: x265("-pix_fmt", "yuv420p10le", "-color_trc", "smpte2084", "-color_primaries", "bt2020", "-colorspace", "bt2020nc"), codec: HEVC},
	{name: "h264-frag.mp4", args: append(slices.Clone(x264), "-movflags", "frag_keyframe+empty_moov+default_base_moof"), codec: H264, fragmented: true},
	{name: "h264-frag-hybrid.mp4", args: append(slices.Clone(x264), "-movflags", "frag_keyframe"), codec: H264, fragmented: true},
	{name: "h264-frag-sidx.mp4", args: append(slices.Clone(x264), "-movflags", "+dash+frag_keyframe"), codec: H264, fragmented: true},
	{name: "h264-frag-edit.mp4", args: append(slices.Clone(x264), "-movflags", "frag_keyframe+empty_moov+default_base_moof"), codec: H264, fragmented: true, patch: withEdit},
	{name: "h264-vfr.mp4", args: append(slices.Clone(x264), "-vf", "setpts='if(lt(N,25),N*2,N+25)/25/TB'", "-fps_mode", "vfr"), codec: H264},
	{name: "vp9.mp4", args: vp9, codec: VP9},
	{name: "av1.mp4", args: []string{"-c:v", "libsvtav1", "-b:v", "60k", "-g", "12", "-preset", "12", "-svtav1-params", "verbosity=0"}, codec: AV1},
	{name: "vp8.webm", args: []string{"-c:v", "libvpx", "-b:v", "60k", "-g", "12"}, codec: VP8},
	{name: "vp9.webm", args: vp9, codec: VP9},
	{name: "vp9-audio.webm", args: append(slices.Clone(vp9), "-c:a", "libopus", "-shortest"), audio: true, codec: VP9},
	{name: "h264.mkv", args: x264, codec: H264},
	{name: "hevc10.mkv", args: x265("-pix_fmt", "yuv420p10le"), codec: HEVC},
	{name: "av1.mkv", args: []string{"-c:v", "libaom-av1", "-b:v", "60k", "-g", "12", "-cpu-used", "8", "-row-mt", "1"}, codec: AV1},
	{name: "h264-live.mkv", args: append(slices.Clone(x264), "-f", "matroska"), pipe: true, codec: H264},
}

// make writes the recipe's video of the given seconds into dir.
func (r recipe) make(t *testing.T, dir string, seconds float64) string {
	t.Helper()
	in := []string{"-v", "error", "-y", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=320x240:rate=25:duration=%g", seconds)}
	if r.audio {
		in = append(in, "-f", "lavfi", "-i", fmt.Sprintf("sine=duration=%g", seconds))
	}
	out := filepath.Join(dir, r.name)
	made := out
	if r.copy != nil {
		made = filepath.Join(dir, "first-"+r.name)
	}
	args := append(append(in, r.args...), made)
	if r.pipe {
		args[len(args)-1] = "pipe:1"
	}
	cmd := exec.Command("ffmpeg", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if r.pipe {
		f, err := os.Create(made)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, stderr.String())
	}
	if r.copy != nil {
		args := append(append([]string{"-v", "error", "-y", "-i", made, "-c", "copy"}, r.copy...), out)
		if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg %v: %v\n%s", args, err, b)
		}
	}
	if r.patch != nil {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, r.patch(t, b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// withEdit gives a fragmented file's track an edit list that starts its
// media 1024 ticks in (ffmpeg writes none with empty_moov), and drops
// mfra, whose offsets the longer moov would move.
func withEdit(t *testing.T, b []byte) []byte {
	t.Helper()
	top, err := children(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, box := range top {
		switch box.typ {
		case "mfra":
			continue
		case "moov":
			kids, _ := children(box.body, 0)
			var moov [][]byte
			for _, k := range kids {
				if k.typ != "trak" {
					moov = append(moov, bx(k.typ, k.body))
					continue
				}
				trak, _ := children(k.body, 0)
				var parts [][]byte
				for _, c := range trak {
					parts = append(parts, bx(c.typ, c.body))
					if c.typ == "tkhd" {
						parts = append(parts, bx("edts", fullBx("elst", 0, 0, u32(1), u32(1000), u32(1024), u32(1<<16))))
					}
				}
				moov = append(moov, bx("trak", parts...))
			}
			out = append(out, bx("moov", moov...)...)
		default:
			out = append(out, bx(box.typ, box.body)...)
		}
	}
	return out
}

// probed is what ffprobe says of a file.
type probed struct {
	Streams []struct {
		Index         int    `json:"index"`
		CodecType     string `json:"codec_type"`
		CodecName     string `json:"codec_name"`
		Width         int    `json:"width"`
		Height        int    `json:"height"`
		PixFmt        string `json:"pix_fmt"`
		AvgFrameRate  string `json:"avg_frame_rate"`
		TimeBase      string `json:"time_base"`
		Duration      string `json:"duration"`
		NbFrames      string `json:"nb_frames"`
		ExtradataSize int    `json:"extradata_size"`
		ExtradataHash string `json:"extradata_hash"`
		ColorTransfer string `json:"color_transfer"`
		SideData      []struct {
			Type     string `json:"side_data_type"`
			Rotation int    `json:"rotation"`
		} `json:"side_data_list"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
	Packets []struct {
		Stream int    `json:"stream_index"`
		PTS    *int64 `json:"pts"`
		Pos    string `json:"pos"`
		Size   string `json:"size"`
		Flags  string `json:"flags"`
	} `json:"packets"`
}

func ffprobe(t *testing.T, path string) probed {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_data_hash", "sha256", "-show_streams", "-show_format", "-show_packets",
		"-show_entries", "packet=stream_index,pts,pos,size,flags", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p probed
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// probedPacket is one of ffprobe's packets of the picture track.
type probedPacket struct {
	pts, pos, size int64
	key            bool
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

func parseFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func rational(s string) float64 {
	n, d, ok := strings.Cut(s, "/")
	if !ok {
		return parseFloat(s)
	}
	return parseFloat(n) / parseFloat(d)
}

// expectedFrame is what ffprobe's packets say the frame presented at t
// needs, by the rule FrameAt documents: the last packet presented at or
// before t (else the first presented), from the last keyframe before it
// in decode order that is not presented after it.
func expectedFrame(ps []probedPacket, tick float64, at float64) (shown probedPacket, from []probedPacket) {
	target := int64(math.Floor(at / tick))
	s, first := -1, 0
	for i, p := range ps {
		if p.pts <= target && (s < 0 || p.pts > ps[s].pts) {
			s = i
		}
		if p.pts < ps[first].pts {
			first = i
		}
	}
	if s < 0 {
		s = first
	}
	k := s
	for k >= 0 && !(ps[k].key && ps[k].pts <= ps[s].pts) {
		k--
	}
	if k < 0 {
		return ps[s], nil
	}
	return ps[s], ps[k : s+1]
}

// TestAgainstFFprobe makes every recipe's video and holds the reader to
// ffprobe (Debian's ffmpeg 5.1): the codec, sizes, rotation, duration,
// frame rate, frames, bit depth, HDR transfer, audio, the extradata's
// bytes, the keyframes, and, for times across the video, the frame
// presented and the packets from its keyframe: their positions, sizes,
// timestamps and key flags.
func TestAgainstFFprobe(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	dir := t.TempDir()
	for _, r := range recipes {
		t.Run(r.name, func(t *testing.T) {
			path := r.make(t, dir, 2)
			p := ffprobe(t, path)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			v, err := Open(f, st.Size(), DefaultLimits())
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			info := v.Info()
			vs := -1
			audio := false
			for i, s := range p.Streams {
				if s.CodecType == "video" && vs < 0 {
					vs = i
				}
				audio = audio || s.CodecType == "audio"
			}
			s := p.Streams[vs]
			check := func(what string, got, want any) {
				t.Helper()
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: %v, ffprobe says %v", what, got, want)
				}
			}
			check("codec", info.Codec, s.CodecName)
			check("codec of the recipe", info.Codec, r.codec)
			check("track", info.Track, s.Index)
			check("size", [2]int{info.Width, info.Height}, [2]int{s.Width, s.Height})
			if info.CodedWidth != 0 {
				check("coded size", [2]int{info.CodedWidth, info.CodedHeight}, [2]int{s.Width, s.Height})
			}
			check("audio", info.Audio, audio)
			rotation := 0
			for _, sd := range s.SideData {
				if sd.Type == "Display Matrix" {
					rotation = (360 - sd.Rotation%360) % 360
				}
			}
			check("rotation", info.Rotation, rotation)
			check("mirror", info.Mirror, false)
			if rotation%180 == 90 {
				check("displayed size", [2]int{info.DisplayWidth, info.DisplayHeight}, [2]int{s.Height, s.Width})
			} else {
				check("displayed size", [2]int{info.DisplayWidth, info.DisplayHeight}, [2]int{s.Width, s.Height})
			}
			depth, chroma := map[string]int{"yuv420p": 8, "yuv420p10le": 10}[s.PixFmt], "4:2:0"
			check("bit depth", info.BitDepth, depth)
			check("chroma", info.Chroma, chroma)
			check("HDR", info.HDR, map[string]Transfer{"smpte2084": PQ, "arib-std-b67": HLG}[s.ColorTransfer])
			want := s.Duration
			if want == "" || info.Container == WebM || info.Container == Matroska {
				want = p.Format.Duration
			}
			if info.Duration != 0 || !r.pipe {
				if d := parseFloat(want); math.Abs(info.Duration-d) > 0.0005 {
					t.Errorf("duration %.6f, ffprobe says %s", info.Duration, want)
				}
			}
			if fr := rational(s.AvgFrameRate); info.FrameRate != 0 || !r.pipe {
				if math.Abs(info.FrameRate-fr) > fr/200 {
					t.Errorf("frame rate %.4f, ffprobe says %s", info.FrameRate, s.AvgFrameRate)
				}
			}
			if s.NbFrames != "" && !r.fragmented {
				check("frames", info.Frames, s.NbFrames)
			}
			check("extradata size", len(info.Extradata), s.ExtradataSize)
			if s.ExtradataHash != "" {
				sum := sha256.Sum256(info.Extradata)
				check("extradata", "SHA256:"+hex.EncodeToString(sum[:]), s.ExtradataHash)
			}
			// ffprobe's packets of the picture track, in decode order. Its
			// position of a Matroska packet is its block's, 4 bytes (a
			// one-byte track number, the timestamp, the flags) before
			// the frame's data.
			headLength := int64(0)
			if info.Container == WebM || info.Container == Matroska {
				headLength = 4
			}
			var ps []probedPacket
			for _, pk := range p.Packets {
				if pk.Stream == s.Index && pk.PTS != nil {
					ps = append(ps, probedPacket{pts: *pk.PTS, pos: atoi(t, pk.Pos) + headLength, size: atoi(t, pk.Size), key: strings.HasPrefix(pk.Flags, "K")})
				}
			}
			check("time base", fmt.Sprintf("%d/%d", info.TimeBase.Num, info.TimeBase.Den), timeBase(s.TimeBase, info.TimeBase))
			tick := float64(info.TimeBase.Num) / float64(info.TimeBase.Den)
			var keys []Keyframe
			for _, pk := range ps {
				if pk.key {
					k := Keyframe{Time: float64(pk.pts) * tick, Offset: pk.pos, Size: pk.size}
					keys = append(keys, k)
				}
			}
			checkKeyframes(t, info, keys)
			for _, at := range []float64{0, 0.01, 0.3, 0.45, 0.5, 0.9, 1.0, 1.23, 1.5, 1.7, 1.95} {
				shown, from := expectedFrame(ps, tick, at)
				fr, err := v.FrameAt(at)
				if err != nil {
					t.Errorf("t=%v: %v", at, err)
					continue
				}
				if fr.PTS != shown.pts {
					t.Errorf("t=%v: the frame at %d, ffprobe's at %d", at, fr.PTS, shown.pts)
				}
				var got []probedPacket
				for _, pk := range fr.Packets {
					got = append(got, probedPacket{pts: pk.PTS, pos: pk.Offset, size: pk.Size, key: pk.Key})
				}
				if !slices.Equal(got, from) {
					t.Errorf("t=%v: packets\n%v\nffprobe's\n%v", at, got, from)
				}
				checkRead(t, v, path, fr)
			}
			if info.Duration > 0 {
				start, err := v.Start()
				if err != nil {
					t.Fatal(err)
				}
				if want := ffprobeStart(t, path); math.Abs(start-want) > 0.0005 {
					t.Errorf("starts at %v s, ffprobe's start_time %v s", start, want)
				}
				if _, err := v.FrameAt(start + info.Duration + 0.01); !errors.Is(err, ErrPastEnd) {
					t.Errorf("a frame past the end: %v", err)
				}
			}
			t.Logf("%s: %d reads, %d bytes of %d for the header and 11 frames", r.name, v.Stats().Reads, v.Stats().Bytes, st.Size())
		})
	}
}

// timeBase is ffprobe's time base as the reader's fraction reads: the
// same duration of a tick, whatever its terms.
func timeBase(probe string, tb TimeBase) string {
	n, d, _ := strings.Cut(probe, "/")
	pn, pd := parseFloat(n), parseFloat(d)
	if pn*float64(tb.Den) == pd*float64(tb.Num) {
		return fmt.Sprintf("%d/%d", tb.Num, tb.Den)
	}
	return probe
}

// checkKeyframes holds Info's keyframes to ffprobe's key packets: an
// MP4's every one (time, position, size), a Matroska's cue points (each
// at a key packet's time, its position the cluster's: before it).
func checkKeyframes(t *testing.T, info Info, keys []Keyframe) {
	t.Helper()
	if info.Container == MP4 || info.Container == MOV {
		if len(info.Keyframes) != len(keys) {
			t.Errorf("%d keyframes, ffprobe says %d", len(info.Keyframes), len(keys))
			return
		}
		for i, k := range keys {
			if g := info.Keyframes[i]; math.Abs(g.Time-k.Time) > 1e-9 || g.Offset != k.Offset || g.Size != k.Size {
				t.Errorf("keyframe %d: %+v, ffprobe says %+v", i, g, k)
			}
		}
		return
	}
	for _, g := range info.Keyframes {
		i := slices.IndexFunc(keys, func(k Keyframe) bool { return math.Abs(g.Time-k.Time) < 1e-9 })
		if i < 0 || g.Offset >= keys[i].Offset {
			t.Errorf("cue %+v is no keyframe of ffprobe's %+v", g, keys)
		}
	}
}

// checkRead reads the frame's packets through the Reader and holds them
// to the file's bytes.
func checkRead(t *testing.T, v *Reader, path string, fr Frame) {
	t.Helper()
	if err := v.ReadFrame(&fr); err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fr.Packets {
		if string(p.Data) != string(file[p.Offset:p.Offset+p.Size]) {
			t.Fatalf("packet at %d: its data is not the file's", p.Offset)
		}
	}
	var n int64
	for _, r := range fr.Ranges {
		n += r.Size
	}
	if n != fr.Bytes() {
		t.Fatal("Bytes is not the ranges' sum")
	}
}

// countingReader counts the ReadAt calls a Reader makes and their bytes,
// as a bucket would see its range requests.
type countingReader struct {
	r            *os.File
	reads, bytes int64
}

func (c *countingReader) ReadAt(b []byte, off int64) (int, error) {
	c.reads++
	c.bytes += int64(len(b))
	return c.r.ReadAt(b, off)
}

// What a poster frame costs in reads of a 30-second video with a
// keyframe every 2 s: the header (moov wherever it is, or the EBML
// header, Tracks and Cues) in a few reads, then the frame's ranges: for
// MP4 exactly the packets from the keyframe to the frame; for Matroska
// the cluster from its start to the frame and the frames after it that
// could still be presented before it.
func TestBytesRead(t *testing.T) {
	needTools(t, "ffmpeg")
	dir := t.TempDir()
	long := []string{"-c:v", "libx264", "-preset", "veryfast", "-b:v", "400k", "-g", "50"}
	for _, r := range []recipe{
		{name: "moov-last.mp4", args: long},
		{name: "faststart.mp4", args: append(slices.Clone(long), "-movflags", "+faststart")},
		{name: "fragmented.mp4", args: append(slices.Clone(long), "-movflags", "frag_keyframe+empty_moov+default_base_moof")},
		{name: "cues.mkv", args: long},
	} {
		path := r.make(t, dir, 30)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		c := &countingReader{r: f}
		v, err := Open(c, st.Size(), DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		headReads, headBytes := c.reads, c.bytes
		fr, err := v.FrameAt(17.3)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.ReadFrame(&fr); err != nil {
			t.Fatal(err)
		}
		frameReads, frameBytes := c.reads-headReads, c.bytes-headBytes
		t.Logf("%s (%d bytes): header %d reads, %d bytes; the frame at %.2f s from the keyframe at %.2f s: %d packets, %d ranges, %d bytes; read in %d reads, %d bytes",
			r.name, st.Size(), headReads, headBytes, fr.Time, float64(fr.Packets[0].PTS)*float64(v.Info().TimeBase.Num)/float64(v.Info().TimeBase.Den), len(fr.Packets), len(fr.Ranges), fr.Bytes(), frameReads, frameBytes)
		if s := v.Stats(); s.Reads != int(c.reads) || s.Bytes != c.bytes {
			t.Errorf("%s: Stats %+v, the reader saw %d reads of %d bytes", r.name, s, c.reads, c.bytes)
		}
		switch r.name {
		case "moov-last.mp4", "faststart.mp4":
			if headReads > 4 || headBytes > moovSize(t, path)+2*readAhead {
				t.Errorf("%s: the header in %d reads, %d bytes", r.name, headReads, headBytes)
			}
			if frameReads != int64(len(fr.Ranges)) || frameBytes != fr.Bytes() {
				t.Errorf("%s: the frame in %d reads, %d bytes", r.name, frameReads, frameBytes)
			}
		case "cues.mkv":
			if headReads > 3 {
				t.Errorf("%s: the header in %d reads", r.name, headReads)
			}
		}
		f.Close()
	}
}

// moovSize is the size of an MP4's moov box.
func moovSize(t *testing.T, path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kids, err := children(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := first(kids, "moov")
	return int64(len(m.body)) + m.head
}

// ffprobeStart is ffprobe's start_time of the first picture stream: its
// first frame's presentation time, in seconds.
func ffprobeStart(t *testing.T, path string) float64 {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=start_time", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	return parseFloat(strings.TrimSpace(string(out)))
}
