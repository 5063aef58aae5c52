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

// bmffBox is an ISO BMFF box: its type and its body (after the size and type,
// a full box's version and flags included).
type bmffBox struct {
	typ  string
	body []byte
}

// maxBoxes bounds the boxes read at one level: an image's meta has a few
// per item, and an iPhone's grid of 48 tiles some hundreds in all.
const maxBoxes = 100_000

// boxes splits b into its boxes. A box that runs past b is an error,
// returned with the boxes before it.
func boxes(b []byte) ([]bmffBox, error) { return boxesN(b, -1) }

// boxesN is boxes, stopping after the n-th box (n < 0: all of them).
func boxesN(b []byte, n int) ([]bmffBox, error) {
	var out []bmffBox
	for p := uint64(0); p < uint64(len(b)) && len(out) != n; {
		if len(out) == maxBoxes {
			return out, errors.New("more than 100000 boxes")
		}
		if p+8 > uint64(len(b)) {
			return out, errors.New("a box header cut short")
		}
		size, head := uint64(binary.BigEndian.Uint32(b[p:])), uint64(8)
		typ := string(b[p+4 : p+8])
		switch size {
		case 0: // to the end
			size = uint64(len(b)) - p
		case 1: // a 64-bit size follows
			if p+16 > uint64(len(b)) {
				return out, errors.New("a box's 64-bit size cut short")
			}
			size, head = binary.BigEndian.Uint64(b[p+8:]), 16
		}
		if size < head || size > uint64(len(b))-p {
			return out, fmt.Errorf("a %q box of %d bytes, past the end", typ, size)
		}
		out = append(out, bmffBox{typ: typ, body: b[p+head : p+size]})
		p += size
	}
	return out, nil
}

func find(bs []bmffBox, typ string) (bmffBox, bool) {
	for _, b := range bs {
		if b.typ == typ {
			return b, true
		}
	}
	return bmffBox{}, false
}

// full returns a full box's version, flags and payload.
func (b bmffBox) full() (version byte, flags uint32, payload []byte, err error) {
	if len(b.body) < 4 {
		return 0, 0, nil, fmt.Errorf("a %q box cut short", b.typ)
	}
	return b.body[0], binary.BigEndian.Uint32(b.body) & 0xFFFFFF, b.body[4:], nil
}

// errCutShort is a box whose fields run past its end. libheif 1.19 (the
// images' decoder) refuses such a box, whichever it is but a few it
// ignores; Debian's older libheif reads some of them anyway (a reference
// list or a property association cut short): thumbd refuses them all by
// its own rule, so its look never prices what the box does not hold.
var errCutShort = fmt.Errorf("%w: a box's fields cut short", ErrNotServed)

// reader reads big-endian fields from a box's payload, remembering the
// first read past its end.
type reader struct {
	b   []byte
	p   int
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n > len(r.b)-r.p {
		if r.err == nil {
			r.err = errCutShort
		}
		return make([]byte, n)
	}
	r.p += n
	return r.b[r.p-n : r.p]
}

func (r *reader) u8() uint32  { return uint32(r.take(1)[0]) }
func (r *reader) u16() uint32 { return uint32(binary.BigEndian.Uint16(r.take(2))) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }

// id reads an item ID: 16 bits, or 32 when wide.
func (r *reader) id(wide bool) uint32 {
	if wide {
		return r.u32()
	}
	return r.u16()
}

// heifItem is what the meta box says of one item.
type heifItem struct {
	typ   string
	props []bmffBox // its properties, in ipma's order
	dimg  []uint32
	auxl  []uint32 // the items it is an auxiliary image of
	thmb  []uint32 // the items it is a thumbnail of
}

func (it *heifItem) prop(typ string) (bmffBox, bool) { return find(it.props, typ) }

