package video

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// Files built here, box by box, for what ffmpeg does not write: each
// refusal and each limit.

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func bx(typ string, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	return append(append(u32(uint32(8+len(body))), typ...), body...)
}

func fullBx(typ string, version byte, flags uint32, parts ...[]byte) []byte {
	return bx(typ, append([][]byte{u32(uint32(version)<<24 | flags)}, parts...)...)
}

// synth describes a small MP4: n samples of 10 bytes each, 512 ticks
// apart at 12800 a second, in one chunk; sync samples as listed.
type synth struct {
	n        int
	sync     []uint32
	entry    []byte // the sample entry, else an avc1 of 320x240
	entries  int    // stsd's count, else 1
	elst     []byte // an edts/elst box, else none
	dref     []byte // a dinf box, else a self-contained url
	stsz     []byte // else n sizes of 10
	stts     []byte
	stco     func(mdat int) []byte // else one chunk at the mdat's data
	tkhdM    matrix
	top      [][]byte // boxes after moov
	moovLast bool
}

func avc1(w, h uint16, config ...[]byte) []byte {
	body := append(make([]byte, 24), append(append(u16(w), u16(h)...), make([]byte, 50)...)...)
	binary.BigEndian.PutUint16(body[6:], 1) // data reference index
	if config == nil {
		config = [][]byte{bx("avcC", []byte{1, 66, 0, 30, 0xFF, 0xE0, 0})}
	}
	return bx("avc1", append([][]byte{body}, config...)...)
}

func (s synth) build() []byte {
	if s.tkhdM == (matrix{}) {
		s.tkhdM = identity
	}
	ftyp := bx("ftyp", []byte("isom"), u32(512), []byte("isomiso2avc1mp41"))
	data := bytes.Repeat([]byte{0xAB}, 10*s.n)
	mdat := bx("mdat", data)
	moov := func(mdatAt int) []byte {
		var m []byte
		for _, v := range s.tkhdM {
			m = append(m, u32(uint32(v))...)
		}
		tkhd := fullBx("tkhd", 0, 3, u32(0), u32(0), u32(1), u32(0), u32(uint32(512*s.n)), make([]byte, 8), make([]byte, 8), m, u32(320<<16), u32(240<<16))
		entry := s.entry
		if entry == nil {
			entry = avc1(320, 240)
		}
		entries := s.entries
		if entries == 0 {
			entries = 1
		}
		stsd := fullBx("stsd", 0, 0, u32(uint32(entries)), entry)
		stts := s.stts
		if stts == nil {
			stts = fullBx("stts", 0, 0, u32(1), u32(uint32(s.n)), u32(512))
		}
		var syncs []byte
		for _, i := range s.sync {
			syncs = append(syncs, u32(i)...)
		}
		stss := fullBx("stss", 0, 0, u32(uint32(len(s.sync))), syncs)
		stsz := s.stsz
		if stsz == nil {
			stsz = fullBx("stsz", 0, 0, u32(10), u32(uint32(s.n)))
		}
		stsc := fullBx("stsc", 0, 0, u32(1), u32(1), u32(uint32(s.n)), u32(1))
		stco := fullBx("stco", 0, 0, u32(1), u32(uint32(mdatAt+8)))
		if s.n == 0 { // an empty moov, as a fragmented file's
			stts, stsc, stco = fullBx("stts", 0, 0, u32(0)), fullBx("stsc", 0, 0, u32(0)), fullBx("stco", 0, 0, u32(0))
		}
		if s.stco != nil {
			stco = s.stco(mdatAt)
		}
		dinf := s.dref
		if dinf == nil {
			dinf = bx("dinf", fullBx("dref", 0, 0, u32(1), fullBx("url ", 0, 1)))
		}
		minf := bx("minf", fullBx("vmhd", 0, 1, make([]byte, 8)), dinf, bx("stbl", stsd, stts, stss, stsc, stsz, stco))
		mdia := bx("mdia", fullBx("mdhd", 0, 0, u32(0), u32(0), u32(12800), u32(uint32(512*s.n)), u32(0)),
			fullBx("hdlr", 0, 0, u32(0), []byte("vide"), make([]byte, 12), []byte("v\x00")), minf)
		trak := bx("trak", tkhd, s.elst, mdia)
		mvhd := fullBx("mvhd", 0, 0, u32(0), u32(0), u32(1000), u32(uint32(40*s.n)), u32(1<<16), u16(0x100), make([]byte, 10), identityBytes(), make([]byte, 24), u32(2))
		return bx("moov", mvhd, trak)
	}
	var out []byte
	if s.moovLast {
		out = append(append(append(ftyp, mdat...), moov(len(ftyp))...), bytes.Join(s.top, nil)...)
	} else {
		head := len(ftyp) + len(moov(0))
		out = append(append(append(ftyp, moov(head)...), mdat...), bytes.Join(s.top, nil)...)
	}
	return out
}

