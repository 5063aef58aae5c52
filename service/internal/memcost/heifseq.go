package memcost

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// An AVIF image sequence (brand avis) may have no still image at all: its
// frames are the samples of a video track (ISO/IEC 14496-12's moov), and
// libheif before 1.20 (and libvips' heif loader on any libheif) reads
// still images only. thumbd gives such a file's first frame: the look
// prices it as one frame of its track's coded size (sequenceHeader), and
// the engine hands libvips a still AVIF made of that frame's sample, and
// of the alpha track's first sample when there is one (SequenceStill).

// seqTrack is what a sequence's track says of its first frame.
type seqTrack struct {
	id      uint32
	handler string   // mdia/hdlr's type: pict or vide for pictures, auxv for alpha
	auxlOf  []uint32 // tref/auxl: the tracks it is an auxiliary of
	entry   bmffBox  // its first sample entry (av01)
	props   []bmffBox
	width   int // the sample entry's, the coded size
	height  int
	sample  [2]uint64 // the first sample's offset and size in the file
}

// maxTracks bounds the tracks of a sequence read.
const maxTracks = 16

// sequenceTracks reads the visual tracks of moov: each with its first
// sample entry and first sample, every offset checked against the file.
func sequenceTracks(src []byte, moov bmffBox) ([]seqTrack, error) {
	children, err := boxes(moov.body)
	if err != nil {
		return nil, err
	}
	var out []seqTrack
	for _, trak := range children {
		if trak.typ != "trak" {
			continue
		}
		if len(out) == maxTracks {
			return nil, fmt.Errorf("more than %d tracks", maxTracks)
		}
		t, ok, err := sequenceTrack(src, trak)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no video track")
	}
	return out, nil
}

// sequenceTrack reads one trak; ok is false for a track that is not a
// coded picture track (sound, metadata).
func sequenceTrack(src []byte, trak bmffBox) (seqTrack, bool, error) {
	var t seqTrack
	children, err := boxes(trak.body)
	if err != nil {
		return t, false, err
	}
	tkhd, ok := find(children, "tkhd")
	if !ok {
		return t, false, errors.New("a track without tkhd")
	}
	v, _, payload, err := tkhd.full()
	if err != nil {
		return t, false, err
	}
	r := reader{b: payload}
	if v == 1 {
		r.take(16) // 64-bit creation and modification times
	} else {
		r.take(8)
	}
	t.id = r.u32()
	if r.err != nil {
		return t, false, fmt.Errorf("tkhd: %w", r.err)
	}
	if tref, ok := find(children, "tref"); ok {
		refs, err := boxes(tref.body)
		if err != nil {
			return t, false, fmt.Errorf("tref: %w", err)
		}
		for _, ref := range refs {
			if ref.typ != "auxl" {
				continue
			}
			r := reader{b: ref.body}
			for r.p < len(ref.body) && r.err == nil {
				t.auxlOf = append(t.auxlOf, r.u32())
			}
			if r.err != nil {
				return t, false, fmt.Errorf("tref's auxl: %w", r.err)
			}
		}
	}
	mdia, ok := find(children, "mdia")
	if !ok {
		return t, false, errors.New("a track without mdia")
	}
	mdiaBoxes, err := boxes(mdia.body)
	if err != nil {
		return t, false, err
	}
	if hdlr, ok := find(mdiaBoxes, "hdlr"); ok {
		if _, _, p, err := hdlr.full(); err == nil && len(p) >= 8 {
			t.handler = string(p[4:8])
		}
	}
	stbl, err := path(mdiaBoxes, "minf", "stbl")
	if err != nil {
		return t, false, err
	}
	stsd, ok := find(stbl, "stsd")
	if !ok {
		return t, false, errors.New("a track without stsd")
	}
	_, _, payload, err = stsd.full()
	if err != nil || len(payload) < 4 {
		return t, false, errors.New("stsd cut short")
	}
	entries, err := boxesN(payload[4:], 1)
	if err != nil || len(entries) == 0 {
		return t, false, errors.Join(errors.New("stsd without a sample entry"), err)
	}
	t.entry = entries[0]
	if t.handler != "pict" && t.handler != "vide" && t.handler != "auxv" {
		return t, false, nil
	}
	// A visual sample entry: 6 reserved bytes, a data reference index,
	// 16 bytes pre-defined and reserved, then width and height (16 bits
	// each), and 50 more bytes before its own boxes.
	if len(t.entry.body) < 78 {
		return t, false, fmt.Errorf("a %q sample entry cut short", t.entry.typ)
	}
	t.width, t.height = int(binary.BigEndian.Uint16(t.entry.body[24:])), int(binary.BigEndian.Uint16(t.entry.body[26:]))
	if t.props, err = boxes(t.entry.body[78:]); err != nil {
		return t, false, fmt.Errorf("the %q sample entry: %w", t.entry.typ, err)
	}
	if t.sample, err = firstSample(src, stbl); err != nil {
		return t, false, err
	}
	return t, true, nil
}

