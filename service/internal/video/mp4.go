package video

import (
	"errors"
	"fmt"
	"math"
)

// mp4Track is the picture track of an MP4 or MOV: its samples in decode
// order (offsets, sizes, decode times and composition offsets in the
// media's timescale) and which are sync samples; its edit; and, for a
// fragmented file, what its fragments default to.
type mp4Track struct {
	id        uint32
	timescale int64
	offsets   []int64
	sizes     []uint32
	dts       []int64
	cts       []int32
	sync      []bool
	// shift is subtracted from every presentation time: the edit's
	// media time, less an empty edit's delay (both in the timescale).
	shift int64
	// end is the edit's end in presentation time, -1 without an edit.
	end int64
	// fragmented files: trex's defaults and the next decode time.
	frag     bool
	defaults map[uint32]trex // every track's: the data of the others' runs is skipped
	nextDTS  int64
	limits   Limits
	fileSize int64
}

// trex is a track's defaults for its fragments (mvex/trex, tfhd).
type trex struct {
	duration, size, flags uint32
}

// mp4Header is what moov says besides the picture track's samples.
type mp4Header struct {
	movieTimescale int64
	movieDuration  int64
	fragDuration   int64 // mvex/mehd, in the movie's timescale
	movieMatrix    matrix
	fragmented     bool
}

// openMP4 reads the top-level boxes: moov whole, every moof of a
// fragmented file, and the others' headers only (mdat's and the rest are
// skipped by their sizes).
func openMP4(src *source, c Container, lim Limits) (*mp4Track, Info, error) {
	var (
		tr   *mp4Track
		info Info
		hdr  mp4Header
	)
	for off, n := int64(0), 0; off < src.size; n++ {
		if n == lim.Boxes {
			return nil, info, fmt.Errorf("%w: more than %d top-level boxes", ErrLimit, lim.Boxes)
		}
		fb, err := readFileBox(src, off)
		if err != nil {
			return nil, info, err
		}
		switch fb.typ {
		case "moov":
			if tr != nil {
				break // ffmpeg reads the first moov and skips the others
			}
			moov, err := readBody(src, fb)
			if err != nil {
				return nil, info, err
			}
			if tr, info, hdr, err = readMoov(src, moov, c, lim); err != nil {
				return nil, info, err
			}
		case "moof":
			if tr == nil {
				return nil, info, errors.New("a moof box before the moov box")
			}
			if !hdr.fragmented {
				return nil, info, errors.New("a moof box in a file whose moov has no mvex")
			}
			moof, err := readBody(src, fb)
			if err != nil {
				return nil, info, err
			}
			if err := tr.readMoof(moof); err != nil {
				return nil, info, fmt.Errorf("the moof at %d: %w", fb.at, err)
			}
		case "cmov":
			return nil, info, fmt.Errorf("%w: a compressed movie header (cmov)", ErrNotServed)
		}
		// Every box is walked, mdat too, by its header: a file shorter
		// than its boxes say is truncated, whatever it cut.
		off += fb.size
	}
	if tr == nil {
		return nil, info, errors.New("no moov box")
	}
	if err := tr.finish(&info, hdr); err != nil {
		return nil, info, err
	}
	return tr, info, nil
}