func identityBytes() []byte {
	var m []byte
	for _, v := range identity {
		m = append(m, u32(uint32(v))...)
	}
	return m
}

func openBytes(b []byte, lim Limits) (*Reader, error) {
	return Open(bytes.NewReader(b), int64(len(b)), lim)
}

func TestSynthMP4(t *testing.T) {
	for _, moovLast := range []bool{false, true} {
		b := synth{n: 30, sync: []uint32{1, 11, 21}, moovLast: moovLast}.build()
		v, err := openBytes(b, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		i := v.Info()
		if i.Codec != H264 || i.Frames != 30 || i.FrameRate != 25 || i.Duration != 1.2 || len(i.Keyframes) != 3 || i.Keyframes[1].Time != 0.4 {
			t.Fatalf("%+v", i)
		}
		f, err := v.FrameAt(0.5)
		if err != nil || len(f.Packets) != 3 || f.Time != 0.48 || len(f.Ranges) != 1 || f.Ranges[0].Size != 30 {
			t.Fatalf("%+v %v", f, err)
		}
		if _, err := v.FrameAt(1.2); !errors.Is(err, ErrPastEnd) {
			t.Errorf("past the end: %v", err)
		}
		if _, err := v.FrameAt(math.NaN()); err == nil {
			t.Error("a time of NaN")
		}
	}
}

// The edit lists ffmpeg and the reader read alike: a delay (an empty
// edit) and a start in the media; the others refused.
func TestEditLists(t *testing.T) {
	elst := func(version byte, edits ...[3]int64) []byte {
		var es []byte
		for _, e := range edits {
			if version == 1 {
				es = append(es, append(u64(uint64(e[0])), u64(uint64(e[1]))...)...)
			} else {
				es = append(es, append(u32(uint32(e[0])), u32(uint32(int32(e[1])))...)...)
			}
			es = append(es, u32(uint32(e[2]))...)
		}
		return bx("edts", fullBx("elst", version, 0, u32(uint32(len(edits))), es))
	}
	// A delay of 1 s (movie ticks of 1/1000), then the media from 0.
	v, err := openBytes(synth{n: 25, sync: []uint32{1}, elst: elst(0, [3]int64{1000, -1, 1 << 16}, [3]int64{1000, 0, 1 << 16})}.build(), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if i := v.Info(); i.Duration != 2 || i.Keyframes[0].Time != 1 {
		t.Errorf("delayed: %+v", i)
	}
	if f, err := v.FrameAt(0.5); err != nil || f.Time != 1 {
		t.Errorf("before the delay ends: the first frame, %+v %v", f, err)
	}
	// The media from its third frame (1024 ticks): frame 2 presented at 0,
	// decoded from the keyframe before it.
	v, err = openBytes(synth{n: 25, sync: []uint32{1}, elst: elst(1, [3]int64{800, 1024, 1 << 16})}.build(), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if f, err := v.FrameAt(0); err != nil || f.PTS != 0 || len(f.Packets) != 3 || f.Packets[0].PTS != -1024 {
		t.Errorf("trimmed start: %+v %v", f, err)
	}
	if _, err := v.FrameAt(0.85); !errors.Is(err, ErrPastEnd) {
		t.Errorf("after the edit: %v", err)
	}
	for name, e := range map[string][]byte{
		"two media edits": elst(0, [3]int64{500, 0, 1 << 16}, [3]int64{500, 0, 1 << 16}),
		"three edits":     elst(0, [3]int64{500, -1, 1 << 16}, [3]int64{500, 0, 1 << 16}, [3]int64{500, 0, 1 << 16}),
		"a rate of 2":     elst(0, [3]int64{500, 0, 2 << 16}),
	} {
		if _, err := openBytes(synth{n: 25, sync: []uint32{1}, elst: e}.build(), DefaultLimits()); !errors.Is(err, ErrNotServed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// What ffmpeg would read otherwise, or thumbd does not decode, is
// refused by rule (ErrNotServed); what is malformed is an error.
func TestMP4Refusals(t *testing.T) {
	notServed := map[string]synth{
		"an external data reference":     {dref: bx("dinf", fullBx("dref", 0, 0, u32(1), fullBx("url ", 0, 0, []byte("file:///etc/passwd\x00"))))},
		"two sample descriptions":        {entries: 2, entry: append(avc1(320, 240), avc1(320, 240)...)},
		"MPEG-4 part 2":                  {entry: bx("mp4v", make([]byte, 78))},
		"encrypted":                      {entry: bx("encv", make([]byte, 78))},
		"a display matrix of 45 degrees": {tkhdM: withABCD([4]int32{46341, 46341, -46341, 46341})},
		"compressed moov":                {top: [][]byte{bx("cmov", make([]byte, 20))}},
		"a clean aperture that crops":    {entry: avc1(320, 240, bx("avcC", []byte{1, 66, 0, 30, 0xFF, 0xE0, 0}), bx("clap", u32(300), u32(1), u32(240), u32(1), u32(0), u32(1), u32(0), u32(1)))},
	}
	for name, s := range notServed {
		s.n, s.sync = 10, []uint32{1}
		b := s.build()
		if name == "compressed moov" {
			b = append(bx("ftyp", []byte("qt  "), u32(0), []byte("qt  ")), bx("cmov", make([]byte, 20))...)
		}
		if _, err := openBytes(b, DefaultLimits()); !errors.Is(err, ErrNotServed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	malformed := map[string]synth{
		"a sample past the end":   {stco: func(int) []byte { return fullBx("stco", 0, 0, u32(1), u32(1<<30)) }},
		"more times than samples": {stts: fullBx("stts", 0, 0, u32(1), u32(11), u32(512))},
		"fewer times":             {stts: fullBx("stts", 0, 0, u32(1), u32(9), u32(512))},
		"sizes past the box":      {stsz: fullBx("stsz", 0, 0, u32(0), u32(1000))},
		"no sync sample":          {sync: []uint32{}},
		"a sync sample of 11":     {sync: []uint32{11}},
		"a sample entry of 0x0":   {entry: avc1(0, 0)},
		"a broken avcC":           {entry: avc1(320, 240, bx("avcC", []byte{1, 66, 0, 30, 0xFF, 0xE1, 0, 9}))},
		"an avcC of version 2":    {entry: avc1(320, 240, bx("avcC", []byte{2, 66, 0, 30, 0xFF, 0xE0, 0}))},
		"avc1 without avcC":       {entry: avc1(320, 240, bx("free"))},
		"a clap of zeros":         {entry: avc1(320, 240, bx("avcC", []byte{1, 66, 0, 30, 0xFF, 0xE0, 0}), bx("clap", make([]byte, 32)))},
	}
	for name, s := range malformed {
		s.n = 10
		if s.sync == nil {
			s.sync = []uint32{1}
		}
		if _, err := openBytes(s.build(), DefaultLimits()); err == nil || errors.Is(err, ErrNotServed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A moof before moov, or in a file without mvex.
	// A clean aperture of the whole frame is no crop.
	whole := synth{n: 10, sync: []uint32{1}, entry: avc1(320, 240, bx("avcC", []byte{1, 66, 0, 30, 0xFF, 0xE0, 0}), bx("clap", u32(320), u32(1), u32(240), u32(1), u32(0), u32(1), u32(0), u32(1)))}
	if _, err := openBytes(whole.build(), DefaultLimits()); err != nil {
		t.Errorf("a whole clean aperture: %v", err)
	}
	b := append(bx("ftyp", []byte("isom"), u32(0), []byte("isom")), bx("moof", fullBx("mfhd", 0, 0, u32(1)))...)
	if _, err := openBytes(b, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "before the moov") {
		t.Errorf("moof first: %v", err)
	}
	b = synth{n: 10, sync: []uint32{1}, top: [][]byte{bx("moof", fullBx("mfhd", 0, 0, u32(1)))}}.build()
	if _, err := openBytes(b, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "no mvex") {
		t.Errorf("moof without mvex: %v", err)
	}
}

// Every count is bounded, and its error names what was too large.
func TestMP4Limits(t *testing.T) {
	big := synth{n: 10, sync: []uint32{1}, stsz: fullBx("stsz", 0, 0, u32(10), u32(1<<31))}.build()
	lim := DefaultLimits()
	if _, err := openBytes(big, lim); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "samples") {
		t.Errorf("2^31 samples declared: %v", err)
	}
	b := synth{n: 100, sync: []uint32{1}}.build()
	lim.Samples = 99
	if _, err := openBytes(b, lim); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "more than 99 samples") {
		t.Errorf("100 samples: %v", err)
	}
	lim = DefaultLimits()
	lim.Bytes = 500
	if _, err := openBytes(b, lim); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "bytes allowed") {
		t.Errorf("a budget of 500 bytes: %v", err)
	}
	lim = DefaultLimits()
	lim.Boxes = 5
	frees := synth{n: 10, sync: []uint32{1}, top: [][]byte{bx("free"), bx("free"), bx("free"), bx("free")}}.build()
	if _, err := openBytes(frees, lim); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "top-level boxes") {
		t.Errorf("7 top-level boxes: %v", err)
	}
	lim = DefaultLimits()
	lim.Keyframes = 2
	v, err := openBytes(synth{n: 30, sync: []uint32{1, 11, 21}}.build(), lim)
	if err != nil || len(v.Info().Keyframes) != 2 || !v.Info().MoreKeyframes {
		t.Errorf("keyframes past the limit: %v", err)
	}
	// Every byte read is counted, the frame's too: the header's first
	// read takes the whole small file, the frame's one more.
	lim = DefaultLimits()
	lim.Bytes = int64(len(b)) + 10
	v, err = openBytes(b, lim)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := v.FrameAt(0)
	if err := v.ReadFrame(&f); err != nil || v.Stats() != (Stats{Reads: 2, Bytes: int64(len(b)) + 10}) {
		t.Errorf("%v, %+v", err, v.Stats())
	}
	if f, _ := v.FrameAt(0.1); v.ReadFrame(&f) == nil {
		t.Errorf("a frame read past the budget: %+v", v.Stats())
	}
}

// fragmentedMoov is a built file's moov without samples, with mvex.
func fragmentedMoov() []byte {
	trex := fullBx("trex", 0, 0, u32(1), u32(1), u32(512), u32(10), u32(0x01010000))
	base := synth{n: 0, sync: []uint32{}}.build()
	// base has a moov without samples; add mvex to it.
	moovAt := bytes.Index(base, []byte("moov")) - 4
	moov := base[moovAt : moovAt+int(binary.BigEndian.Uint32(base[moovAt:]))]
	moov = append(u32(uint32(len(moov)+8+len(trex))), append(bytes.Clone(moov[4:]), bx("mvex", trex)...)...)
	return append(bytes.Clone(base[:moovAt]), moov...)
}

// fragment is a built moof and its mdat: runs of 5 samples of 10 bytes,
// the first a keyframe when keyFirst, every run with a data offset or
// only the first.
func fragment(seq uint32, dts uint64, keyFirst bool, runs int, withOffset bool) []byte {
	var trafKids [][]byte
	trafKids = append(trafKids, fullBx("tfhd", 0, tfhdDefaultBaseMoof, u32(1)), fullBx("tfdt", 1, 0, u64(dts)))
	for r := range runs {
		flags := uint32(trunFirstFlags | trunSize)
		fields := [][]byte{u32(5)}
		if withOffset || r == 0 {
			flags |= trunDataOffset
			fields = append(fields, u32(0)) // patched below
		}
		first := uint32(0x01010000)
		if keyFirst && r == 0 {
			first = 0x02000000
		}
		fields = append(fields, u32(first))
		for range 5 {
			fields = append(fields, u32(10))
		}
		trafKids = append(trafKids, fullBx("trun", 0, flags, fields...))
	}
	moof := bx("moof", fullBx("mfhd", 0, 0, u32(seq)), bx("traf", trafKids...))
	// Patch each run's data offset: the mdat's data after the moof,
	// 50 bytes a run.
	for r, at := 0, 0; r < runs; r++ {
		i := bytes.Index(moof[at:], []byte("trun")) + at
		if withOffset || r == 0 {
			binary.BigEndian.PutUint32(moof[i+12:], uint32(len(moof)+8+50*r))
		}
		at = i + 4
	}
	return append(moof, bx("mdat", bytes.Repeat([]byte{0xCD}, 50*runs))...)
}

func syntheticFragments() []byte {
	return append(append(fragmentedMoov(), fragment(1, 0, true, 2, true)...), fragment(2, 5120, true, 1, true)...)
}

// A fragmented file: moov with mvex, then moofs, each run's samples.
func TestSynthFragments(t *testing.T) {
	file := fragmentedMoov()
	good := append(append(bytes.Clone(file), fragment(1, 0, true, 2, true)...), fragment(2, 5120, true, 1, true)...)
	v, err := openBytes(good, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if i := v.Info(); i.Frames != 15 || len(i.Keyframes) != 2 || i.Keyframes[1].Time != 0.4 || i.Duration != 0.6 {
		t.Fatalf("%+v", i)
	}
	if f, err := v.FrameAt(0.3); err != nil || len(f.Packets) != 8 || len(f.Ranges) != 1 || f.Ranges[0].Size != 80 {
		t.Fatalf("%+v %v", f, err)
	}
	// A second run without a data offset: the specification and ffmpeg
	// disagree on where its samples are.
	ambiguous := append(bytes.Clone(file), fragment(1, 0, true, 2, false)...)
	if _, err := openBytes(ambiguous, DefaultLimits()); !errors.Is(err, ErrNotServed) {
		t.Errorf("a run without a data offset: %v", err)
	}
	// A fragment decoded before the one before it.
	back := append(append(bytes.Clone(file), fragment(1, 5120, true, 1, true)...), fragment(2, 0, true, 1, true)...)
	if _, err := openBytes(back, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "not after") {
		t.Errorf("a fragment back in time: %v", err)
	}
}

func TestSniff(t *testing.T) {
	ftyp := func(major string, compatible ...string) []byte {
		return bx("ftyp", []byte(major), u32(0), []byte(strings.Join(compatible, "")))
	}
	ebml := func(doc string) []byte {
		return el(idEBML, uel(idEBMLReadVersion, 1), sel(idDocType, doc))
	}
	for _, c := range []struct {
		b    []byte
		want Container
	}{
		{ftyp("isom", "isom", "iso2", "avc1", "mp41"), MP4},
		{ftyp("mp42", "mp41"), MP4},
		{ftyp("M4V ", "M4V ", "mp42"), MP4},
		{ftyp("3gp5", "3gp5"), MP4},
		{ftyp("dash", "iso6"), MP4},
		{ftyp("qt  ", "qt  "), MOV},
		{ftyp("iso8", "mif1", "heic"), ""},         // a HEIC still
		{ftyp("avif", "avif", "mif1"), ""},         // an AVIF
		{ftyp("avis", "avis", "msf1", "iso8"), ""}, // an AVIF sequence: an image
		{ftyp("isom", "avif"), ""},
		{ftyp("M4A ", "M4A "), ""}, // audio
		{ftyp("crx ", "crx "), ""},
		{append(u32(8), "moov"...), MOV}, // QuickTime without ftyp
		{append(u32(100), "mdat"...), MOV},
		{append(u32(8), "free"...), ""},
		{ebml("webm"), WebM},
		{ebml("matroska"), Matroska},
		{ebml("mka"), ""},
		{ebml("webm")[:6], ""},
		{[]byte("\x1A\x45\xDF\xA3"), ""},
		{[]byte("GIF89a"), ""},
		{nil, ""},
	} {
		got, ok := Sniff(c.b)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Sniff(%q) = %q %v, want %q", c.b, got, ok, c.want)
		}
	}
	if _, err := openBytes([]byte("GIF89a"), DefaultLimits()); !errors.Is(err, ErrUnknown) {
		t.Errorf("a GIF: %v", err)
	}
}
