package memcost

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// bitReader reads a JPEG XL header's bit-packed fields: least significant
// bit first. A read past the end gives 0 and sets short.
type bitReader struct {
	b     []byte
	pos   uint64 // in bits
	short bool
}

func (r *bitReader) bits(n int) uint32 {
	var v uint32
	for i := range n {
		if r.pos>>3 >= uint64(len(r.b)) {
			r.short = true
			return 0
		}
		v |= uint32(r.b[r.pos>>3]>>(r.pos&7)&1) << i
		r.pos++
	}
	return v
}

func (r *bitReader) skip(n uint64) { r.pos += n }

// dist is one of a U32 field's four distributions: offset plus n bits.
type dist struct {
	n      int
	offset uint32
}

func val(v uint32) dist              { return dist{0, v} }
func bitsOff(n int, off uint32) dist { return dist{n, off} }

// u32 reads a U32 field: a 2-bit selector, then the chosen distribution.
func (r *bitReader) u32(d0, d1, d2, d3 dist) uint32 {
	d := [4]dist{d0, d1, d2, d3}[r.bits(2)]
	return d.offset + r.bits(d.n)
}

// jxlSize reads a SizeHeader (the image's, or an intrinsic size).
func (r *bitReader) jxlSize() (w, h uint64) {
	dims := func(small bool) uint64 {
		if small {
			return uint64(r.bits(5)+1) * 8
		}
		return uint64(r.u32(bitsOff(9, 1), bitsOff(13, 1), bitsOff(18, 1), bitsOff(30, 1)))
	}
	small := r.bits(1) == 1
	h = dims(small)
	return aspect(r, h, func() uint64 { return dims(small) }), h
}

// aspect reads a size's 3-bit ratio: 0, then the width follows; else the
// width is the height times a fixed ratio.
func aspect(r *bitReader, h uint64, width func() uint64) uint64 {
	ratios := [8][2]uint64{1: {1, 1}, 2: {12, 10}, 3: {4, 3}, 4: {3, 2}, 5: {16, 9}, 6: {5, 4}, 7: {2, 1}}
	ratio := r.bits(3)
	if ratio == 0 {
		return width()
	}
	return h * ratios[ratio][0] / ratios[ratio][1]
}

// jxlPreview skips a PreviewHeader.
func (r *bitReader) jxlPreview() {
	div8 := r.bits(1) == 1
	dims := func() uint64 {
		if div8 {
			return uint64(r.u32(val(16), val(32), bitsOff(5, 1), bitsOff(9, 33)))
		}
		return uint64(r.u32(bitsOff(6, 1), bitsOff(8, 65), bitsOff(10, 321), bitsOff(12, 1345)))
	}
	aspect(r, dims(), dims)
}

// jxlBitDepth reads a BitDepth: the bits a sample, and whether floats.
func (r *bitReader) jxlBitDepth() (bits int, float bool) {
	if r.bits(1) == 0 {
		return int(r.u32(val(8), val(10), val(12), bitsOff(6, 1))), false
	}
	bits = int(r.u32(val(32), val(16), val(24), bitsOff(6, 1)))
	r.bits(4) // exponent bits
	return bits, true
}

// enum reads an Enum field.
func (r *bitReader) enum() uint32 { return r.u32(val(0), val(1), bitsOff(4, 2), bitsOff(6, 18)) }

