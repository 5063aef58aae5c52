package video

import (
	"errors"
	"fmt"
)

// stream is what a codec's configuration (avcC, hvcC, vpcC, av1C, or
// Matroska's CodecPrivate of the same layout) and its parameter sets say.
type stream struct {
	profile, level int
	depth          int
	chroma         string
	width, height  int // the codec's own (cropped) size, 0 when unsaid
	refs           int
	colour         *Colour
}

// configuration reads the codec configuration record both containers
// store alike (avcC, hvcC, av1C; Matroska's CodecPrivate is the same
// bytes); VP8 has none and is always 8-bit 4:2:0.
func configuration(codec Codec, b []byte) (stream, error) {
	switch codec {
	case H264:
		return avcC(b)
	case HEVC:
		return hvcC(b)
	case AV1:
		return av1C(b)
	}
	return stream{depth: 8, chroma: "4:2:0"}, nil
}

// into fills what the configuration says into info: the codec's word on
// depth, chroma and colour over the container's.
func (s stream) into(info *Info) {
	info.Profile, info.Level, info.MaxRefs = s.profile, s.level, s.refs
	info.CodedWidth, info.CodedHeight = s.width, s.height
	if s.depth > 0 {
		info.BitDepth = s.depth
	}
	if s.chroma != "" {
		info.Chroma = s.chroma
	}
	if s.colour != nil {
		info.Colour = *s.colour
	}
}

// chromaNames are chroma_format_idc's (H.264, HEVC) in order.
var chromaNames = [4]string{"4:0:0", "4:2:0", "4:2:2", "4:4:4"}

// bits reads a bitstream most significant bit first; the first read past
// the end is remembered and every later one gives zeros.
type bits struct {
	b   []byte
	p   int // in bits
	err error
}

func (r *bits) u(n int) uint64 {
	var v uint64
	for range n {
		if r.p >= 8*len(r.b) {
			if r.err == nil {
				r.err = errors.New("a parameter set cut short")
			}
			return 0
		}
		v = v<<1 | uint64(r.b[r.p/8]>>(7-r.p%8)&1)
		r.p++
	}
	return v
}

func (r *bits) flag() bool { return r.u(1) == 1 }

// ue reads an unsigned Exp-Golomb code (at most 32 leading zeros).
func (r *bits) ue() uint64 {
	zeros := 0
	for !r.flag() {
		if r.err != nil {
			return 0
		}
		if zeros++; zeros > 31 {
			r.err = errors.New("an Exp-Golomb code longer than 32 bits")
			return 0
		}
	}
	return 1<<zeros - 1 + r.u(zeros)
}

// se reads a signed Exp-Golomb code.
func (r *bits) se() int64 {
	v := r.ue()
	if v&1 == 1 {
		return int64(v+1) / 2
	}
	return -int64(v / 2)
}

// rbsp is a NAL unit's payload without its emulation prevention bytes
// (each 0x03 after two zero bytes).
func rbsp(nal []byte) []byte {
	out := make([]byte, 0, len(nal))
	zeros := 0
	for _, c := range nal {
		if zeros >= 2 && c == 3 {
			zeros = 0
			continue
		}
		if c == 0 {
			zeros++
		} else {
			zeros = 0
		}
		out = append(out, c)
	}
	return out
}

// avcC reads an AVCDecoderConfigurationRecord (ISO/IEC 14496-15, 5.3.3)
// and its first sequence parameter set.
func avcC(b []byte) (stream, error) {
	f := &fields{b: b}
	version := f.n(1)
	profile, _, level := f.n(1), f.n(1), f.n(1)
	f.n(1) // lengthSizeMinusOne
	nsps := int(f.n(1) & 0x1F)
	var sps []byte
	for i := range nsps {
		n := int(f.n(2))
		nal := f.bytes(n)
		if i == 0 {
			sps = nal
		}
	}
	npps := int(f.n(1))
	for range npps {
		f.bytes(int(f.n(2)))
	}
	if f.err != nil || version != 1 {
		return stream{}, fmt.Errorf("avcC (version %d): %v", version, errors.Join(f.err, errors.New("malformed")))
	}
	s := stream{profile: int(profile), level: int(level), depth: 8, chroma: chromaNames[1]}
	if len(sps) == 0 {
		return s, nil // avc3: the parameter sets are in the stream
	}
	if err := h264SPS(sps, &s); err != nil {
		return stream{}, fmt.Errorf("avcC's sequence parameter set: %w", err)
	}
	return s, nil
}