// heifHeader reads a HEIF's (HEIC's or AVIF's) primary image from its
// meta box: ispe is its size (a grid's tiles are all decoded: Tiles,
// TileWidth, TileHeight say so), pixi or the codec's configuration its
// bit depth, an auxl item whose auxC says alpha its alpha, irot its
// rotation, a colr of type nclx its colour (the engine converts its
// primaries), a thmb item its embedded thumbnail. An AVIF sequence
// without a meta box is sized from its first
// video track.
func heifHeader(src []byte, format imagefmt.Format) (Header, error) {
	name := map[imagefmt.Format]string{imagefmt.AVIF: "AVIF", imagefmt.HEIC: "HEIF"}[format]
	top, err := boxes(src)
	meta, hasMeta := find(top, "meta")
	if moov, ok := find(top, "moov"); ok && (!hasMeta || !hasPrimary(meta) || string(src[8:12]) == "avis") {
		// An image sequence: its first frame (an avis file's still image
		// is that frame, when it has one; link-u's sequences refer to an
		// alpha item their meta does not hold, which libheif refuses).
		h, err := sequenceHeader(src, moov)
		if err != nil {
			return Header{}, fmt.Errorf("%s sequence: %w", name, err)
		}
		return h, nil
	}
	if !hasMeta {
		if err != nil {
			return Header{}, fmt.Errorf("%s: %w", name, err)
		}
		return Header{}, fmt.Errorf("%s without a meta box", name)
	}
	h, err := metaHeader(meta) // its Format is its items' coding, not its brand
	if err != nil {
		return Header{}, fmt.Errorf("%s: %w", name, err)
	}
	return h, nil
}

// hasPrimary says whether a meta box names a primary item (pitm).
func hasPrimary(meta bmffBox) bool {
	_, _, payload, err := meta.full()
	if err != nil {
		return false
	}
	children, _ := boxes(payload)
	_, ok := find(children, "pitm")
	return ok
}

func metaHeader(meta bmffBox) (Header, error) {
	_, _, payload, err := meta.full()
	if err != nil {
		return Header{}, err
	}
	children, err := boxes(payload)
	if err != nil {
		return Header{}, err
	}
	items, primary, err := heifItems(children)
	if err != nil {
		return Header{}, err
	}
	it, ok := items[primary]
	if !ok {
		return Header{}, fmt.Errorf("no item %d (the primary) in iinf", primary)
	}
	h := Header{Bands: 3, BytesPerSample: 1, Frames: 1}
	ispe, ok := it.prop("ispe")
	if !ok {
		return Header{}, fmt.Errorf("the primary item (%q) has no ispe", it.typ)
	}
	if h.Width, h.Height, err = ispeSize(ispe); err != nil {
		return Header{}, err
	}
	coded := it // the item whose codec configuration says the depth
	if it.typ == "grid" {
		if len(it.dimg) == 0 {
			return Header{}, errors.New("a grid without tiles")
		}
		tile, ok := items[it.dimg[0]]
		if !ok {
			return Header{}, fmt.Errorf("a grid's tile %d not in iinf", it.dimg[0])
		}
		t, ok := tile.prop("ispe")
		if !ok {
			return Header{}, errors.New("a grid's tile without ispe")
		}
		if h.TileWidth, h.TileHeight, err = ispeSize(t); err != nil {
			return Header{}, err
		}
		// libheif decodes every tile whole, at its own size: the price is
		// the first tile's times their number only when all are alike.
		if err := sameTiles(items, it.dimg, h.TileWidth, h.TileHeight); err != nil {
			return Header{}, err
		}
		h.Tiles = len(it.dimg)
		if int64(h.Tiles)*int64(h.TileWidth)*int64(h.TileHeight) < h.Pixels() {
			return Header{}, fmt.Errorf("a %dx%d grid of %d tiles of %dx%d", h.Width, h.Height, h.Tiles, h.TileWidth, h.TileHeight)
		}
		coded = tile
	}
	h.BitDepth = bitDepth(it, coded)
	if h.BitDepth > 8 {
		h.BytesPerSample = 2
	}
	h.NCLX = nclx(it.props, coded.props) // a grid's colr, else its tile's
	h.Rotation = rotation(it)
	for _, other := range items {
		if contains(other.auxl, primary) && isAlpha(other) {
			h.Alpha, h.Bands = true, 4
		}
	}
	if err := thumbnail(&h, items, primary); err != nil {
		return Header{}, err
	}
	if h.Format, err = heifCodec(items, primary); err != nil {
		return Header{}, err
	}
	return h, nil
}