// jxlCodestream is a JPEG XL container's codestream start: the jxlc box,
// or the first jxlp boxes' parts joined (enough for the headers).
func jxlCodestream(src []byte) ([]byte, error) {
	top, err := boxes(src)
	if err != nil {
		top = append(top, jxlCutBox(src, top)...)
	}
	if c, ok := find(top, "jxlc"); ok {
		return c.body, nil
	}
	var parts []byte
	for _, b := range top {
		if b.typ == "jxlp" && len(b.body) >= 4 && len(parts) < 4096 {
			parts = append(parts, b.body[4:]...)
		}
	}
	if len(parts) > 0 {
		return parts, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, errors.New("no codestream box (jxlc, jxlp)")
}

// jxlHeader reads a JPEG XL codestream's SizeHeader and ImageMetadata
// (bit depth, extra channels, colour space), from a bare codestream or a
// container's. Every field of both is read (they are bit-packed: a field
// skipped is the next misread); a header cut short is an error.
func jxlHeader(src []byte) (Header, error) {
	if src[0] != 0xFF {
		var err error
		if src, err = jxlCodestream(src); err != nil {
			return Header{}, fmt.Errorf("JPEG XL container: %w", err)
		}
	}
	if len(src) < 2 || src[0] != 0xFF || src[1] != 0x0A {
		return Header{}, errors.New("JPEG XL codestream without its signature")
	}
	r := &bitReader{b: src[2:]}
	w, ht := r.jxlSize()
	h := Header{Format: imagefmt.JXL, Width: int(w), Height: int(ht), Bands: 3, BitDepth: 8, BytesPerSample: 1, Frames: 1}
	if r.bits(1) == 0 { // not all_default
		if r.bits(1) == 1 { // extra_fields
			r.bits(3) // orientation
			if r.bits(1) == 1 {
				r.jxlSize() // intrinsic size
			}
			if r.bits(1) == 1 {
				r.jxlPreview()
			}
			if r.bits(1) == 1 { // animation: the first frame is decoded
				r.u32(val(100), val(1000), bitsOff(10, 1), bitsOff(30, 1))
				r.u32(val(1), val(1001), bitsOff(8, 1), bitsOff(10, 1))
				r.u32(val(0), bitsOff(3, 0), bitsOff(16, 0), bitsOff(32, 0))
				r.bits(1) // timecodes
			}
		}
		var float bool
		h.BitDepth, float = r.jxlBitDepth()
		r.bits(1) // modular_16_bit_buffer_sufficient
		extra := r.u32(val(0), val(1), bitsOff(4, 2), bitsOff(12, 1))
		for i := uint32(0); i < extra && !r.short; i++ {
			if r.jxlExtraChannel() {
				h.Alpha = true
			}
		}
		r.bits(1)           // xyb_encoded
		if r.bits(1) == 0 { // colour encoding not all_default
			r.bits(1) // want_icc
			if r.enum() == 1 {
				h.Bands = 1 // grey
			}
		}
		switch {
		case float && h.BitDepth > 16:
			h.BytesPerSample = 4
		case h.BitDepth > 8 || float:
			h.BytesPerSample = 2
		}
	}
	if r.short {
		return Header{}, errors.New("JPEG XL header cut short")
	}
	if h.BitDepth < 1 || h.BitDepth > 32 {
		return Header{}, fmt.Errorf("JPEG XL of %d bits a sample", h.BitDepth)
	}
	if h.Alpha {
		h.Bands++
	}
	return h, nil
}

// jxlExtraChannel reads an ExtraChannelInfo and says whether it is alpha.
func (r *bitReader) jxlExtraChannel() bool {
	if r.bits(1) == 1 { // all_default: an 8-bit alpha channel
		return true
	}
	typ := r.enum()
	r.jxlBitDepth()
	r.u32(val(0), val(3), val(4), bitsOff(3, 1))                          // dim_shift
	name := r.u32(val(0), bitsOff(4, 0), bitsOff(5, 16), bitsOff(10, 48)) // bytes
	r.skip(8 * uint64(name))
	switch typ {
	case 0: // alpha
		r.bits(1) // associated
	case 2: // spot colour: four 16-bit floats
		r.skip(64)
	case 5: // colour filter array
		r.u32(val(1), bitsOff(2, 0), bitsOff(4, 3), bitsOff(8, 19))
	}
	return typ == 0
}

// jxlCutBox is the codestream box that boxes stopped at, when its size
// runs past the file's end: libjxl streams a codestream box, so it reads
// the headers from the bytes there are (FuzzLookAgainstLibvips'
// 6575685049c4b24f: a 153x7 image in a jxlc box declaring 808 MB). Any
// other box cut short hides what follows it, from libjxl too.
func jxlCutBox(src []byte, read []bmffBox) []bmffBox {
	p := 0
	for _, b := range read {
		head := 8
		if binary.BigEndian.Uint32(src[p:]) == 1 {
			head = 16
		}
		p += head + len(b.body)
	}
	if p+8 > len(src) {
		return nil
	}
	head := 8
	if binary.BigEndian.Uint32(src[p:]) == 1 {
		head = 16
	}
	typ := string(src[p+4 : p+8])
	if (typ != "jxlc" && typ != "jxlp") || p+head > len(src) {
		return nil
	}
	return []bmffBox{{typ: typ, body: src[p+head:]}}
}