// path is the children of the box reached from bs along names.
func path(bs []bmffBox, names ...string) ([]bmffBox, error) {
	for _, name := range names {
		b, ok := find(bs, name)
		if !ok {
			return nil, fmt.Errorf("no %s box", name)
		}
		var err error
		if bs, err = boxes(b.body); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return bs, nil
}

// firstSample is the offset and size of a track's first sample: the
// first chunk's offset (stco or co64) and the first size of stsz.
func firstSample(src []byte, stbl []bmffBox) ([2]uint64, error) {
	var none [2]uint64
	stsz, ok := find(stbl, "stsz")
	if !ok {
		return none, errors.New("a track without stsz")
	}
	_, _, p, err := stsz.full()
	r := reader{b: p}
	size, count := uint64(r.u32()), r.u32()
	if size == 0 && count > 0 {
		size = uint64(r.u32())
	}
	if err = errors.Join(err, r.err); err != nil || count == 0 {
		return none, errors.Join(errors.New("stsz without a first sample"), err)
	}
	var offset uint64
	if stco, ok := find(stbl, "stco"); ok {
		_, _, p, err := stco.full()
		r := reader{b: p}
		if n := r.u32(); n > 0 {
			offset = uint64(r.u32())
		}
		err = errors.Join(err, r.err)
		if err != nil {
			return none, fmt.Errorf("stco: %w", err)
		}
	} else if co64, ok := find(stbl, "co64"); ok {
		_, _, p, err := co64.full()
		r := reader{b: p}
		if n := r.u32(); n > 0 {
			hi, lo := uint64(r.u32()), uint64(r.u32())
			offset = hi<<32 | lo
		}
		if err = errors.Join(err, r.err); err != nil {
			return none, fmt.Errorf("co64: %w", err)
		}
	} else {
		return none, errors.New("a track without chunk offsets (a fragmented file?)")
	}
	if size == 0 || offset == 0 || offset > uint64(len(src)) || size > uint64(len(src))-offset {
		return none, fmt.Errorf("a first sample of %d bytes at %d, past the file's %d", size, offset, len(src))
	}
	return [2]uint64{offset, size}, nil
}

// sequence is a sequence's picture track and its alpha track (nil: none).
func sequence(src []byte, moov bmffBox) (colour seqTrack, alpha *seqTrack, err error) {
	tracks, err := sequenceTracks(src, moov)
	if err != nil {
		return colour, nil, err
	}
	picked := -1
	for i, t := range tracks {
		if t.handler != "auxv" && len(t.auxlOf) == 0 {
			picked = i
			break
		}
	}
	if picked < 0 {
		return colour, nil, errors.New("no picture track (only auxiliary ones)")
	}
	colour = tracks[picked]
	for i := range tracks {
		if contains(tracks[i].auxlOf, colour.id) {
			alpha = &tracks[i]
			break
		}
	}
	if colour.entry.typ != "av01" {
		return colour, nil, fmt.Errorf("%w: its frames are coded as %q; thumbd reads AV1 (av01) image sequences", ErrNotServed, colour.entry.typ)
	}
	if alpha != nil && alpha.entry.typ != "av01" {
		return colour, nil, fmt.Errorf("%w: its alpha is coded as %q", ErrNotServed, alpha.entry.typ)
	}
	if colour.width == 0 || colour.height == 0 || alpha != nil && (alpha.width != colour.width || alpha.height != colour.height) {
		return colour, nil, errors.New("a sequence of no size, or its alpha of another")
	}
	return colour, alpha, nil
}

// sequenceHeader prices an image sequence as its first frame: the picture
// track's coded size, its AV1 configuration's depth, its colr, and alpha
// when an auxiliary track refers to it.
func sequenceHeader(src []byte, moov bmffBox) (Header, error) {
	colour, alpha, err := sequence(src, moov)
	if err != nil {
		return Header{}, err
	}
	h := Header{Format: imagefmt.AVIF, Width: colour.width, Height: colour.height, Bands: 3, BytesPerSample: 1, Frames: 1, BitDepth: 8, Sequence: true}
	if d := codecDepth(colour.props); d > 0 {
		h.BitDepth = d
	}
	if h.BitDepth > 8 {
		h.BytesPerSample = 2
	}
	h.NCLX = sequenceNCLX(src, colour)
	if alpha != nil {
		h.Alpha, h.Bands = true, 4
	}
	return h, nil
}

// sequenceNCLX is a track's colour: its sample entry's colr of type nclx,
// else its AV1 sequence header's (in av1C's configOBUs, else in its first
// sample: libheif decodes the frame by it, and the engine converts its
// primaries), else none.
func sequenceNCLX(src []byte, t seqTrack) thumbjob.NCLX {
	if c := nclx(t.props); c.Primaries != 0 {
		return c
	}
	if av1C, ok := find(t.props, "av1C"); ok && len(av1C.body) > 4 {
		if c, ok := av1Colour(av1C.body[4:]); ok {
			return c
		}
	}
	if c, ok := av1Colour(src[t.sample[0] : t.sample[0]+t.sample[1]]); ok {
		return c
	}
	return thumbjob.NCLX{}
}

// alphaURN is the auxiliary type of an AVIF's alpha image (AVIF, 4.1).
const alphaURN = "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha\x00"

// SequenceStill is a still AVIF of src's first frame, src an image
// sequence the look read with sequenceHeader: a primary av01 item whose
// data is the picture track's first sample, with the sample entry's av1C
// and colr, an ispe of the coded size and a pixi of its depth; and an
// alpha item of the alpha track's first sample when it has one. The
// samples are copied, nothing is decoded.
func SequenceStill(src []byte) ([]byte, error) {
	top, err := boxes(src)
	moov, ok := find(top, "moov")
	if !ok {
		return nil, errors.Join(errors.New("no moov box"), err)
	}
	colour, alpha, err := sequence(src, moov)
	if err != nil {
		return nil, err
	}
	type item struct {
		props  [][]byte
		sample [2]uint64
	}
	still := func(t seqTrack, channels int, more ...[]byte) item {
		depth := 8
		if d := codecDepth(t.props); d > 0 {
			depth = d
		}
		pixi := []byte{0, 0, 0, 0, byte(channels)} // a full box's version and flags, the channels
		for range channels {
			pixi = append(pixi, byte(depth))
		}
		props := [][]byte{
			rawBox("ispe", []byte{0, 0, 0, 0}, u32be(uint32(t.width)), u32be(uint32(t.height))),
			rawBox("pixi", pixi),
		}
		for _, b := range t.props {
			if b.typ == "av1C" || b.typ == "colr" {
				props = append(props, rawBox(b.typ, b.body))
			}
		}
		return item{props: append(props, more...), sample: t.sample}
	}
	items := []item{still(colour, 3)}
	if alpha != nil {
		items = append(items, still(*alpha, 1, rawBox("auxC", []byte{0, 0, 0, 0}, []byte(alphaURN))))
	}
	// ipco holds every property, ipma gives each item its own (av1C
	// essential); iloc points at the samples, copied into one mdat.
	var ipco, ipma, infes [][]byte
	ipma = append(ipma, u32be(uint32(len(items))))
	index := 0
	for i, it := range items {
		id := byte(i + 1)
		infes = append(infes, rawBox("infe", []byte{2, 0, 0, byte(min(i, 1))}, []byte{0, id, 0, 0}, []byte("av01"), []byte{0}))
		ipma = append(ipma, []byte{0, id, byte(len(it.props))})
		for _, p := range it.props {
			ipco = append(ipco, p)
			index++
			flag := byte(0)
			if string(p[4:8]) == "av1C" {
				flag = 0x80
			}
			ipma = append(ipma, []byte{flag | byte(index)})
		}
	}
	var iref []byte
	if alpha != nil {
		iref = rawBox("iref", []byte{0, 0, 0, 0}, rawBox("auxl", []byte{0, 2, 0, 1, 0, 1}))
	}
	ftyp := rawBox("ftyp", []byte("avif"), u32be(0), []byte("avifmif1miaf"))
	meta := func(dataAt uint32) []byte {
		iloc := [][]byte{{0, 0, 0, 0, 0x44, 0x00}, {0, byte(len(items))}}
		at := dataAt
		for i, it := range items {
			iloc = append(iloc, []byte{0, byte(i + 1), 0, 0, 0, 1}, u32be(at), u32be(uint32(it.sample[1])))
			at += uint32(it.sample[1])
		}
		children := [][]byte{
			rawBox("hdlr", []byte{0, 0, 0, 0}, u32be(0), []byte("pict"), make([]byte, 13)),
			rawBox("pitm", []byte{0, 0, 0, 0, 0, 1}),
			rawBox("iloc", iloc...),
			rawBox("iinf", append([][]byte{{0, 0, 0, 0, 0, byte(len(items))}}, infes...)...),
		}
		if iref != nil {
			children = append(children, iref)
		}
		children = append(children, rawBox("iprp", rawBox("ipco", ipco...), rawBox("ipma", append([][]byte{{0, 0, 0, 0}}, ipma...)...)))
		return rawBox("meta", append([][]byte{{0, 0, 0, 0}}, children...)...)
	}
	head := len(ftyp) + len(meta(0)) + 8 // the mdat's header
	var data [][]byte
	for _, it := range items {
		data = append(data, src[it.sample[0]:it.sample[0]+it.sample[1]])
	}
	out := append(ftyp, meta(uint32(head))...)
	return append(out, rawBox("mdat", data...)...), nil
}

// rawBox is a box of type typ whose body is parts, one after the other.
func rawBox(typ string, parts ...[]byte) []byte {
	n := 8
	for _, p := range parts {
		n += len(p)
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, n), uint32(n))
	out = append(out, typ...)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func u32be(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// libvipsBrands are the major brands libvips' heif loader opens a file by
// (heifload.c, heif_magic): it looks at nothing else. An AVIF image
// sequence's avis, or an isom file listing avif among its compatible
// brands, is not one of them, though libheif reads its still image.
var libvipsBrands = []string{"heic", "heix", "hevc", "heim", "heis", "hevm", "hevs", "mif1", "msf1", "avif"}

// WithReadableBrand is src, a HEIF file of the given format, with its
// ftyp's major brand one libvips' heif loader opens (avif or heic, as the
// format is: the coding of its items), when it was not: a copy, with those
// four bytes changed and nothing else. src itself when its brand is one.
func WithReadableBrand(src []byte, format imagefmt.Format) []byte {
	if len(src) < 12 || string(src[4:8]) != "ftyp" || slices.Contains(libvipsBrands, string(src[8:12])) {
		return src
	}
	brand := "avif"
	if format == imagefmt.HEIC {
		brand = "heic"
	}
	out := bytes.Clone(src)
	copy(out[8:12], brand)
	return out
}