// h264SPS reads an H.264 sequence parameter set (ITU-T H.264, 7.3.2.1.1)
// up to its cropping: profile, level, chroma format, bit depth, the
// reference frames and the cropped size.
func h264SPS(nal []byte, s *stream) error {
	if len(nal) < 4 || nal[0]&0x1F != 7 {
		return errors.New("not a sequence parameter set")
	}
	r := &bits{b: rbsp(nal[1:])}
	s.profile = int(r.u(8))
	r.u(8) // constraint flags
	s.level = int(r.u(8))
	r.ue() // seq_parameter_set_id
	chroma, separate := uint64(1), false
	switch s.profile {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		chroma = r.ue()
		if chroma > 3 {
			return fmt.Errorf("chroma_format_idc %d", chroma)
		}
		if chroma == 3 {
			separate = r.flag()
		}
		luma, croma := r.ue(), r.ue()
		if luma > 6 || croma > 6 {
			return fmt.Errorf("a bit depth of %d+8", max(luma, croma))
		}
		s.depth = int(max(luma, croma)) + 8
		r.flag() // qpprime_y_zero_transform_bypass_flag
		if r.flag() {
			lists := 8
			if chroma == 3 {
				lists = 12
			}
			for i := range lists {
				if r.flag() {
					skipScalingList(r, map[bool]int{true: 16, false: 64}[i < 6])
				}
			}
		}
	}
	s.chroma = chromaNames[chroma]
	if r.ue() > 12 { // log2_max_frame_num_minus4
		return errors.New("log2_max_frame_num out of range")
	}
	switch r.ue() { // pic_order_cnt_type
	case 0:
		r.ue()
	case 1:
		r.flag()
		r.se()
		r.se()
		n := r.ue()
		if n > 255 {
			return fmt.Errorf("%d reference frames in a picture order count cycle", n)
		}
		for range n {
			r.se()
		}
	case 2:
	default:
		return errors.New("pic_order_cnt_type out of range")
	}
	refs := r.ue()
	r.flag() // gaps_in_frame_num_value_allowed_flag
	wmbs, hmaps := r.ue()+1, r.ue()+1
	frameMbsOnly := r.flag()
	if !frameMbsOnly {
		r.flag() // mb_adaptive_frame_field_flag
	}
	r.flag() // direct_8x8_inference_flag
	var crop [4]uint64
	if r.flag() {
		crop = [4]uint64{r.ue(), r.ue(), r.ue(), r.ue()}
	}
	if r.err != nil {
		return r.err
	}
	if refs > 16 || wmbs > 1<<12 || hmaps > 1<<12 {
		return fmt.Errorf("%d reference frames, %dx%d macroblocks", refs, wmbs, hmaps)
	}
	fields := uint64(1)
	if !frameMbsOnly {
		fields = 2
	}
	// The crop unit (7.4.2.1.1): the chroma subsampling's, times the
	// field pairs of an interlaced stream.
	unitX, unitY := uint64(1), fields
	if chroma != 0 && !separate {
		unitX, unitY = [4]uint64{1, 2, 2, 1}[chroma], fields*[4]uint64{1, 2, 1, 1}[chroma]
	}
	w, h := wmbs*16, hmaps*16*fields
	if (crop[0]+crop[1])*unitX >= w || (crop[2]+crop[3])*unitY >= h {
		return fmt.Errorf("a %dx%d picture cropped by %v", w, h, crop)
	}
	s.width, s.height = int(w-(crop[0]+crop[1])*unitX), int(h-(crop[2]+crop[3])*unitY)
	s.refs = int(refs)
	return nil
}

// skipScalingList reads past a scaling list (7.3.2.1.1.1).
func skipScalingList(r *bits, size int) {
	last, next := int64(8), int64(8)
	for range size {
		if next != 0 {
			next = (last + r.se() + 256) % 256
		}
		if next != 0 {
			last = next
		}
		if r.err != nil {
			return
		}
	}
}

// hvcC reads an HEVCDecoderConfigurationRecord (ISO/IEC 14496-15, 8.3.3)
// and its first sequence parameter set.
func hvcC(b []byte) (stream, error) {
	f := &fields{b: b}
	version := f.n(1)
	profile := f.n(1) & 0x1F
	f.bytes(4 + 6) // compatibility and constraint flags
	level := f.n(1)
	f.bytes(2 + 1) // min_spatial_segmentation_idc, parallelismType
	chroma := f.n(1) & 3
	luma, croma := f.n(1)&7, f.n(1)&7
	f.bytes(2 + 1) // avgFrameRate, the rest
	arrays := int(f.n(1))
	var sps []byte
	for range arrays {
		typ := f.n(1) & 0x3F
		for range int(f.n(2)) {
			nal := f.bytes(int(f.n(2)))
			if typ == 33 && sps == nil {
				sps = nal
			}
		}
	}
	if f.err != nil || version != 1 {
		return stream{}, fmt.Errorf("hvcC (version %d): %v", version, errors.Join(f.err, errors.New("malformed")))
	}
	s := stream{profile: int(profile), level: int(level), depth: int(max(luma, croma)) + 8, chroma: chromaNames[chroma]}
	if sps == nil {
		return s, nil // hev1: the parameter sets are in the stream
	}
	if err := hevcSPS(sps, &s); err != nil {
		return stream{}, fmt.Errorf("hvcC's sequence parameter set: %w", err)
	}
	return s, nil
}

