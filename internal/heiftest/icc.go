package heiftest

import "encoding/binary"

// DisplayP3 returns an ICC v4 display profile of Display P3, the colour
// space of iPhone photos: DCI-P3 primaries, the D65 white and the sRGB
// tone curve. Debian ships no P3 profile (colord-data and
// icc-profiles-free have Adobe RGB and wide-gamut RGB), so it is built
// here, as a matrix/TRC profile: the primaries adapted to ICC's D50 with
// the Bradford transform (the chad tag), the values Apple's own Display
// P3 profile carries.
func DisplayP3() []byte {
	xyz := func(x, y, z float64) []byte { return append([]byte("XYZ \x00\x00\x00\x00"), s15(x, y, z)...) }
	mluc := func(s string) []byte {
		b := []byte("mluc\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0cenUS")
		b = binary.BigEndian.AppendUint32(b, uint32(2*len(s)))
		b = binary.BigEndian.AppendUint32(b, 28)
		for _, r := range s { // ASCII, as UTF-16BE
			b = append(b, 0, byte(r))
		}
		return b
	}
	// The sRGB curve: Y = (aX+b)^g for X >= d, else cX.
	trc := append([]byte("para\x00\x00\x00\x00\x00\x03\x00\x00"), s15(2.4, 1/1.055, 0.055/1.055, 1/12.92, 0.04045)...)
	tags := []struct {
		sig  string
		data []byte
	}{
		{"desc", mluc("Display P3")},
		{"cprt", mluc("No copyright, use freely")},
		{"wtpt", xyz(0.964203, 1, 0.824905)},
		{"chad", append([]byte("sf32\x00\x00\x00\x00"), s15(
			1.047882, 0.022919, -0.050217,
			0.029587, 0.990479, -0.017075,
			-0.009232, 0.015076, 0.751678)...)},
		{"rXYZ", xyz(0.515102, 0.241182, -0.001050)},
		{"gXYZ", xyz(0.291965, 0.692236, 0.041882)},
		{"bXYZ", xyz(0.157103, 0.066582, 0.784073)},
		{"rTRC", trc}, {"gTRC", trc}, {"bTRC", trc}, // one curve, stored once
	}

	table := binary.BigEndian.AppendUint32(nil, uint32(len(tags)))
	var data []byte
	start := 128 + 4 + 12*len(tags)
	offsets := map[string]int{}
	for _, t := range tags {
		off, ok := offsets[string(t.data)]
		if !ok {
			for len(data)%4 != 0 {
				data = append(data, 0)
			}
			off = start + len(data)
			offsets[string(t.data)] = off
			data = append(data, t.data...)
		}
		table = append(table, t.sig...)
		table = binary.BigEndian.AppendUint32(table, uint32(off))
		table = binary.BigEndian.AppendUint32(table, uint32(len(t.data)))
	}
	for len(data)%4 != 0 {
		data = append(data, 0)
	}

	h := make([]byte, 128)
	binary.BigEndian.PutUint32(h, uint32(start+len(data)))
	binary.BigEndian.PutUint32(h[8:], 0x04300000) // version 4.3
	copy(h[12:], "mntrRGB XYZ ")
	for i, v := range []uint16{2026, 1, 1} { // the date: fixed, so the profile is too
		binary.BigEndian.PutUint16(h[24+2*i:], v)
	}
	copy(h[36:], "acsp")
	copy(h[68:], s15(0.964203, 1, 0.824905)) // the PCS illuminant, D50
	return append(append(h, table...), data...)
}

// s15 encodes s15Fixed16Numbers.
func s15(v ...float64) []byte {
	var b []byte
	for _, f := range v {
		n := f * 65536
		if n < 0 {
			n -= 0.5
		} else {
			n += 0.5
		}
		b = binary.BigEndian.AppendUint32(b, uint32(int32(n)))
	}
	return b
}