// readMoov reads the movie header and its tracks: the picture track whole
// (sample entry, configuration, sample tables), the others for their
// handler only.
func readMoov(src *source, moov box, c Container, lim Limits) (*mp4Track, Info, mp4Header, error) {
	info := Info{Container: c, Track: -1, SampleAspect: [2]int{1, 1}}
	var hdr mp4Header
	kids, err := children(moov.body, moov.at+moov.head)
	if err != nil {
		return nil, info, hdr, fmt.Errorf("moov: %w", err)
	}
	mvhd, ok := first(kids, "mvhd")
	if !ok {
		return nil, info, hdr, errors.New("no mvhd box")
	}
	v, _, f := full(mvhd)
	f.bytes(map[bool]int{true: 16, false: 8}[v == 1]) // creation and modification times
	hdr.movieTimescale = int64(f.n(4))
	hdr.movieDuration = int64(f.n(map[bool]int{true: 8, false: 4}[v == 1]))
	f.bytes(4 + 2 + 10) // rate, volume, reserved
	for i := range hdr.movieMatrix {
		hdr.movieMatrix[i] = int32(f.n(4))
	}
	if f.err != nil || hdr.movieTimescale == 0 {
		return nil, info, hdr, errors.Join(errors.New("mvhd: malformed, or a timescale of 0"), f.err)
	}
	var defaults map[uint32]trex
	if mvex, ok := first(kids, "mvex"); ok {
		hdr.fragmented = true
		if defaults, hdr.fragDuration, err = readMvex(mvex); err != nil {
			return nil, info, hdr, err
		}
	}
	var picked *mp4Track
	tracks := 0
	for _, trak := range kids {
		if trak.typ != "trak" {
			continue
		}
		if tracks == lim.Tracks {
			return nil, info, hdr, fmt.Errorf("%w: more than %d tracks", ErrLimit, lim.Tracks)
		}
		tracks++
		t, handler, err := readTrak(src, trak, hdr, picked == nil, &info, lim)
		if err != nil {
			return nil, info, hdr, fmt.Errorf("track %d: %w", tracks-1, err)
		}
		if handler == "soun" {
			info.Audio = true
		}
		if t != nil && picked == nil {
			picked, info.Track = t, tracks-1
		}
	}
	if picked == nil {
		return nil, info, hdr, errors.New("no video track")
	}
	if hdr.fragmented {
		// ffmpeg shifts a fragmented track by its edit, as any other,
		// but shows its fragments past the edit's end: so does thumbd.
		picked.frag, picked.defaults, picked.end = true, defaults, -1
		if _, ok := defaults[picked.id]; !ok {
			return nil, info, hdr, fmt.Errorf("no trex for track %d", picked.id)
		}
	}
	return picked, info, hdr, nil
}

// readMvex reads each track's fragment defaults and mehd's duration.
func readMvex(mvex box) (map[uint32]trex, int64, error) {
	kids, err := children(mvex.body, mvex.at+mvex.head)
	if err != nil {
		return nil, 0, fmt.Errorf("mvex: %w", err)
	}
	out := map[uint32]trex{}
	var duration int64
	for _, b := range kids {
		switch b.typ {
		case "trex":
			_, _, f := full(b)
			id := uint32(f.n(4))
			f.n(4) // default_sample_description_index
			t := trex{duration: uint32(f.n(4)), size: uint32(f.n(4)), flags: uint32(f.n(4))}
			if f.err != nil {
				return nil, 0, fmt.Errorf("trex: %w", f.err)
			}
			out[id] = t
		case "mehd":
			v, _, f := full(b)
			duration = int64(f.n(map[bool]int{true: 8, false: 4}[v == 1]))
			if f.err != nil || duration < 0 {
				return nil, 0, errors.New("mehd: malformed")
			}
		}
	}
	return out, duration, nil
}

// readTrak reads a track's handler and, when it is the first picture
// track (want), the rest into info and an mp4Track.
func readTrak(src *source, trak box, hdr mp4Header, want bool, info *Info, lim Limits) (*mp4Track, string, error) {
	kids, err := children(trak.body, trak.at+trak.head)
	if err != nil {
		return nil, "", err
	}
	mdia, err := within(kids, "mdia")
	if err != nil {
		return nil, "", err
	}
	handler := ""
	if hdlr, ok := first(mdia, "hdlr"); ok {
		_, _, f := full(hdlr)
		f.n(4) // pre_defined (QuickTime: the component type)
		handler = string(f.bytes(4))
	}
	if handler != "vide" || !want {
		return nil, handler, nil
	}
	tkhd, ok := first(kids, "tkhd")
	if !ok {
		return nil, handler, errors.New("no tkhd box")
	}
	v, _, f := full(tkhd)
	f.bytes(map[bool]int{true: 16, false: 8}[v == 1])
	t := &mp4Track{id: uint32(f.n(4)), end: -1, limits: lim, fileSize: src.size}
	f.bytes(4 + map[bool]int{true: 8, false: 4}[v == 1] + 8 + 8) // reserved, duration, reserved, layer to volume
	var m matrix
	for i := range m {
		m[i] = int32(f.n(4))
	}
	if f.err != nil {
		return nil, handler, fmt.Errorf("tkhd: %w", f.err)
	}
	mdhd, ok := first(mdia, "mdhd")
	if !ok {
		return nil, handler, errors.New("no mdhd box")
	}
	v, _, f = full(mdhd)
	f.bytes(map[bool]int{true: 16, false: 8}[v == 1])
	t.timescale = int64(f.n(4))
	mediaDuration := int64(f.n(map[bool]int{true: 8, false: 4}[v == 1]))
	if f.err != nil || t.timescale == 0 || mediaDuration < 0 {
		return nil, handler, errors.Join(errors.New("mdhd: malformed, or a timescale of 0"), f.err)
	}
	if err := t.readEdits(kids, hdr); err != nil {
		return nil, handler, err
	}
	info.Rotation, info.Mirror, info.SampleAspect, err = m.times(hdr.movieMatrix).orientation()
	if err != nil {
		return nil, handler, err
	}
	minf, err := within(mdia, "minf")
	if err != nil {
		return nil, handler, err
	}
	if err := selfContained(minf); err != nil {
		return nil, handler, err
	}
	stbl, err := within(minf, "stbl")
	if err != nil {
		return nil, handler, err
	}
	if err := sampleEntry(stbl, info); err != nil {
		return nil, handler, err
	}
	if err := t.readSamples(src, stbl); err != nil {
		return nil, handler, err
	}
	if info.Duration = float64(mediaDuration) / float64(t.timescale); t.end >= 0 {
		info.Duration = float64(t.end) / float64(t.timescale)
	}
	return t, handler, nil
}