// hevcSPS reads an HEVC sequence parameter set (ITU-T H.265, 7.3.2.2)
// up to its picture buffering: chroma format, size, bit depth and the
// decoded picture buffer's size.
func hevcSPS(nal []byte, s *stream) error {
	if len(nal) < 3 || nal[0]>>1&0x3F != 33 {
		return errors.New("not a sequence parameter set")
	}
	r := &bits{b: rbsp(nal[2:])}
	r.u(4) // sps_video_parameter_set_id
	sub := int(r.u(3))
	r.flag() // sps_temporal_id_nesting_flag
	// profile_tier_level(1, sub) (7.3.3)
	r.u(2 + 1)
	s.profile = int(r.u(5))
	r.u(32 + 48)
	s.level = int(r.u(8))
	profiles, levels := make([]bool, sub), make([]bool, sub)
	for i := range sub {
		profiles[i], levels[i] = r.flag(), r.flag()
	}
	if sub > 0 {
		r.u(2 * (8 - sub))
	}
	for i := range sub {
		if profiles[i] {
			r.u(88)
		}
		if levels[i] {
			r.u(8)
		}
	}
	r.ue() // sps_seq_parameter_set_id
	chroma, separate := r.ue(), false
	if chroma > 3 {
		return fmt.Errorf("chroma_format_idc %d", chroma)
	}
	if chroma == 3 {
		separate = r.flag()
	}
	w, h := r.ue(), r.ue()
	var crop [4]uint64
	if r.flag() {
		crop = [4]uint64{r.ue(), r.ue(), r.ue(), r.ue()}
	}
	luma, croma := r.ue(), r.ue()
	r.ue() // log2_max_pic_order_cnt_lsb_minus4
	from := sub
	if r.flag() {
		from = 0
	}
	refs := uint64(0)
	for range sub - from + 1 {
		refs = max(refs, r.ue()+1) // sps_max_dec_pic_buffering_minus1
		r.ue()
		r.ue()
	}
	if r.err != nil {
		return r.err
	}
	if luma > 8 || croma > 8 || refs > 16 || w == 0 || h == 0 || w > 1<<16 || h > 1<<16 {
		return fmt.Errorf("a %dx%d picture of %d+8 bits and %d references", w, h, max(luma, croma), refs)
	}
	unitX, unitY := uint64(1), uint64(1)
	if !separate {
		unitX, unitY = [4]uint64{1, 2, 2, 1}[chroma], [4]uint64{1, 2, 1, 1}[chroma]
	}
	if (crop[0]+crop[1])*unitX >= w || (crop[2]+crop[3])*unitY >= h {
		return fmt.Errorf("a %dx%d picture cropped by %v", w, h, crop)
	}
	s.chroma, s.depth, s.refs = chromaNames[chroma], int(max(luma, croma))+8, int(refs)
	s.width, s.height = int(w-(crop[0]+crop[1])*unitX), int(h-(crop[2]+crop[3])*unitY)
	return nil
}

// vpcC reads a VPCodecConfigurationRecord (VP Codec ISO Media File Format
// Binding, 2.2): a full box's payload.
func vpcC(payload []byte) (stream, error) {
	f := &fields{b: payload}
	profile, level := f.n(1), f.n(1)
	x := f.n(1)
	c := &Colour{Primaries: int(f.n(1)), Transfer: int(f.n(1)), Matrix: int(f.n(1)), FullRange: x&1 == 1}
	if f.err != nil {
		return stream{}, fmt.Errorf("vpcC: %w", f.err)
	}
	depth := int(x >> 4)
	if depth != 8 && depth != 10 && depth != 12 {
		return stream{}, fmt.Errorf("vpcC: a bit depth of %d", depth)
	}
	return stream{profile: int(profile), level: int(level), depth: depth, chroma: vpChroma(x >> 1 & 7), colour: c}, nil
}

// vpChroma names vpcC's chromaSubsampling.
func vpChroma(v uint64) string {
	switch v {
	case 0, 1:
		return "4:2:0"
	case 2:
		return "4:2:2"
	case 3:
		return "4:4:4"
	}
	return ""
}

