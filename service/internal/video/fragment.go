package video

import (
	"errors"
	"fmt"
)

// Track fragment header flags (ISO/IEC 14496-12, 8.8.7) and track run
// flags (8.8.8).
const (
	tfhdBaseOffset      = 0x000001
	tfhdDescription     = 0x000002
	tfhdDuration        = 0x000008
	tfhdSize            = 0x000010
	tfhdFlags           = 0x000020
	tfhdDefaultBaseMoof = 0x020000

	trunDataOffset = 0x001
	trunFirstFlags = 0x004
	trunDuration   = 0x100
	trunSize       = 0x200
	trunFlags      = 0x400
	trunCTS        = 0x800

	// A sample that is not a sync sample, or that depends on others: not
	// a keyframe (ffmpeg's reading of sample_flags).
	notKey = 0x00010000 | 0x01000000
)

// readMoof appends a movie fragment's samples of the picture track. The
// other tracks' runs are read too, for their sizes: a run without a data
// offset starts where the one before it ended.
func (t *mp4Track) readMoof(moof box) error {
	kids, err := children(moof.body, moof.at+moof.head)
	if err != nil {
		return err
	}
	implicit := moof.at // the first traf's data starts at the moof's first byte
	for _, traf := range kids {
		if traf.typ != "traf" {
			continue
		}
		if implicit, err = t.readTraf(moof, traf, implicit); err != nil {
			return err
		}
	}
	return nil
}

// readTraf reads one track fragment whose data, without an explicit
// base, starts at implicit; it returns where its data ends.
func (t *mp4Track) readTraf(moof, traf box, implicit int64) (int64, error) {
	kids, err := children(traf.body, traf.at+traf.head)
	if err != nil {
		return 0, fmt.Errorf("traf: %w", err)
	}
	tfhd, ok := first(kids, "tfhd")
	if !ok {
		return 0, errors.New("a traf without tfhd")
	}
	_, flags, f := full(tfhd)
	id := uint32(f.n(4))
	d, ok := t.defaults[id]
	if !ok {
		return 0, fmt.Errorf("a fragment of track %d, which has no trex", id)
	}
	base := implicit
	switch {
	case flags&tfhdBaseOffset != 0:
		base = int64(f.n(8))
	case flags&tfhdDefaultBaseMoof != 0:
		base = moof.at
	}
	if flags&tfhdDescription != 0 {
		if desc := f.n(4); desc != 1 && id == t.id {
			return 0, fmt.Errorf("%w: a fragment of sample description %d", ErrNotServed, desc)
		}
	}
	if flags&tfhdDuration != 0 {
		d.duration = uint32(f.n(4))
	}
	if flags&tfhdSize != 0 {
		d.size = uint32(f.n(4))
	}
	if flags&tfhdFlags != 0 {
		d.flags = uint32(f.n(4))
	}
	if f.err != nil || base < 0 || base > 1<<62 {
		return 0, errors.New("tfhd: malformed")
	}
	mine := id == t.id
	if tfdt, ok := first(kids, "tfdt"); ok && mine {
		v, _, f := full(tfdt)
		dts := int64(f.n(map[bool]int{true: 8, false: 4}[v == 1]))
		if f.err != nil || dts < 0 || dts > 1<<56 {
			return 0, errors.New("tfdt: malformed")
		}
		if n := len(t.dts); n > 0 && dts <= t.dts[n-1] {
			return 0, fmt.Errorf("a fragment decoded at %d, not after the sample before it (%d)", dts, t.dts[n-1])
		}
		t.nextDTS = dts
	}
	end, runs := base, 0
	for _, trun := range kids {
		if trun.typ != "trun" {
			continue
		}
		if end, err = t.readTrun(trun, base, end, runs, d, mine); err != nil {
			return 0, err
		}
		runs++
	}
	return end, nil
}

// readTrun reads a track run whose data, without a data offset, starts
// at from (the run before it is the runs-th of its traf).
func (t *mp4Track) readTrun(trun box, base, from int64, runs int, d trex, mine bool) (int64, error) {
	_, flags, f := full(trun)
	n := f.n(4)
	off := from
	if flags&trunDataOffset != 0 {
		off = base + int64(int32(f.n(4)))
	} else if runs > 0 {
		// The specification continues after the run before; ffmpeg
		// starts again at the base. Refused rather than guessed.
		return 0, fmt.Errorf("%w: a track run without a data offset after another", ErrNotServed)
	}
	firstFlags, hasFirst := uint32(0), flags&trunFirstFlags != 0
	if hasFirst {
		firstFlags = uint32(f.n(4))
	}
	per := 0
	for _, bit := range []uint32{trunDuration, trunSize, trunFlags, trunCTS} {
		if flags&bit != 0 {
			per += 4
		}
	}
	if f.err != nil || per > 0 && n > uint64(f.left()/per) || mine && per == 0 && n > uint64(t.limits.Samples) {
		return 0, fmt.Errorf("trun: %d samples in %d bytes", n, len(trun.body))
	}
	if mine && n > uint64(t.limits.Samples-len(t.sizes)) {
		return 0, fmt.Errorf("%w: more than %d samples", ErrLimit, t.limits.Samples)
	}
	if off < 0 {
		return 0, fmt.Errorf("trun: data at %d", off)
	}
	if !mine && flags&trunSize == 0 {
		// Another track's run of samples of one size: only its end.
		if d.size > 0 && n > uint64((t.fileSize-off)/int64(d.size)) || off > t.fileSize {
			return 0, fmt.Errorf("a fragment's %d samples of %d bytes at %d, past the file's end at %d", n, d.size, off, t.fileSize)
		}
		return off + int64(n)*int64(d.size), f.err
	}
	for i := range n {
		dur, size, sflags, cts := d.duration, d.size, d.flags, int32(0)
		if flags&trunDuration != 0 {
			dur = uint32(f.n(4))
		}
		if flags&trunSize != 0 {
			size = uint32(f.n(4))
		}
		if i == 0 && hasFirst {
			sflags = firstFlags
		}
		if flags&trunFlags != 0 {
			sflags = uint32(f.n(4))
		}
		if flags&trunCTS != 0 {
			cts = int32(f.n(4))
		}
		if mine && size == 0 {
			return 0, errors.New("a fragment's sample of 0 bytes")
		}
		if off > t.fileSize || int64(size) > t.fileSize-off {
			return 0, fmt.Errorf("a fragment's sample of %d bytes at %d, past the file's end at %d", size, off, t.fileSize)
		}
		if mine {
			t.offsets, t.sizes = append(t.offsets, off), append(t.sizes, size)
			t.dts, t.cts = append(t.dts, t.nextDTS), append(t.cts, cts)
			t.sync = append(t.sync, sflags&notKey == 0)
			t.nextDTS += int64(dur)
		}
		off += int64(size)
	}
	return off, f.err
}