// readEdits reads the track's edit list. ffmpeg and thumbd agree on the
// common cases: no edit list; one edit of the media from a time (at
// rate 1); the same after an empty edit (a delay). Any other list is
// refused: ffmpeg would show other frames at other times.
func (t *mp4Track) readEdits(trak []box, hdr mp4Header) error {
	edts, ok := first(trak, "edts")
	if !ok {
		return nil
	}
	kids, err := children(edts.body, edts.at+edts.head)
	if err != nil {
		return fmt.Errorf("edts: %w", err)
	}
	elst, ok := first(kids, "elst")
	if !ok {
		return nil
	}
	v, _, f := full(elst)
	n := f.n(4)
	if n > 2 {
		return fmt.Errorf("%w: an edit list of %d edits", ErrNotServed, n)
	}
	type edit struct {
		duration, mediaTime int64
		rate                uint64
	}
	var edits []edit
	for range n {
		var e edit
		if v == 1 {
			e.duration, e.mediaTime = int64(f.n(8)), int64(f.n(8))
		} else {
			e.duration, e.mediaTime = int64(uint32(f.n(4))), int64(int32(f.n(4)))
		}
		e.rate = f.n(4)
		edits = append(edits, e)
	}
	if f.err != nil {
		return fmt.Errorf("elst: %w", f.err)
	}
	if len(edits) == 0 {
		return nil
	}
	var delay int64 // the empty edit's, in the movie's timescale
	if len(edits) == 2 {
		if edits[0].mediaTime != -1 {
			return fmt.Errorf("%w: an edit list of two edits of media", ErrNotServed)
		}
		delay, edits = edits[0].duration, edits[1:]
	}
	e := edits[0]
	if e.mediaTime < 0 || e.rate != 1<<16 || e.duration < 0 || delay < 0 || delay > 1<<40 || e.duration > 1<<50 {
		return fmt.Errorf("%w: an edit from %d at rate %#x", ErrNotServed, e.mediaTime, e.rate)
	}
	scaled := func(d int64) int64 { // movie ticks to media ticks
		return int64(math.Round(float64(d) * float64(t.timescale) / float64(hdr.movieTimescale)))
	}
	t.shift = e.mediaTime - scaled(delay)
	if e.duration > 0 {
		t.end = scaled(delay + e.duration)
	}
	return nil
}

// selfContained refuses a track whose data is in another file (dref's
// url or alis without the self-contained flag): ffmpeg would try to open
// it; thumbd decodes bytes it was given, nothing else.
func selfContained(minf []box) error {
	dinf, err := within(minf, "dinf")
	if err != nil {
		return nil // no dinf: the data is in this file
	}
	dref, ok := first(dinf, "dref")
	if !ok {
		return nil
	}
	_, _, f := full(dref)
	n := f.n(4)
	if f.err != nil || n > maxChildren {
		return errors.New("dref: malformed")
	}
	entries, err := children(f.b[f.p:], 0)
	if err != nil {
		return fmt.Errorf("dref: %w", err)
	}
	for _, e := range entries {
		_, flags, _ := full(e)
		if flags&1 == 0 {
			return fmt.Errorf("%w: the samples are in another file (a %q data reference)", ErrNotServed, e.typ)
		}
	}
	return nil
}

