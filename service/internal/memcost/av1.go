package memcost

import (
	"errors"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// An AV1 track's colour may be said only by its sequence header (the OBU
// in its av1C's configOBUs): colour primaries, transfer, matrix and range,
// with no colr box (link-u's star sequences). libheif decodes the frame by
// it; the look reads it too, so that the engine converts the primaries of
// a wide-gamut sequence (fromNCLX) as it does a still image's colr.

// bits reads an AV1 bitstream's fields, most significant bit first,
// remembering the first read past the end.
type bits struct {
	b   []byte
	n   int // bits read
	err error
}

func (r *bits) f(n int) uint32 {
	var v uint32
	for range n {
		if r.n >= 8*len(r.b) {
			r.err = errors.New("an AV1 sequence header cut short")
			return 0
		}
		v = v<<1 | uint32(r.b[r.n/8]>>(7-r.n%8)&1)
		r.n++
	}
	return v
}

// uvlc is AV1's variable-length code (spec 4.10.3).
func (r *bits) uvlc() uint32 {
	zeros := 0
	for r.f(1) == 0 && r.err == nil {
		if zeros++; zeros >= 32 {
			return 1<<32 - 1
		}
	}
	return r.f(zeros) + (1<<zeros - 1)
}

// av1Colour reads the colour config of the first sequence header OBU in
// obus (an av1C box's configOBUs, or a temporal unit: a sample): ok is
// false when there is none there or it cannot be read.
func av1Colour(obus []byte) (thumbjob.NCLX, bool) {
	for n := 0; len(obus) >= 2 && n < 16; n++ {
		header := obus[0]
		typ, hasExt, hasSize := header>>3&15, header>>2&1 == 1, header>>1&1 == 1
		p := 1
		if hasExt {
			p++
		}
		size := len(obus) - p
		if hasSize { // leb128
			size = 0
			for i := 0; ; i++ {
				if p >= len(obus) || i == 8 {
					return thumbjob.NCLX{}, false
				}
				size |= int(obus[p]&0x7f) << (7 * i)
				p++
				if obus[p-1]&0x80 == 0 {
					break
				}
			}
		}
		if size < 0 || size > len(obus)-p {
			return thumbjob.NCLX{}, false
		}
		if typ == 1 { // OBU_SEQUENCE_HEADER
			return sequenceColour(obus[p : p+size])
		}
		obus = obus[p+size:]
	}
	return thumbjob.NCLX{}, false
}

// sequenceColour reads sequence_header_obu (AV1 spec 5.5) up to its
// color_config.
func sequenceColour(b []byte) (thumbjob.NCLX, bool) {
	r := &bits{b: b}
	profile := r.f(3)
	r.f(1) // still_picture
	reduced := r.f(1) == 1
	if reduced {
		r.f(5) // seq_level_idx[0]
	} else {
		decoderModel, delayLength := false, 0
		if r.f(1) == 1 { // timing_info_present_flag
			r.f(32) // num_units_in_display_tick
			r.f(32) // time_scale
			if r.f(1) == 1 {
				r.uvlc() // num_ticks_per_picture_minus_1
			}
			if decoderModel = r.f(1) == 1; decoderModel {
				delayLength = int(r.f(5)) + 1
				r.f(32) // num_units_in_decoding_tick
				r.f(5)  // buffer_removal_time_length_minus_1
				r.f(5)  // frame_presentation_time_length_minus_1
			}
		}
		initialDelay := r.f(1) == 1
		for range r.f(5) + 1 { // operating points
			r.f(12) // operating_point_idc
			if r.f(5) > 7 {
				r.f(1) // seq_tier
			}
			if decoderModel && r.f(1) == 1 {
				r.f(delayLength) // decoder_buffer_delay
				r.f(delayLength) // encoder_buffer_delay
				r.f(1)           // low_delay_mode_flag
			}
			if initialDelay && r.f(1) == 1 {
				r.f(4) // initial_display_delay_minus_1
			}
			if r.err != nil {
				return thumbjob.NCLX{}, false
			}
		}
	}
	wbits, hbits := int(r.f(4))+1, int(r.f(4))+1
	r.f(wbits)                   // max_frame_width_minus_1
	r.f(hbits)                   // max_frame_height_minus_1
	if !reduced && r.f(1) == 1 { // frame_id_numbers_present_flag
		r.f(4) // delta_frame_id_length_minus_2
		r.f(3) // additional_frame_id_length_minus_1
	}
	r.f(3) // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
	if !reduced {
		r.f(4) // interintra, masked compound, warped motion, dual filter
		orderHint := r.f(1) == 1
		if orderHint {
			r.f(2) // enable_jnt_comp, enable_ref_frame_mvs
		}
		forceScreen := uint32(2)
		if r.f(1) == 0 { // seq_choose_screen_content_tools
			forceScreen = r.f(1)
		}
		if forceScreen > 0 && r.f(1) == 0 { // seq_choose_integer_mv
			r.f(1) // seq_force_integer_mv
		}
		if orderHint {
			r.f(3) // order_hint_bits_minus_1
		}
	}
	r.f(3) // enable_superres, enable_cdef, enable_restoration
	// color_config
	if high := r.f(1) == 1; profile == 2 && high {
		r.f(1) // twelve_bit
	}
	mono := false
	if profile != 1 {
		mono = r.f(1) == 1
	}
	c := thumbjob.NCLX{Primaries: 2, Transfer: 2, Matrix: 2}
	if r.f(1) == 1 { // color_description_present_flag
		c.Primaries, c.Transfer, c.Matrix = int(r.f(8)), int(r.f(8)), int(r.f(8))
	}
	switch {
	case !mono && c.Primaries == 1 && c.Transfer == 13 && c.Matrix == 0: // sRGB, identity matrix
		c.FullRange = true
	default:
		c.FullRange = r.f(1) == 1
	}
	if r.err != nil {
		return thumbjob.NCLX{}, false
	}
	return c, true
}