// sameTiles checks that every tile of a grid is a listed item of the
// first one's size (w x h by its ispe).
func sameTiles(items map[uint32]*heifItem, tiles []uint32, w, h int) error {
	for _, id := range tiles {
		tile, ok := items[id]
		if !ok {
			return fmt.Errorf("a grid's tile %d not in iinf", id)
		}
		ispe, ok := tile.prop("ispe")
		if !ok {
			return fmt.Errorf("a grid's tile %d without ispe", id)
		}
		tw, th, err := ispeSize(ispe)
		if err != nil {
			return err
		}
		if tw != w || th != h {
			return fmt.Errorf("%w: a grid of tiles of %dx%d and %dx%d", ErrNotServed, w, h, tw, th)
		}
	}
	return nil
}

// heifCodecs are the item types libheif decodes in thumbd's build, and
// the input format each one is: libvips' one heif loader reads HEIC and
// AVIF alike, and libheif picks the decoder by the item's type, never by
// the file's brand.
var heifCodecs = map[string]imagefmt.Format{"hvc1": imagefmt.HEIC, "av01": imagefmt.AVIF}

// heifCodec is the input format of a HEIF file from the coded items
// libvips' loader may decode: the primary image (a grid's tiles), its
// alpha and its thumbnails. A file that mixes HEVC and AV1, or holds an
// item of another coding (JPEG, uncompressed, an overlay...), is refused:
// THUMBD_INPUTS decides by what reaches the decoders.
func heifCodec(items map[uint32]*heifItem, primary uint32) (imagefmt.Format, error) {
	var format imagefmt.Format
	use := func(role string, id uint32) error {
		it := items[id]
		coded := []uint32{id}
		if it.typ == "grid" {
			coded = it.dimg
		}
		for _, c := range coded {
			typ := items[c].typ
			f, ok := heifCodecs[typ]
			switch {
			case !ok:
				return fmt.Errorf("%w: its %s is an item of type %q; thumbd decodes HEVC (hvc1) and AV1 (av01) items, and grids of them", ErrNotServed, role, typ)
			case format != "" && f != format:
				return fmt.Errorf("%w: it mixes HEVC and AV1 images (its %s is %q)", ErrNotServed, role, typ)
			}
			format = f
		}
		return nil
	}
	if err := use("primary image", primary); err != nil {
		return "", err
	}
	ids := make([]uint32, 0, len(items))
	for id := range items {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the same sentence for the same file
	for _, id := range ids {
		it := items[id]
		role := ""
		switch {
		case contains(it.auxl, primary) && isAlpha(it):
			role = "alpha image"
		case contains(it.thmb, primary):
			role = "thumbnail"
		default:
			continue
		}
		if it.typ == "grid" {
			for _, tile := range it.dimg {
				if _, ok := items[tile]; !ok {
					return "", fmt.Errorf("its %s's tile %d is not in iinf", role, tile)
				}
			}
		}
		if err := use(role, id); err != nil {
			return "", err
		}
	}
	return format, nil
}

// isAlpha says whether an auxiliary item is an alpha image: its auxC says
// so, or it has none (the conservative reading).
func isAlpha(it *heifItem) bool {
	auxC, ok := it.prop("auxC")
	_, _, payload, err := auxC.full()
	return !ok || err != nil || bytes.Contains(payload, []byte("alpha")) || bytes.Contains(payload, []byte("auxid:1\x00"))
}

// nclx reads the first colr box of type nclx among each list of
// properties in turn: colour_type "nclx", colour_primaries,
// transfer_characteristics and matrix_coefficients (16 bits each), then
// full_range_flag (the top bit of a byte). colr is not a full box. A cut
// one, or one whose primaries are 0 (reserved), is taken for none: the
// colour is then libvips' default, sRGB, as before this box was read.
func nclx(lists ...[]bmffBox) thumbjob.NCLX {
	for _, props := range lists {
		for _, b := range props {
			if b.typ != "colr" || len(b.body) < 11 || string(b.body[:4]) != "nclx" {
				continue
			}
			r := reader{b: b.body[4:]}
			c := thumbjob.NCLX{Primaries: int(r.u16()), Transfer: int(r.u16()), Matrix: int(r.u16()), FullRange: r.u8()&0x80 != 0}
			if r.err == nil && c.Primaries != 0 {
				return c
			}
		}
	}
	return thumbjob.NCLX{}
}

// rotation is an item's irot, in degrees anti-clockwise.
func rotation(it *heifItem) int {
	if irot, ok := it.prop("irot"); ok && len(irot.body) > 0 {
		return int(irot.body[0]&3) * 90
	}
	return 0
}

// thumbnail sets h's Thumb fields from the primary's first embedded
// thumbnail, the one libvips decodes (heifload.c takes the first of
// libheif's list, which follows the item IDs). A thumbnail without a size
// is an error: libheif cannot decode it either.
func thumbnail(h *Header, items map[uint32]*heifItem, primary uint32) error {
	var first *heifItem
	var firstID uint32
	for id, it := range items {
		if contains(it.thmb, primary) && (first == nil || id < firstID) {
			first, firstID = it, id
		}
	}
	if first == nil {
		return nil
	}
	ispe, ok := first.prop("ispe")
	if !ok {
		return fmt.Errorf("the thumbnail (item %d) has no ispe", firstID)
	}
	w, ht, err := ispeSize(ispe)
	if err != nil {
		return fmt.Errorf("the thumbnail's ispe: %w", err)
	}
	if r := rotation(first); r == 90 || r == 270 {
		w, ht = ht, w
	}
	h.ThumbWidth, h.ThumbHeight = w, ht
	// Priced as the primary's pixels: not deeper, and no alpha of its own
	// unless the primary has one.
	h.ThumbCoded = (first.typ == "hvc1" || first.typ == "av01") && bitDepth(first) <= h.BitDepth
	for _, other := range items {
		if contains(other.auxl, firstID) && !h.Alpha {
			h.ThumbCoded = false
		}
	}
	return nil
}

func contains(ids []uint32, id uint32) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

func ispeSize(ispe bmffBox) (w, h int, err error) {
	_, _, payload, err := ispe.full()
	r := reader{b: payload}
	w, h = int(r.u32()), int(r.u32())
	if err = errors.Join(err, r.err); err != nil {
		return 0, 0, err
	}
	return w, h, nil
}

// bitDepth is pixi's first channel's bits (the item's, or its tile's),
// else its codec configuration's (av1C, hvcC); 8 when neither says.
func bitDepth(items ...*heifItem) int {
	for _, it := range items {
		if pixi, ok := it.prop("pixi"); ok {
			if _, _, p, err := pixi.full(); err == nil && len(p) >= 2 && p[0] > 0 {
				return int(p[1])
			}
		}
	}
	for _, it := range items {
		if d := codecDepth(it.props); d > 0 {
			return d
		}
	}
	return 8
}

// codecDepth reads an av1C's (high_bitdepth, twelve_bit) or an hvcC's
// (bitDepthLumaMinus8) bit depth; 0 when there is neither.
func codecDepth(props []bmffBox) int {
	if av1C, ok := find(props, "av1C"); ok && len(av1C.body) >= 3 {
		switch f := av1C.body[2]; {
		case f&0x40 == 0:
			return 8
		case f&0x20 == 0:
			return 10
		default:
			return 12
		}
	}
	if hvcC, ok := find(props, "hvcC"); ok && len(hvcC.body) >= 18 {
		return 8 + int(hvcC.body[17]&7)
	}
	return 0
}

// heifItems reads pitm, iinf, iref and iprp: every item with its type,
// its properties and its references.
func heifItems(meta []bmffBox) (map[uint32]*heifItem, uint32, error) {
	pitm, ok := find(meta, "pitm")
	if !ok {
		return nil, 0, errors.New("no primary item (pitm)")
	}
	v, _, payload, err := pitm.full()
	if err != nil {
		return nil, 0, err
	}
	r := reader{b: payload}
	primary := r.id(v > 0)
	if r.err != nil {
		return nil, 0, r.err
	}
	iinf, ok := find(meta, "iinf")
	if !ok {
		return nil, 0, errors.New("no item information (iinf)")
	}
	v, _, payload, err = iinf.full()
	if err != nil {
		return nil, 0, err
	}
	r = reader{b: payload}
	// The entry count: libheif reads that many boxes and no more (none
	// for 0), whatever follows them.
	count := r.id(v > 0)
	if r.err != nil {
		return nil, 0, r.err
	}
	infes, err := boxesN(payload[r.p:], int(min(count, maxBoxes)))
	if err != nil {
		return nil, 0, err
	}
	items := map[uint32]*heifItem{}
	for _, infe := range infes {
		if infe.typ != "infe" {
			// Counted among the entries, and otherwise ignored, as libheif
			// does (it takes iinf's infe children only): a file with one
			// opens (FuzzLookAgainstLibvips' 389b8a3005cd3e94).
			continue
		}
		v, _, payload, err := infe.full()
		if err != nil {
			return nil, 0, errors.Join(err, fmt.Errorf("a %q box in iinf", infe.typ))
		}
		if v < 2 { // no item type: not an image item
			continue
		}
		r := reader{b: payload}
		id := r.id(v > 2)
		r.u16() // protection index
		typ := string(r.take(4))
		if r.err != nil {
			return nil, 0, r.err
		}
		items[id] = &heifItem{typ: typ}
	}
	if err := heifRefs(meta, items); err != nil {
		return nil, 0, err
	}
	if err := heifProps(meta, items); err != nil {
		return nil, 0, err
	}
	return items, primary, nil
}

// heifRefs reads iref's dimg (a grid's tiles), auxl (auxiliary images)
// and thmb (thumbnails) references.
func heifRefs(meta []bmffBox, items map[uint32]*heifItem) error {
	iref, ok := find(meta, "iref")
	if !ok {
		return nil
	}
	refs, err := irefEntries(iref)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		it, ok := items[ref.from]
		if !ok {
			continue
		}
		switch ref.typ {
		case "dimg":
			it.dimg = append(it.dimg, ref.to...)
		case "auxl":
			it.auxl = append(it.auxl, ref.to...)
		case "thmb":
			it.thmb = append(it.thmb, ref.to...)
		}
	}
	return nil
}