// sampleCodecs maps the sample entries thumbd decodes to their codecs.
var sampleCodecs = map[string]Codec{
	"avc1": H264, "avc3": H264, "hvc1": HEVC, "hev1": HEVC, "vp09": VP9, "vp08": VP8, "av01": AV1,
}

// sampleEntry reads stsd's one sample entry: the codec, the coded size,
// the configuration box and colr, pasp.
func sampleEntry(stbl []box, info *Info) error {
	stsd, ok := first(stbl, "stsd")
	if !ok {
		return errors.New("no stsd box")
	}
	_, _, f := full(stsd)
	n := f.n(4)
	if f.err != nil {
		return errors.New("stsd cut short")
	}
	if n != 1 {
		// Each sample names its entry; ffmpeg switches decoders between
		// them. One codec for the whole track is what thumbd prices.
		return fmt.Errorf("%w: %d sample descriptions", ErrNotServed, n)
	}
	entries, err := children(f.b[f.p:], 0)
	if err != nil || len(entries) != 1 {
		return errors.Join(errors.New("stsd's sample entry: malformed"), err)
	}
	e := entries[0]
	codec, ok := sampleCodecs[e.typ]
	if !ok {
		return fmt.Errorf("%w: a video coded as %q", ErrNotServed, e.typ)
	}
	info.Codec, info.Tag = codec, e.typ
	// A visual sample entry (14496-12, 12.1.3): 6 reserved bytes, a data
	// reference index, 16 bytes, width and height, then 50 bytes before
	// its boxes.
	if len(e.body) < 78 {
		return fmt.Errorf("a %q sample entry cut short", e.typ)
	}
	g := &fields{b: e.body[24:28]}
	info.Width, info.Height = int(g.n(2)), int(g.n(2))
	if info.Width == 0 || info.Height == 0 {
		return fmt.Errorf("a %q sample entry of %dx%d", e.typ, info.Width, info.Height)
	}
	props, err := children(e.body[78:], 0)
	if err != nil {
		return fmt.Errorf("the %q sample entry: %w", e.typ, err)
	}
	var s stream
	config := map[Codec]string{H264: "avcC", HEVC: "hvcC", VP9: "vpcC", AV1: "av1C"}[codec]
	if b, ok := first(props, config); ok {
		if codec == VP9 {
			v, _, f := full(b)
			if v != 1 {
				return fmt.Errorf("vpcC version %d", v)
			}
			s, err = vpcC(f.b[f.p:])
		} else {
			s, err = configuration(codec, b.body)
			info.Extradata = b.body
		}
		if err != nil {
			return err
		}
	} else if codec == VP8 {
		s, _ = configuration(codec, nil)
	} else if e.typ != "avc3" && e.typ != "hev1" {
		return fmt.Errorf("a %q sample entry without %s", e.typ, config)
	}
	info.Colour = Colour{Primaries: 2, Transfer: 2, Matrix: 2}
	s.into(info)
	if b, ok := first(props, "colr"); ok {
		c, err := colr(b.body)
		if err != nil {
			return err
		}
		if c != nil {
			info.Colour = *c
		}
	}
	if b, ok := first(props, "pasp"); ok {
		f := &fields{b: b.body}
		h, v := int64(f.n(4)), int64(f.n(4))
		if f.err != nil {
			return fmt.Errorf("pasp: %w", f.err)
		}
		if h > 0 && v > 0 {
			info.SampleAspect = ratio(h, v)
		}
	}
	if b, ok := first(props, "clap"); ok {
		// A clean aperture smaller than the frame: ffmpeg 7.1 crops the
		// decoded frame to it, a reader of the sizes alone would not.
		f := &fields{b: b.body}
		var v [8]int64
		for i := range v {
			v[i] = int64(int32(f.n(4)))
		}
		if f.err != nil || v[1] == 0 || v[3] == 0 || v[5] == 0 || v[7] == 0 {
			return errors.Join(errors.New("clap: malformed"), f.err)
		}
		if v[0] != int64(info.Width)*v[1] || v[2] != int64(info.Height)*v[3] || v[4] != 0 || v[6] != 0 {
			return fmt.Errorf("%w: a clean aperture of %d/%dx%d/%d in a %dx%d frame", ErrNotServed, v[0], v[1], v[2], v[3], info.Width, info.Height)
		}
	}
	info.HDR = hdr(info.Colour.Transfer)
	return nil
}