// av1C reads an AV1CodecConfigurationRecord (AV1 Codec ISO Media File
// Format Binding, 2.3) and the sequence header among its configOBUs.
func av1C(b []byte) (stream, error) {
	if len(b) < 4 || b[0] != 0x81 {
		return stream{}, errors.New("av1C: malformed")
	}
	s := stream{profile: int(b[1] >> 5), level: int(b[1] & 0x1F), depth: 8}
	switch {
	case b[2]&0x40 != 0 && b[2]&0x20 != 0:
		s.depth = 12
	case b[2]&0x40 != 0:
		s.depth = 10
	}
	mono, sx, sy := b[2]&0x10 != 0, b[2]&0x08 != 0, b[2]&0x04 != 0
	switch {
	case mono:
		s.chroma = "4:0:0"
	case sx && sy:
		s.chroma = "4:2:0"
	case sx:
		s.chroma = "4:2:2"
	default:
		s.chroma = "4:4:4"
	}
	obus := b[4:]
	for len(obus) > 0 {
		typ, payload, rest, err := nextOBU(obus)
		if err != nil {
			return stream{}, fmt.Errorf("av1C's configOBUs: %w", err)
		}
		if typ == 1 { // OBU_SEQUENCE_HEADER
			if s.width, s.height, err = av1MaxFrame(payload); err != nil {
				return stream{}, fmt.Errorf("av1C's sequence header: %w", err)
			}
			break
		}
		obus = rest
	}
	return s, nil
}

// nextOBU splits the first OBU (AV1, 5.3) from b: its type, its payload
// and the OBUs after it. An OBU without a size field runs to the end.
func nextOBU(b []byte) (typ int, payload, rest []byte, err error) {
	if len(b) < 1 || b[0]&0x80 != 0 {
		return 0, nil, nil, errors.New("a malformed OBU header")
	}
	typ, ext, hasSize := int(b[0]>>3&0xF), b[0]&4 != 0, b[0]&2 != 0
	p := 1
	if ext {
		p++
	}
	if p > len(b) {
		return 0, nil, nil, errors.New("an OBU header cut short")
	}
	if !hasSize {
		return typ, b[p:], nil, nil
	}
	var size uint64
	for i := 0; ; i++ {
		if i == 8 || p >= len(b) {
			return 0, nil, nil, errors.New("an OBU size cut short")
		}
		c := b[p]
		p++
		size |= uint64(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			break
		}
	}
	if size > uint64(len(b)-p) {
		return 0, nil, nil, fmt.Errorf("an OBU of %d bytes in %d", size, len(b)-p)
	}
	return typ, b[p : p+int(size)], b[p+int(size):], nil
}

// av1MaxFrame reads a sequence header OBU (AV1, 5.5.1) up to its largest
// frame's size.
func av1MaxFrame(b []byte) (w, h int, err error) {
	r := &bits{b: b}
	r.u(3)   // seq_profile
	r.flag() // still_picture
	if r.flag() {
		r.u(5) // reduced_still_picture_header: seq_level_idx[0]
	} else {
		decoderModel, delayLength := false, 0
		if r.flag() { // timing_info_present_flag
			r.u(32 + 32)
			if r.flag() { // equal_picture_interval: num_ticks_per_picture_minus_1, uvlc
				zeros := 0
				for !r.flag() && r.err == nil {
					if zeros++; zeros >= 32 {
						return 0, 0, errors.New("a uvlc longer than 32 bits")
					}
				}
				r.u(zeros)
			}
			if decoderModel = r.flag(); decoderModel {
				delayLength = int(r.u(5)) + 1
				r.u(32 + 5 + 5)
			}
		}
		delay := r.flag() // initial_display_delay_present_flag
		points := int(r.u(5)) + 1
		for range points {
			r.u(12) // operating_point_idc
			if r.u(5) > 7 {
				r.flag() // seq_tier
			}
			if decoderModel && r.flag() {
				r.u(2*delayLength + 1)
			}
			if delay && r.flag() {
				r.u(4)
			}
		}
	}
	wbits, hbits := int(r.u(4))+1, int(r.u(4))+1
	w, h = int(r.u(wbits))+1, int(r.u(hbits))+1
	if r.err != nil {
		return 0, 0, r.err
	}
	return w, h, nil
}

// colr reads a colr box (ISO/IEC 14496-12, 12.1.5; QuickTime's nclc):
// the code points of an nclx or nclc, nil for an ICC profile.
func colr(body []byte) (*Colour, error) {
	f := &fields{b: body}
	typ := string(f.bytes(4))
	if typ != "nclx" && typ != "nclc" {
		return nil, f.err
	}
	c := &Colour{Primaries: int(f.n(2)), Transfer: int(f.n(2)), Matrix: int(f.n(2))}
	if typ == "nclx" {
		c.FullRange = f.n(1)&0x80 != 0
	}
	if f.err != nil {
		return nil, fmt.Errorf("colr: %w", f.err)
	}
	return c, nil
}

// hdr names a transfer characteristic that is HDR: 16 is SMPTE ST 2084
// (PQ), 18 ARIB STD-B67 (HLG).
func hdr(transfer int) Transfer {
	switch transfer {
	case 16:
		return PQ
	case 18:
		return HLG
	}
	return ""
}