// irefEntry is one reference of iref: its type, where that type is in the
// iref box's payload, the item it is from and those it points to.
type irefEntry struct {
	typ    string
	typeAt int
	from   uint32
	to     []uint32
}

// irefEntries reads iref's references as libheif does (box.cc,
// Box_iref::parse): one after the other, each a box header (whose size
// libheif reads and ignores: a size that swallows the next reference
// would hide it from a reader that goes by sizes), the item it is from,
// a count and the items it points to. A reference with no target, or one
// cut short, is an error, as it is to libheif.
func irefEntries(iref bmffBox) ([]irefEntry, error) {
	v, _, payload, err := iref.full()
	if err != nil {
		return nil, err
	}
	r := reader{b: payload}
	var out []irefEntry
	for r.p < len(payload) && r.err == nil {
		if len(out) == maxBoxes {
			return nil, errors.New("more than 100000 references in iref")
		}
		size := r.u32()
		e := irefEntry{typeAt: r.p}
		e.typ = string(r.take(4))
		if size == 1 {
			r.take(8) // a 64-bit size
		}
		if e.typ == "uuid" {
			r.take(16)
		}
		e.from = r.id(v > 0)
		n := int(r.u16())
		if r.err == nil && n == 0 {
			return nil, fmt.Errorf("iref's %q from item %d has no target", e.typ, e.from)
		}
		if n > len(payload) {
			return nil, fmt.Errorf("iref's %q: %d references, past the end", e.typ, n)
		}
		for range n {
			e.to = append(e.to, r.id(v > 0))
		}
		if r.err != nil && e.typ != "" && len(e.to) > 0 {
			// The references run past the box: libheif 1.19 (the
			// images') refuses the file ("iref box should contain N
			// references"), Debian's 1.15 reads what the box holds and
			// opens it; thumbd refuses it by its own rule either way.
			return nil, fmt.Errorf("%w: iref's %q from item %d declares %d references and the box ends first", ErrNotServed, e.typ, e.from, n)
		}
		out = append(out, e)
	}
	if r.err != nil {
		return nil, fmt.Errorf("iref: %w", r.err)
	}
	return out, nil
}

