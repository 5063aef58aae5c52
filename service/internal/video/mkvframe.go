package video

import (
	"errors"
	"fmt"
	"math"
)

// Top-level elements that end a cluster of unknown size (RFC 9559, 6.2).
const (
	idTags        = 0x1254C367
	idChapters    = 0x1043A770
	idAttachments = 0x1941A469
)

func topLevel(id uint32) bool {
	switch id {
	case idCluster, idCues, idSeekHead, idInfo, idTracks, idTags, idChapters, idAttachments, idEBML, idSegment:
		return true
	}
	return false
}

// maxReorder is how many frames presented after a time may be decoded
// before the last frame presented at or before it: an H.264 or HEVC
// decoder's picture buffer holds at most 16.
const maxReorder = 16

// walker reads the picture track's blocks in decode order, cluster after
// cluster, from a cluster's position.
type walker struct {
	m          *mkvFile
	src        *source
	pos        int64 // the next element
	inCluster  bool
	clusterEnd int64 // -1: a cluster of unknown size, ended by a top-level element
	time       int64 // the cluster's Timestamp, -1 before it is read
	clusters   int
	elements   int // headers read, bounded by the limit on boxes
}

// next is the picture track's next block; ok is false at the segment's end.
func (w *walker) next() (p Packet, ok bool, err error) {
	for w.pos < w.m.segEnd {
		if w.inCluster && w.clusterEnd >= 0 && w.pos >= w.clusterEnd {
			w.inCluster = false
		}
		end := w.m.segEnd
		if w.inCluster && w.clusterEnd >= 0 {
			end = w.clusterEnd
		}
		if w.elements == w.m.lim.Boxes {
			return p, false, fmt.Errorf("%w: more than %d elements walked", ErrLimit, w.m.lim.Boxes)
		}
		w.elements++
		h, err := fileHead(w.src, w.pos, end)
		if err != nil {
			return p, false, err
		}
		if !w.inCluster || w.clusterEnd < 0 && topLevel(h.id) {
			w.inCluster = false
			if h.id == idCluster {
				if w.clusters == w.m.lim.Clusters {
					return p, false, fmt.Errorf("%w: more than %d clusters walked", ErrLimit, w.m.lim.Clusters)
				}
				w.clusters++
				w.inCluster, w.clusterEnd, w.time, w.pos = true, -1, -1, h.dataAt
				if h.size >= 0 {
					w.clusterEnd = h.end()
				}
				continue
			}
			if h.size < 0 {
				return p, false, fmt.Errorf("a top-level element 0x%X of unknown size", h.id)
			}
			w.pos = h.end()
			continue
		}
		if h.size < 0 {
			return p, false, fmt.Errorf("a cluster's element 0x%X of unknown size", h.id)
		}
		w.pos = h.end()
		switch h.id {
		case idTimestamp:
			b, err := w.src.read(h.dataAt, h.size, headerAhead)
			if err != nil {
				return p, false, err
			}
			t, err := ebmlUint(b)
			if err != nil || t > 1<<53 {
				return p, false, errors.Join(fmt.Errorf("a cluster's Timestamp of %d", t), err)
			}
			w.time = int64(t)
		case idSimpleBlock, idBlockGroup:
			if w.time < 0 {
				return p, false, errors.New("a block before its cluster's Timestamp")
			}
			p, mine, err := w.block(h)
			if err != nil || mine {
				return p, mine, err
			}
		}
	}
	return p, false, nil
}

// block reads a SimpleBlock or a BlockGroup; mine says it is the picture
// track's. Another track's SimpleBlock is read only as far as its header.
func (w *walker) block(h ehead) (Packet, bool, error) {
	var p Packet
	if h.id == idSimpleBlock {
		head, err := w.src.read(h.dataAt, min(h.size, maxHead), readAhead)
		if err != nil {
			return p, false, err
		}
		track, _, _, _, err := blockHeader(head)
		if err != nil || track != w.m.track {
			return p, false, err
		}
		b, err := w.src.read(h.dataAt, h.size, readAhead)
		if err != nil {
			return p, false, err
		}
		_, rel, flags, n, _ := blockHeader(b)
		return w.packet(b[n:], h.dataAt+int64(n), rel, flags, flags&0x80 != 0)
	}
	b, err := w.src.read(h.dataAt, h.size, readAhead)
	if err != nil {
		return p, false, err
	}
	es, err := elements(b)
	if err != nil {
		return p, false, fmt.Errorf("a BlockGroup: %w", err)
	}
	block, ok := child(es, idBlock)
	if !ok {
		return p, false, errors.New("a BlockGroup without a Block")
	}
	track, rel, flags, n, err := blockHeader(block.data)
	if err != nil || track != w.m.track {
		return p, false, err
	}
	_, referring := child(es, idReferenceBlock)
	return w.packet(block.data[n:], h.dataAt+block.dataAt+int64(n), rel, flags, !referring)
}

// packet is a block of the picture track as a Packet; its data is what
// was read.
func (w *walker) packet(data []byte, at int64, rel int16, flags byte, key bool) (Packet, bool, error) {
	if flags&0x06 != 0 {
		return Packet{}, false, fmt.Errorf("%w: a laced video block", ErrNotServed)
	}
	if len(data) == 0 {
		return Packet{}, false, errors.New("an empty video block")
	}
	pts := w.time + int64(rel)
	return Packet{Offset: at, Size: int64(len(data)), PTS: pts, DTS: pts, Key: key, Data: data}, true, nil
}

