package heiftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// file is the little of a HEIF file this package reads and writes: items,
// their properties and references, and which item is the primary one.
type file struct {
	ftyp    []byte // the ftyp box's payload, copied as read
	primary uint32
	items   []*item
	refs    []ref
}

type item struct {
	id       uint32
	typ      string // infe item_type: hvc1, av01, grid, Exif
	hidden   bool
	infeTail []byte // infe after item_type: the name (and a mime item's content type)
	data     []byte
	props    []prop
}

// prop is one property box, whole (header included), so that the writer
// can share identical ones (the same hvcC of tiles encoded alike).
type prop struct {
	box       []byte
	essential bool
}

type ref struct {
	typ  string // dimg, cdsc, auxl
	from uint32
	to   []uint32
}

func (f *file) item(id uint32) *item {
	for _, it := range f.items {
		if it.id == id {
			return it
		}
	}
	return nil
}

func (f *file) nextID() uint32 {
	var id uint32
	for _, it := range f.items {
		id = max(id, it.id)
	}
	return id + 1
}

func (p prop) typ() string { return string(p.box[4:8]) }

// --- reading ---

var errShort = errors.New("truncated box")

// reader reads big-endian fields and remembers the first overrun, so that
// a parser checks once, at its end.
type reader struct {
	b   []byte
	err error
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errShort
		return make([]byte, max(n, 0))
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// uint reads an n-byte unsigned field (n is 0, 1, 2, 4 or 8, as iloc's
// field sizes are).
func (r *reader) uint(n int) uint64 {
	var v uint64
	for _, c := range r.bytes(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

func (r *reader) u8() uint8   { return uint8(r.uint(1)) }
func (r *reader) u16() uint16 { return uint16(r.uint(2)) }
func (r *reader) u32() uint32 { return uint32(r.uint(4)) }

// id reads an item ID, 16 bits in version 0 of most boxes, 32 after.
func (r *reader) id(wide bool) uint32 {
	if wide {
		return r.u32()
	}
	return uint32(r.u16())
}

type rawBox struct {
	typ   string
	body  []byte // after the header
	whole []byte
}

// boxes splits b into its boxes (32- and 64-bit sizes, and size 0: to the end).
func boxes(b []byte) ([]rawBox, error) {
	var out []rawBox
	for len(b) > 0 {
		r := reader{b: b}
		size, typ, hdr := r.uint(4), string(r.bytes(4)), uint64(8)
		if size == 1 {
			size, hdr = r.uint(8), 16
		} else if size == 0 {
			size = uint64(len(b))
		}
		if r.err != nil || size < hdr || size > uint64(len(b)) {
			return nil, fmt.Errorf("box %q: size %d of %d bytes left: %w", typ, size, len(b), errShort)
		}
		out = append(out, rawBox{typ: typ, body: b[hdr:size], whole: b[:size]})
		b = b[size:]
	}
	return out, nil
}

// parse reads a HEIF file's items: what heif-enc writes (one meta, items
// in the file by offset) and what this package writes.
func parse(b []byte) (*file, error) {
	top, err := boxes(b)
	if err != nil {
		return nil, err
	}
	f := &file{}
	var meta []byte
	for _, bx := range top {
		switch bx.typ {
		case "ftyp":
			f.ftyp = bx.body
		case "meta":
			meta = bx.body
		}
	}
	if f.ftyp == nil || len(meta) < 4 {
		return nil, errors.New("not a HEIF file: no ftyp or no meta box")
	}
	children, err := boxes(meta[4:])
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	byType := map[string][]byte{}
	for _, c := range children {
		byType[c.typ] = c.body
	}
	if h := byType["hdlr"]; len(h) < 12 || string(h[8:12]) != "pict" {
		return nil, errors.New("meta: no pict handler")
	}
	for _, step := range []struct {
		box   string
		parse func([]byte) error
	}{
		{"pitm", f.parsePitm}, {"iinf", f.parseIinf}, {"iloc", func(p []byte) error { return f.parseIloc(p, b, byType["idat"]) }},
		{"iprp", f.parseIprp}, {"iref", f.parseIref},
	} {
		body, ok := byType[step.box]
		if !ok {
			if step.box == "iref" {
				continue
			}
			return nil, fmt.Errorf("meta: no %s box", step.box)
		}
		if err := step.parse(body); err != nil {
			return nil, fmt.Errorf("%s: %w", step.box, err)
		}
	}
	if f.item(f.primary) == nil {
		return nil, fmt.Errorf("pitm: no item %d", f.primary)
	}
	return f, nil
}

func (f *file) parsePitm(b []byte) error {
	r := reader{b: b}
	f.primary = r.id(r.u32()>>24 != 0)
	return r.err
}

func (f *file) parseIinf(b []byte) error {
	r := reader{b: b}
	r.id(r.u32()>>24 != 0) // the count: the boxes that follow say as much
	if r.err != nil {
		return r.err
	}
	infes, err := boxes(r.b)
	if err != nil {
		return err
	}
	for _, bx := range infes {
		if bx.typ != "infe" {
			continue
		}
		r := reader{b: bx.body}
		vf := r.u32()
		if v := vf >> 24; v != 2 && v != 3 {
			return fmt.Errorf("infe version %d (only 2 and 3 name an item type)", v)
		}
		it := &item{hidden: vf&1 != 0, id: r.id(vf>>24 == 3)}
		r.u16() // protection index
		it.typ = string(r.bytes(4))
		it.infeTail = r.b
		if r.err != nil {
			return r.err
		}
		f.items = append(f.items, it)
	}
	return nil
}

// parseIloc copies each item's extents out of the file (construction
// method 0, offsets from the file's start) or out of idat (method 1: heif-enc
// puts there the grid of an image too small for x265's 64x64 minimum).
func (f *file) parseIloc(b, file, idat []byte) error {
	r := reader{b: b}
	v := r.u32() >> 24
	sizes := r.u16()
	offSize, lenSize, baseSize, idxSize := int(sizes>>12), int(sizes>>8&15), int(sizes>>4&15), 0
	if v == 1 || v == 2 {
		idxSize = int(sizes & 15)
	}
	n := r.id(v == 2)
	for range n {
		id := r.id(v == 2)
		whole := file
		if v == 1 || v == 2 {
			switch m := r.u16() & 15; m {
			case 0:
			case 1:
				whole = idat
			default:
				return fmt.Errorf("item %d: construction method %d (only 0, the file, and 1, idat)", id, m)
			}
		}
		r.u16() // data reference index: 0, this file
		base := r.uint(baseSize)
		var data []byte
		for range r.u16() {
			r.uint(idxSize)
			off, n := base+r.uint(offSize), r.uint(lenSize)
			if n == 0 && off <= uint64(len(whole)) {
				n = uint64(len(whole)) - off // 0: to the end of the file
			}
			if r.err != nil || off > uint64(len(whole)) || n > uint64(len(whole))-off {
				return fmt.Errorf("item %d: extent [%d, +%d) outside the file's %d bytes", id, off, n, len(whole))
			}
			data = append(data, whole[off:off+n]...)
		}
		if it := f.item(id); it != nil {
			it.data = data
		}
	}
	return r.err
}

func (f *file) parseIprp(b []byte) error {
	children, err := boxes(b)
	if err != nil {
		return err
	}
	var ipco []rawBox
	for _, c := range children {
		if c.typ == "ipco" {
			if ipco, err = boxes(c.body); err != nil {
				return fmt.Errorf("ipco: %w", err)
			}
		}
	}
	for _, c := range children {
		if c.typ != "ipma" {
			continue
		}
		r := reader{b: c.body}
		vf := r.u32()
		for range r.u32() {
			id := r.id(vf>>24 >= 1)
			it := f.item(id)
			for range r.u8() {
				var essential bool
				var index int
				if vf&1 != 0 {
					a := r.u16()
					essential, index = a&0x8000 != 0, int(a&0x7fff)
				} else {
					a := r.u8()
					essential, index = a&0x80 != 0, int(a&0x7f)
				}
				if index == 0 {
					continue
				}
				if index > len(ipco) || it == nil {
					return fmt.Errorf("ipma: item %d, property %d of %d", id, index, len(ipco))
				}
				it.props = append(it.props, prop{box: ipco[index-1].whole, essential: essential})
			}
		}
		if r.err != nil {
			return fmt.Errorf("ipma: %w", r.err)
		}
	}
	return nil
}

func (f *file) parseIref(b []byte) error {
	r := reader{b: b}
	wide := r.u32()>>24 != 0
	if r.err != nil {
		return r.err
	}
	refs, err := boxes(r.b)
	if err != nil {
		return err
	}
	for _, bx := range refs {
		r := reader{b: bx.body}
		rf := ref{typ: bx.typ, from: r.id(wide)}
		for range r.u16() {
			rf.to = append(rf.to, r.id(wide))
		}
		if r.err != nil {
			return fmt.Errorf("%s: %w", bx.typ, r.err)
		}
		f.refs = append(f.refs, rf)
	}
	return nil
}

// --- writing ---

func box(typ string, payload ...[]byte) []byte {
	n := 8
	for _, p := range payload {
		n += len(p)
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, n), uint32(n))
	out = append(out, typ...)
	for _, p := range payload {
		out = append(out, p...)
	}
	return out
}

func fullBox(typ string, version byte, flags uint32, payload ...[]byte) []byte {
	vf := binary.BigEndian.AppendUint32(nil, uint32(version)<<24|flags)
	return box(typ, append([][]byte{vf}, payload...)...)
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// encode writes f as ftyp, meta, then one mdat holding every item's data
// in item order; iloc's offsets (32-bit, one extent per item) point there.
// Property boxes that are byte-for-byte equal are stored once in ipco.
func (f *file) encode() ([]byte, error) {
	if len(f.items) > 0xffff {
		return nil, fmt.Errorf("%d items: more than 16-bit IDs hold", len(f.items))
	}
	for _, it := range f.items {
		if it.id > 0xffff {
			return nil, fmt.Errorf("item ID %d: more than 16 bits", it.id)
		}
	}
	ftyp := box("ftyp", f.ftyp)
	meta := f.meta(0)
	base := len(ftyp) + len(meta) + 8
	var mdatLen int
	for _, it := range f.items {
		mdatLen += len(it.data)
	}
	if uint64(base+mdatLen) > 0xffffffff {
		return nil, fmt.Errorf("%d bytes: more than 32-bit offsets reach", base+mdatLen)
	}
	meta = f.meta(uint32(base)) // the same size: only iloc's offsets change
	out := append(ftyp, meta...)
	out = binary.BigEndian.AppendUint32(out, uint32(8+mdatLen))
	out = append(out, "mdat"...)
	for _, it := range f.items {
		out = append(out, it.data...)
	}
	return out, nil
}

func (f *file) meta(dataStart uint32) []byte {
	hdlr := fullBox("hdlr", 0, 0, u32(0), []byte("pict"), make([]byte, 12), []byte{0})
	pitm := fullBox("pitm", 0, 0, u16(uint16(f.primary)))

	var infes [][]byte
	iloc := [][]byte{{0x44, 0x00}, u16(uint16(len(f.items)))} // 32-bit offsets and lengths, no base offset
	off := dataStart
	for _, it := range f.items {
		var flags uint32
		if it.hidden {
			flags = 1
		}
		tail := it.infeTail
		if tail == nil {
			tail = []byte{0} // an empty name
		}
		infes = append(infes, fullBox("infe", 2, flags, u16(uint16(it.id)), u16(0), []byte(it.typ), tail))
		iloc = append(iloc, u16(uint16(it.id)), u16(0), u16(1), u32(off), u32(uint32(len(it.data))))
		off += uint32(len(it.data))
	}
	iinf := fullBox("iinf", 0, 0, append([][]byte{u16(uint16(len(f.items)))}, infes...)...)

	var refs [][]byte
	for _, r := range f.refs {
		p := [][]byte{u16(uint16(r.from)), u16(uint16(len(r.to)))}
		for _, to := range r.to {
			p = append(p, u16(uint16(to)))
		}
		refs = append(refs, box(r.typ, p...))
	}

	var ipco [][]byte
	index := func(b []byte) int {
		for i, p := range ipco {
			if bytes.Equal(p, b) {
				return i + 1
			}
		}
		ipco = append(ipco, b)
		return len(ipco)
	}
	type assoc struct {
		id      uint32
		indices []int
	}
	var assocs []assoc
	for _, it := range f.items {
		if len(it.props) == 0 {
			continue // an Exif item
		}
		a := assoc{id: it.id}
		for _, p := range it.props {
			i := index(p.box)
			if p.essential {
				i |= 0x8000
			}
			a.indices = append(a.indices, i)
		}
		assocs = append(assocs, a)
	}
	var ipmaFlags uint32 // 7-bit indices, unless there are more properties
	if len(ipco) > 0x7f {
		ipmaFlags = 1
	}
	ipma := [][]byte{u32(uint32(len(assocs)))}
	for _, a := range assocs {
		ipma = append(ipma, u16(uint16(a.id)), []byte{byte(len(a.indices))})
		for _, i := range a.indices {
			if ipmaFlags == 1 {
				ipma = append(ipma, u16(uint16(i)))
			} else {
				ipma = append(ipma, []byte{byte(i>>8&0x80 | i&0x7f)})
			}
		}
	}
	iprp := box("iprp", box("ipco", ipco...), fullBox("ipma", 0, ipmaFlags, ipma...))

	children := [][]byte{hdlr, pitm, iinf}
	if len(refs) > 0 {
		children = append(children, fullBox("iref", 0, 0, refs...))
	}
	children = append(children, iprp, fullBox("iloc", 0, 0, iloc...))
	return fullBox("meta", 0, 0, children...)
}