// heifProps reads iprp: ipco's properties, given to items by ipma.
func heifProps(meta []bmffBox, items map[uint32]*heifItem) error {
	iprp, ok := find(meta, "iprp")
	if !ok {
		return errors.New("no item properties (iprp)")
	}
	children, err := boxes(iprp.body)
	if err != nil {
		return err
	}
	ipco, ok := find(children, "ipco")
	if !ok {
		return errors.New("no property container (ipco)")
	}
	props, err := boxes(ipco.body)
	if err != nil {
		return err
	}
	for _, ipma := range children {
		if ipma.typ != "ipma" {
			continue
		}
		v, flags, payload, err := ipma.full()
		if err != nil {
			return err
		}
		// As libheif reads it: the entries stop at the count or at the
		// box's end, whichever comes first.
		r := reader{b: payload}
		for n := r.u32(); n > 0 && r.err == nil && r.p < len(payload); n-- {
			id := r.id(v > 0)
			for k := r.u8(); k > 0 && r.err == nil; k-- {
				var index int
				if flags&1 != 0 {
					index = int(r.u16() & 0x7FFF)
				} else {
					index = int(r.u8() & 0x7F)
				}
				if index == 0 { // no property
					continue
				}
				if index > len(props) {
					return fmt.Errorf("ipma gives item %d property %d of %d", id, index, len(props))
				}
				if it, ok := items[id]; ok {
					it.props = append(it.props, props[index-1])
				}
			}
		}
		if r.err != nil {
			// An entry cut by the box's end: libheif 1.19 (the images')
			// refuses the file, Debian's 1.15 reads what is there.
			return fmt.Errorf("%w: ipma: %w", ErrNotServed, r.err)
		}
	}
	return nil
}