// blockHeader reads a block's header (RFC 9559, 10.1): its track number,
// its timestamp relative to the cluster's, its flags; n is its length.
func blockHeader(b []byte) (track uint64, rel int16, flags byte, n int, err error) {
	n, _, track, _, err = vint(b, 0, 8)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("a block's track number: %w", err)
	}
	if n+3 > len(b) {
		return 0, 0, 0, 0, errors.New("a block header cut short")
	}
	return track, int16(uint16(b[n])<<8 | uint16(b[n+1])), b[n+2], n + 3, nil
}

// frameAt finds the frame presented at t: from the cluster of the last
// cue point at or before t (or, without cues, of the last cluster that
// starts at or before it, found by hopping over clusters), the picture
// track's blocks are read in decode order until none later can be
// presented at or before t; when no keyframe comes before the frame, the
// walk starts again one cue (or one cluster) earlier.
func (m *mkvFile) frameAt(src *source, at float64) (Frame, error) {
	tb := TimeBase{Num: m.scale, Den: 1_000_000_000}
	target := int64(math.Floor(at * 1e9 / float64(m.scale)))
	starts, err := m.starts(src, target)
	if err != nil {
		return Frame{}, err
	}
	for try, start := range starts {
		packets, err := m.scan(src, start, target)
		if err != nil {
			return Frame{}, err
		}
		if len(packets) == 0 {
			return Frame{}, errors.New("no video block")
		}
		shown := presented(len(packets), func(i int) (int64, bool) { return packets[i].PTS, true }, target)
		f, err := frameFrom(func(i int) Packet { return packets[i] }, shown, tb)
		if err == nil || try == len(starts)-1 {
			return f, err
		}
	}
	return Frame{}, errors.New("no cluster to read")
}

// maxRetries bounds the earlier starts tried when a walk finds no
// keyframe before the frame.
const maxRetries = 4

// starts are the clusters to walk from, latest first.
func (m *mkvFile) starts(src *source, target int64) ([]int64, error) {
	var out []int64
	if len(m.cues) > 0 {
		for i := len(m.cues) - 1; i >= 0 && len(out) < maxRetries; i-- {
			if m.cues[i].time <= target && (len(out) == 0 || m.cues[i].cluster != out[len(out)-1]) {
				out = append(out, m.cues[i].cluster)
			}
		}
		if len(out) == 0 {
			if m.firstCluster >= 0 {
				return []int64{m.firstCluster}, nil
			}
			return []int64{m.cues[0].cluster}, nil
		}
		return out, nil
	}
	// No cues: hop over the clusters by their sizes, reading each one's
	// Timestamp, up to the first that starts after the target.
	var hops []int64
	for at, n := m.firstCluster, 0; at >= 0 && at < m.segEnd; n++ {
		if n == m.lim.Clusters {
			return nil, fmt.Errorf("%w: more than %d clusters walked", ErrLimit, m.lim.Clusters)
		}
		h, err := fileHead(src, at, m.segEnd)
		if err != nil {
			return nil, err
		}
		if h.id != idCluster {
			if h.size < 0 {
				break
			}
			at = h.end()
			continue
		}
		t, err := clusterTime(src, h)
		if err != nil {
			return nil, err
		}
		if t > target && len(hops) > 0 {
			break
		}
		hops = append(hops, at)
		if h.size < 0 {
			break // a cluster of unknown size: walked from here
		}
		at = h.end()
	}
	for i := len(hops) - 1; i >= 0 && len(out) < maxRetries; i-- {
		out = append(out, hops[i])
	}
	if len(out) == 0 {
		return nil, errors.New("no cluster")
	}
	return out, nil
}

// clusterTime reads a cluster's Timestamp, which comes before its blocks.
func clusterTime(src *source, cluster ehead) (int64, error) {
	end := cluster.end()
	if cluster.size < 0 {
		end = -1
	}
	for at, n := cluster.dataAt, 0; n < 8; n++ {
		h, err := fileHead(src, at, end)
		if err != nil {
			return 0, err
		}
		if h.size < 0 {
			break
		}
		if h.id == idTimestamp {
			b, err := src.read(h.dataAt, h.size, headerAhead)
			if err != nil {
				return 0, err
			}
			t, err := ebmlUint(b)
			if err != nil || t > 1<<53 {
				return 0, errors.Join(fmt.Errorf("a cluster's Timestamp of %d", t), err)
			}
			return int64(t), nil
		}
		if h.id == idSimpleBlock || h.id == idBlockGroup {
			break
		}
		at = h.end()
	}
	return 0, fmt.Errorf("a cluster at %d without a Timestamp before its blocks", cluster.at)
}

// scan reads the picture track's blocks from the cluster at start until
// none later can be presented at or before target: for VP8, VP9 and AV1
// (presented in decode order) the first after it; for H.264 and HEVC,
// maxReorder in a row after it.
func (m *mkvFile) scan(src *source, start, target int64) ([]Packet, error) {
	w := &walker{m: m, src: src, pos: start}
	var out []Packet
	after := 0
	for {
		p, ok, err := w.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if len(out) == m.lim.Samples {
			return nil, fmt.Errorf("%w: more than %d frames read for one", ErrLimit, m.lim.Samples)
		}
		if p.PTS > target {
			if !m.reorders && len(out) > 0 {
				return out, nil
			}
			after++
		} else {
			after = 0
		}
		out = append(out, p)
		if after >= maxReorder {
			return out, nil
		}
	}
}