// table is a sample table box's entries: a full box with an entry count,
// each entry of size bytes; the count checked against the box.
func table(stbl []box, typ string, size int) (n int, f *fields, ok bool, err error) {
	b, ok := first(stbl, typ)
	if !ok {
		return 0, nil, false, nil
	}
	if count(stbl, typ) > 1 {
		return 0, nil, true, fmt.Errorf("%d %s boxes", count(stbl, typ), typ)
	}
	_, _, f = full(b)
	c := f.n(4)
	if f.err != nil || c > uint64(f.left()/size) {
		return 0, nil, true, fmt.Errorf("%s: %d entries in %d bytes", typ, c, len(b.body))
	}
	return int(c), f, true, nil
}

// readSamples expands the sample tables (stsz or stz2, stts, ctts, stss,
// stsc, stco or co64) into one entry per sample, each sample's bytes
// checked against the file.
func (t *mp4Track) readSamples(src *source, stbl []box) error {
	sizes, err := sampleSizes(stbl, t.limits.Samples)
	if err != nil {
		return err
	}
	n := len(sizes)
	t.sizes = sizes
	// stts: decode times.
	runs, f, ok, err := table(stbl, "stts", 8)
	if err != nil || !ok && n > 0 {
		return errors.Join(errors.New("no usable stts"), err)
	}
	t.dts = make([]int64, 0, n)
	var dts int64
	for range runs {
		c, d := int(f.n(4)), uint32(f.n(4))
		if c > n-len(t.dts) {
			return fmt.Errorf("stts: more times than the %d samples", n)
		}
		for range c {
			t.dts = append(t.dts, dts)
			dts += int64(d)
		}
	}
	if len(t.dts) != n {
		return fmt.Errorf("stts: %d times for %d samples", len(t.dts), n)
	}
	t.nextDTS = dts
	// ctts: composition offsets, signed as ffmpeg reads them.
	t.cts = make([]int32, n)
	if runs, f, ok, err = table(stbl, "ctts", 8); err != nil {
		return err
	} else if ok {
		i := 0
		for range runs {
			c, o := int(f.n(4)), int32(f.n(4))
			if c > n-i {
				return fmt.Errorf("ctts: more offsets than the %d samples", n)
			}
			for range c {
				t.cts[i] = o
				i++
			}
		}
	}
	// stss: sync samples; without it, every sample is one.
	t.sync = make([]bool, n)
	if runs, f, ok, err = table(stbl, "stss", 4); err != nil {
		return err
	} else if ok {
		if runs == 0 && n > 0 {
			return errors.New("stss lists no sync sample")
		}
		for range runs {
			i := f.n(4)
			if i == 0 || i > uint64(n) {
				return fmt.Errorf("stss: sample %d of %d", i, n)
			}
			t.sync[i-1] = true
		}
	} else {
		for i := range t.sync {
			t.sync[i] = true
		}
	}
	return t.readChunks(src, stbl)
}

// sampleSizes reads stsz (or the compact stz2).
func sampleSizes(stbl []box, limit int) ([]uint32, error) {
	if b, ok := first(stbl, "stsz"); ok {
		_, _, f := full(b)
		size, n := uint32(f.n(4)), f.n(4)
		if f.err != nil {
			return nil, errors.New("stsz cut short")
		}
		if n > uint64(limit) {
			return nil, fmt.Errorf("%w: more than %d samples (%d)", ErrLimit, limit, n)
		}
		if size == 0 && n > uint64(f.left()/4) {
			return nil, fmt.Errorf("stsz: %d sizes in %d bytes", n, f.left())
		}
		out := make([]uint32, n)
		for i := range out {
			out[i] = size
			if size == 0 {
				out[i] = uint32(f.n(4))
			}
		}
		return out, nil
	}
	if b, ok := first(stbl, "stz2"); ok {
		_, _, f := full(b)
		field := f.n(4) & 0xFF
		n := f.n(4)
		if f.err != nil || (field != 4 && field != 8 && field != 16) {
			return nil, fmt.Errorf("stz2: a field of %d bits", field)
		}
		if n > uint64(limit) {
			return nil, fmt.Errorf("%w: more than %d samples (%d)", ErrLimit, limit, n)
		}
		if n*field > uint64(f.left())*8 {
			return nil, fmt.Errorf("stz2: %d sizes in %d bytes", n, f.left())
		}
		r := &bits{b: f.b[f.p:]}
		out := make([]uint32, n)
		for i := range out {
			out[i] = uint32(r.u(int(field)))
		}
		return out, r.err
	}
	return nil, errors.New("no stsz or stz2 box")
}