// WithoutHEIFThumbnails is a copy of src, a HEIF file, whose thmb
// references (iref's) are renamed to a type no reader knows ("xthb"), so
// that libheif lists no embedded thumbnail: libvips' thumbnail operation
// then neither decodes one in place of the primary image nor decodes one
// to check its aspect ratio, which it does (heifload.c,
// vips_foreign_load_heif_set_thumbnail) before deciding on it, whatever
// its declared size. The references are found as libheif reads them
// (irefEntries). src itself, when it has no thmb reference.
func WithoutHEIFThumbnails(src []byte) []byte {
	top, _ := boxes(src) // the boxes before any malformed one
	var at []int
	if meta, ok := find(top, "meta"); ok {
		if _, _, payload, err := meta.full(); err == nil {
			children, _ := boxes(payload)
			if iref, ok := find(children, "iref"); ok {
				refs, _ := irefEntries(iref)
				if _, _, payload, err := iref.full(); err == nil {
					// The payload is src's, from cap(src)-cap(payload) on.
					base := cap(src) - cap(payload)
					for _, r := range refs {
						if r.typ == "thmb" {
							at = append(at, base+r.typeAt)
						}
					}
				}
			}
		}
	}
	if len(at) == 0 {
		return src
	}
	out := bytes.Clone(src)
	for _, p := range at {
		copy(out[p:], "xthb")
	}
	return out
}