// readChunks places the samples in the file: stsc's runs of samples per
// chunk, stco's or co64's chunk offsets; the samples of a chunk follow
// one another.
func (t *mp4Track) readChunks(src *source, stbl []box) error {
	n := len(t.sizes)
	var chunks []int64
	if c, f, ok, err := table(stbl, "stco", 4); err != nil {
		return err
	} else if ok {
		if c > n {
			return fmt.Errorf("stco: %d chunks for %d samples", c, n)
		}
		chunks = make([]int64, c)
		for i := range chunks {
			chunks[i] = int64(f.n(4))
		}
	} else if c, f, ok, err := table(stbl, "co64", 8); err != nil {
		return err
	} else if ok {
		if c > n {
			return fmt.Errorf("co64: %d chunks for %d samples", c, n)
		}
		chunks = make([]int64, c)
		for i := range chunks {
			v := f.n(8)
			if v > math.MaxInt64/2 {
				return fmt.Errorf("co64: a chunk at %d", v)
			}
			chunks[i] = int64(v)
		}
	} else if n > 0 {
		return errors.New("no stco or co64 box")
	}
	runs, f, ok, err := table(stbl, "stsc", 12)
	if err != nil || !ok && n > 0 {
		return errors.Join(errors.New("no usable stsc"), err)
	}
	type run struct{ first, perChunk uint64 }
	rs := make([]run, runs)
	for i := range rs {
		rs[i] = run{first: f.n(4), perChunk: f.n(4)}
		if desc := f.n(4); desc != 1 {
			return fmt.Errorf("stsc: sample description %d of 1", desc)
		}
		if rs[i].first == 0 || i > 0 && rs[i].first <= rs[i-1].first || rs[i].first > uint64(len(chunks)) {
			return fmt.Errorf("stsc: run %d starts at chunk %d", i, rs[i].first)
		}
		if rs[i].perChunk == 0 || rs[i].perChunk > uint64(n) {
			return fmt.Errorf("stsc: %d samples in a chunk", rs[i].perChunk)
		}
	}
	if len(rs) > 0 && rs[0].first != 1 {
		return errors.New("stsc does not start at the first chunk")
	}
	t.offsets = make([]int64, 0, n)
	for r := range rs {
		last := uint64(len(chunks))
		if r+1 < len(rs) {
			last = rs[r+1].first - 1
		}
		for c := rs[r].first; c <= last; c++ {
			off := chunks[c-1]
			for range rs[r].perChunk {
				i := len(t.offsets)
				if i == n {
					return fmt.Errorf("stsc: more samples in chunks than the %d samples", n)
				}
				if t.sizes[i] == 0 {
					// An empty packet is a decoder's end of stream.
					return fmt.Errorf("sample %d of 0 bytes", i)
				}
				if off > src.size || int64(t.sizes[i]) > src.size-off {
					return fmt.Errorf("sample %d: %d bytes at %d, past the file's end at %d", i, t.sizes[i], off, src.size)
				}
				t.offsets = append(t.offsets, off)
				off += int64(t.sizes[i])
			}
		}
	}
	if len(t.offsets) != n {
		return fmt.Errorf("the chunks hold %d samples of %d", len(t.offsets), n)
	}
	return nil
}

// pts is sample i's presentation time (in the timescale, after the edit).
func (t *mp4Track) pts(i int) int64 { return t.dts[i] + int64(t.cts[i]) - t.shift }

// shown says whether sample i is presented: within the edit.
func (t *mp4Track) shown(i int) bool {
	p := t.pts(i)
	return p+t.duration(i) > 0 && (t.end < 0 || p < t.end)
}

// duration is sample i's: to the next sample's decode time, or for the
// last one to the track's end.
func (t *mp4Track) duration(i int) int64 {
	if i+1 < len(t.dts) {
		return t.dts[i+1] - t.dts[i]
	}
	return t.nextDTS - t.dts[i]
}

// finish fills what the samples say into info: the frame count and rate,
// the duration when there was no better, the keyframes.
func (t *mp4Track) finish(info *Info, hdr mp4Header) error {
	n := len(t.sizes)
	if n == 0 {
		return errors.New("a video track without samples")
	}
	info.Frames = n
	info.TimeBase = TimeBase{Num: 1, Den: t.timescale}
	span := t.nextDTS // the sum of the samples' durations
	if info.Duration == 0 || t.frag {
		switch {
		case t.end >= 0:
			info.Duration = float64(t.end) / float64(t.timescale)
		case hdr.fragDuration > 0:
			info.Duration = float64(hdr.fragDuration) / float64(hdr.movieTimescale)
		default:
			info.Duration = float64(span-t.dts[0]) / float64(t.timescale)
		}
	}
	// ffmpeg's average: the one duration when the samples are evenly
	// spaced (the last may differ), else the frames over their span.
	if d := t.duration(0); t.evenly() && d > 0 {
		info.FrameRate = float64(t.timescale) / float64(d)
	} else if span > t.dts[0] {
		info.FrameRate = float64(n) * float64(t.timescale) / float64(span-t.dts[0])
	}
	for i := range n {
		if !t.sync[i] {
			continue
		}
		if len(info.Keyframes) == t.limits.Keyframes {
			info.MoreKeyframes = true
			break
		}
		info.Keyframes = append(info.Keyframes, Keyframe{Time: t.seconds(t.pts(i)), Offset: t.offsets[i], Size: int64(t.sizes[i])})
	}
	if len(info.Keyframes) == 0 {
		return errors.New("a video track without a keyframe")
	}
	return displaySize(info)
}

func (t *mp4Track) seconds(ticks int64) float64 { return float64(ticks) / float64(t.timescale) }

// evenly says whether every sample but the last lasts as long as the
// first.
func (t *mp4Track) evenly() bool {
	for i := 1; i+1 < len(t.dts); i++ {
		if t.duration(i) != t.duration(0) {
			return false
		}
	}
	return true
}

// frameAt is the frame presented at t and the samples from its keyframe.
func (t *mp4Track) frameAt(src *source, at float64) (Frame, error) {
	target := int64(math.Floor(at * float64(t.timescale)))
	shown := presented(len(t.sizes), func(i int) (int64, bool) { return t.pts(i), t.shown(i) }, target)
	if shown < 0 {
		return Frame{}, errors.New("no sample is presented")
	}
	return frameFrom(t.packet, shown, TimeBase{Num: 1, Den: t.timescale})
}

// presented is the index of the packet presented at target among n: the
// last presented at or before it, else the first presented; -1 when none
// is. pts gives a packet's presentation time and whether it is shown.
func presented(n int, pts func(int) (int64, bool), target int64) int {
	shown, earliest := -1, -1
	var shownPTS, earliestPTS int64
	for i := range n {
		p, ok := pts(i)
		if !ok {
			continue
		}
		if p <= target && (shown < 0 || p > shownPTS) {
			shown, shownPTS = i, p
		}
		if earliest < 0 || p < earliestPTS {
			earliest, earliestPTS = i, p
		}
	}
	if shown < 0 {
		return earliest
	}
	return shown
}

// packet is sample i as a Packet.
func (t *mp4Track) packet(i int) Packet {
	return Packet{Offset: t.offsets[i], Size: int64(t.sizes[i]), PTS: t.pts(i), DTS: t.dts[i] - t.shift, Key: t.sync[i]}
}

// frameFrom is the Frame of packet(shown), packets indexed in decode
// order: the packets from the keyframe before it to it. The keyframe is
// the last one at or before it in decode order that is not presented
// after it: a frame presented before the keyframe that precedes it in
// decode order (an open GOP's leading frame) needs the keyframe before.
func frameFrom(packet func(int) Packet, shown int, tb TimeBase) (Frame, error) {
	target := packet(shown)
	key := -1
	for i := shown; i >= 0; i-- {
		if p := packet(i); p.Key && p.PTS <= target.PTS {
			key = i
			break
		}
	}
	if key < 0 {
		return Frame{}, fmt.Errorf("no keyframe before the frame at %.3f s", tb.Seconds(target.PTS))
	}
	ps := make([]Packet, 0, shown-key+1)
	for i := key; i <= shown; i++ {
		ps = append(ps, packet(i))
	}
	return Frame{Time: tb.Seconds(target.PTS), PTS: target.PTS, Packets: ps, Ranges: merge(ps)}, nil
}
