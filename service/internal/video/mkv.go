package video

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// mkvFile is what a Matroska or WebM file's header says that finding a
// frame needs: where the segment's data and its first cluster are, the
// timestamp scale, the picture track's number, and its cue points.
type mkvFile struct {
	segAt, segEnd int64 // the Segment's data; segEnd the file's end for an unknown size
	firstCluster  int64 // -1: none seen
	scale         int64 // TimestampScale, nanoseconds a tick
	track         uint64
	reorders      bool // H.264 and HEVC: decode order is not presentation order
	cues          []cue
	lim           Limits
}

// cue is a cue point of the picture track: a keyframe's time (ticks) and
// its cluster's position in the file. (CueRelativePosition is not used:
// a cluster is read from its start, which a lying cue cannot misplace.)
type cue struct {
	time, cluster int64
}

// mkvCodecs maps the CodecIDs thumbd decodes to their codecs.
var mkvCodecs = map[string]Codec{
	"V_MPEG4/ISO/AVC": H264, "V_MPEGH/ISO/HEVC": HEVC, "V_VP8": VP8, "V_VP9": VP9, "V_AV1": AV1,
}

// openMatroska reads the EBML header, then the Segment's top-level
// elements up to its first cluster (SeekHead, Info, Tracks, and Cues
// when they come first), then what the SeekHead points to that is still
// missing (Cues are usually at the end).
func openMatroska(src *source, lim Limits) (*mkvFile, Info, error) {
	var info Info
	head, err := fileHead(src, 0, -1)
	if err != nil || head.id != idEBML {
		return nil, info, errors.Join(errors.New("no EBML header"), err)
	}
	kids, err := readElement(src, head)
	if err != nil {
		return nil, info, fmt.Errorf("the EBML header: %w", err)
	}
	if info.Container, err = ebmlHeader(kids); err != nil {
		return nil, info, err
	}
	seg, err := fileHead(src, head.end(), -1)
	if err != nil || seg.id != idSegment {
		return nil, info, errors.Join(errors.New("no Segment after the EBML header"), err)
	}
	m := &mkvFile{segAt: seg.dataAt, segEnd: src.size, firstCluster: -1, scale: 1_000_000, lim: lim}
	if seg.size >= 0 {
		m.segEnd = seg.end()
	}
	found := map[uint32][]element{}
	seeks := map[uint32]int64{}
	for off, n := seg.dataAt, 0; off < m.segEnd; n++ {
		if n == lim.Boxes {
			return nil, info, fmt.Errorf("%w: more than %d top-level elements", ErrLimit, lim.Boxes)
		}
		h, err := fileHead(src, off, m.segEnd)
		if err != nil {
			return nil, info, err
		}
		if h.id == idCluster {
			m.firstCluster = off
			break
		}
		if h.size < 0 {
			return nil, info, fmt.Errorf("a top-level element 0x%X of unknown size", h.id)
		}
		switch h.id {
		case idSeekHead, idInfo, idTracks, idCues:
			if _, seen := found[h.id]; seen {
				break // ffmpeg reads the first of each
			}
			es, err := readElement(src, h)
			if err != nil {
				return nil, info, fmt.Errorf("element 0x%X: %w", h.id, err)
			}
			found[h.id] = es
			if h.id == idSeekHead {
				if err := m.readSeekHead(es, seeks); err != nil {
					return nil, info, err
				}
			}
		}
		off = h.end()
	}
	for _, id := range []uint32{idInfo, idTracks, idCues} {
		at, ok := seeks[id]
		if _, have := found[id]; have || !ok {
			continue
		}
		h, err := fileHead(src, at, m.segEnd)
		if err != nil || h.id != id || h.size < 0 {
			return nil, info, errors.Join(fmt.Errorf("the SeekHead's element 0x%X is not at %d", id, at), err)
		}
		if found[id], err = readElement(src, h); err != nil {
			return nil, info, fmt.Errorf("element 0x%X: %w", id, err)
		}
	}
	if _, ok := found[idInfo]; !ok {
		return nil, info, errors.New("no Info element")
	}
	if _, ok := found[idTracks]; !ok {
		return nil, info, errors.New("no Tracks element")
	}
	if err := m.readInfo(found[idInfo], &info); err != nil {
		return nil, info, err
	}
	if err := m.readTracks(found[idTracks], &info); err != nil {
		return nil, info, err
	}
	if cues, ok := found[idCues]; ok {
		if err := m.readCues(cues, &info); err != nil {
			return nil, info, err
		}
	}
	if m.firstCluster < 0 && len(m.cues) == 0 {
		return nil, info, errors.New("no cluster")
	}
	return m, info, nil
}

// ebmlHeader checks what ffmpeg's demuxer checks of the EBML header and
// names the container by its DocType.
func ebmlHeader(kids []element) (Container, error) {
	// Each value, its default in place until read.
	v := map[uint32]uint64{idEBMLReadVersion: 1, idEBMLMaxIDLength: 4, idEBMLMaxSizeLength: 8, idDocTypeReadVersion: 1}
	for id, def := range v {
		var err error
		if v[id], err = uintChild(kids, id, def); err != nil {
			return "", err
		}
	}
	if v[idEBMLReadVersion] > 1 || v[idEBMLMaxIDLength] > 4 || v[idEBMLMaxSizeLength] > 8 || v[idDocTypeReadVersion] > 3 {
		return "", fmt.Errorf("%w: EBML read version %d, IDs of %d bytes, sizes of %d, DocType read version %d",
			ErrNotServed, v[idEBMLReadVersion], v[idEBMLMaxIDLength], v[idEBMLMaxSizeLength], v[idDocTypeReadVersion])
	}
	d, _ := child(kids, idDocType)
	switch ebmlString(d.data) {
	case "webm":
		return WebM, nil
	case "matroska":
		return Matroska, nil
	}
	return "", fmt.Errorf("a DocType of %q", ebmlString(d.data))
}

// readSeekHead reads the positions the SeekHead gives (relative to the
// segment's data), each checked against the segment.
func (m *mkvFile) readSeekHead(kids []element, seeks map[uint32]int64) error {
	for _, s := range kids {
		if s.id != idSeek {
			continue
		}
		es, err := elements(s.data)
		if err != nil {
			return fmt.Errorf("a Seek: %w", err)
		}
		id, _ := child(es, idSeekID)
		pos, err := uintChild(es, idSeekPosition, math.MaxUint64)
		if err != nil || len(id.data) == 0 || len(id.data) > 4 {
			return errors.Join(errors.New("a Seek without its ID or position"), err)
		}
		target, _ := ebmlUint(id.data)
		if pos >= uint64(m.segEnd-m.segAt) {
			return fmt.Errorf("a Seek to %d, past the segment's end", pos)
		}
		if _, ok := seeks[uint32(target)]; !ok {
			seeks[uint32(target)] = m.segAt + int64(pos)
		}
	}
	return nil
}

// readInfo reads the timestamp scale and the duration.
func (m *mkvFile) readInfo(kids []element, info *Info) error {
	scale, err := uintChild(kids, idTimestampScale, 1_000_000)
	if err != nil {
		return err
	}
	if scale == 0 || scale > 1_000_000_000 {
		return fmt.Errorf("a TimestampScale of %d", scale)
	}
	m.scale = int64(scale)
	d, err := floatChild(kids, idDuration, 0)
	if err != nil {
		return err
	}
	if d < 0 || d*float64(scale) > 1e9*1e9 {
		return fmt.Errorf("a Duration of %v", d)
	}
	info.Duration = d * float64(scale) / 1e9
	info.TimeBase = TimeBase{Num: m.scale, Den: 1_000_000_000}
	return nil
}

// readTracks reads the first video track (the first enabled and default
// one, else the first) and whether there is audio.
func (m *mkvFile) readTracks(kids []element, info *Info) error {
	type entry struct {
		es    []element
		index int
	}
	var videos []entry
	tracks := 0
	for _, e := range kids {
		if e.id != idTrackEntry {
			continue
		}
		if tracks == m.lim.Tracks {
			return fmt.Errorf("%w: more than %d tracks", ErrLimit, m.lim.Tracks)
		}
		tracks++
		es, err := elements(e.data)
		if err != nil {
			return fmt.Errorf("a TrackEntry: %w", err)
		}
		typ, err := uintChild(es, idTrackType, 0)
		if err != nil {
			return err
		}
		switch typ {
		case 1:
			videos = append(videos, entry{es, tracks - 1})
		case 2:
			info.Audio = true
		}
	}
	if len(videos) == 0 {
		return errors.New("no video track")
	}
	picked := videos[0]
	for _, v := range videos {
		enabled, err1 := uintChild(v.es, idFlagEnabled, 1)
		def, err2 := uintChild(v.es, idFlagDefault, 1)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if enabled == 1 && def == 1 {
			picked = v
			break
		}
	}
	info.Track = picked.index
	return m.readVideo(picked.es, info)
}

// readVideo reads the picture track's entry.
func (m *mkvFile) readVideo(es []element, info *Info) error {
	var err error
	if m.track, err = uintChild(es, idTrackNumber, 0); err != nil || m.track == 0 {
		return errors.Join(errors.New("a video track without its number"), err)
	}
	id, _ := child(es, idCodecID)
	info.Tag = ebmlString(id.data)
	codec, ok := mkvCodecs[info.Tag]
	if !ok {
		return fmt.Errorf("%w: a video coded as %q", ErrNotServed, info.Tag)
	}
	info.Codec = codec
	m.reorders = codec == H264 || codec == HEVC
	if _, ok := child(es, idContentEncodings); ok {
		// Compressed (header stripping, zlib) or encrypted frames:
		// ffmpeg would rebuild them, thumbd hands frames over as stored.
		return fmt.Errorf("%w: a track with content encodings", ErrNotServed)
	}
	if scale, err := floatChild(es, idTrackTimestampScale, 1); err != nil || scale != 1 {
		return errors.Join(fmt.Errorf("%w: a TrackTimestampScale of %v", ErrNotServed, scale), err)
	}
	if d, err := uintChild(es, idDefaultDuration, 0); err != nil {
		return err
	} else if d > 0 {
		info.FrameRate = 1e9 / float64(d)
	}
	ve, ok := child(es, idVideo)
	if !ok {
		return errors.New("a video track without its Video element")
	}
	video, err := elements(ve.data)
	if err != nil {
		return fmt.Errorf("Video: %w", err)
	}
	if err := readPicture(video, info); err != nil {
		return err
	}
	priv, _ := child(es, idCodecPrivate)
	var s stream
	if codec == VP9 {
		s, err = vp9Private(priv.data)
	} else {
		s, err = configuration(codec, priv.data)
	}
	if err != nil {
		return err
	}
	if codec != VP8 && codec != VP9 && len(priv.data) > 0 {
		info.Extradata = priv.data
	}
	s.into(info)
	info.HDR = hdr(info.Colour.Transfer)
	return displaySize(info)
}

// readPicture reads the Video element: the sizes, the colour, the
// projection's rotation.
func readPicture(video []element, info *Info) error {
	w, err1 := uintChild(video, idPixelWidth, 0)
	h, err2 := uintChild(video, idPixelHeight, 0)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if w == 0 || h == 0 || w > 1<<16 || h > 1<<16 {
		return fmt.Errorf("a video of %dx%d pixels", w, h)
	}
	info.Width, info.Height = int(w), int(h)
	for _, id := range []uint32{idPixelCropTop, idPixelCropBottom, idPixelCropLeft, idPixelCropRight} {
		if c, err := uintChild(video, id, 0); err != nil || c != 0 {
			return errors.Join(fmt.Errorf("%w: a cropped video", ErrNotServed), err)
		}
	}
	dw, err1 := uintChild(video, idDisplayWidth, w)
	dh, err2 := uintChild(video, idDisplayHeight, h)
	unit, err3 := uintChild(video, idDisplayUnit, 0)
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	info.SampleAspect = [2]int{1, 1}
	if unit < 4 && dw > 0 && dh > 0 && dw < 1<<20 && dh < 1<<20 && dw*h != dh*w {
		info.SampleAspect = ratio(int64(dw*h), int64(dh*w))
	}
	if ce, ok := child(video, idColour); ok {
		colour, err := elements(ce.data)
		if err != nil {
			return fmt.Errorf("Colour: %w", err)
		}
		if err := readColour(colour, info); err != nil {
			return err
		}
	} else {
		info.Colour = Colour{Primaries: 2, Transfer: 2, Matrix: 2}
	}
	if pe, ok := child(video, idProjection); ok {
		proj, err := elements(pe.data)
		if err != nil {
			return fmt.Errorf("Projection: %w", err)
		}
		typ, err := uintChild(proj, idProjectionType, 0)
		if err != nil {
			return err
		}
		yaw, err1 := floatChild(proj, idProjectionPoseYaw, 0)
		pitch, err2 := floatChild(proj, idProjectionPosePitch, 0)
		roll, err3 := floatChild(proj, idProjectionPoseRoll, 0)
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		if typ == 0 {
			if info.Rotation, info.Mirror, err = rollOrientation(yaw, pitch, roll); err != nil {
				return err
			}
		}
	}
	return nil
}

// readColour reads Matroska's Colour element.
func readColour(colour []element, info *Info) error {
	vals := map[uint32]uint64{}
	for _, id := range []uint32{idMatrixCoefficients, idBitsPerChannel, idChromaSubsampleHorz, idChromaSubsampleVert, idRange, idTransferChar, idPrimaries} {
		v, err := uintChild(colour, id, 2)
		if err != nil {
			return err
		}
		if v > 255 {
			return fmt.Errorf("a colour value of %d", v)
		}
		vals[id] = v
	}
	info.Colour = Colour{Primaries: int(vals[idPrimaries]), Transfer: int(vals[idTransferChar]), Matrix: int(vals[idMatrixCoefficients]), FullRange: vals[idRange] == 2}
	if _, ok := child(colour, idBitsPerChannel); ok && vals[idBitsPerChannel] > 0 {
		info.BitDepth = int(vals[idBitsPerChannel])
	}
	_, hok := child(colour, idChromaSubsampleHorz)
	_, vok := child(colour, idChromaSubsampleVert)
	if hok && vok {
		switch [2]uint64{vals[idChromaSubsampleHorz], vals[idChromaSubsampleVert]} {
		case [2]uint64{1, 1}:
			info.Chroma = "4:2:0"
		case [2]uint64{1, 0}:
			info.Chroma = "4:2:2"
		case [2]uint64{0, 0}:
			info.Chroma = "4:4:4"
		}
	}
	return nil
}

// vp9Private reads a VP9 CodecPrivate (WebM's codec features: ID, length,
// value): profile 1, level 2, bit depth 3, chroma subsampling 4.
func vp9Private(b []byte) (stream, error) {
	s := stream{depth: 8, chroma: "4:2:0"}
	for p := 0; p < len(b); {
		if p+2 > len(b) || int(b[p+1]) > len(b)-p-2 {
			return stream{}, errors.New("a VP9 CodecPrivate cut short")
		}
		id, n := b[p], int(b[p+1])
		v, _ := ebmlUint(b[p+2 : p+2+n])
		switch id {
		case 1:
			s.profile = int(v)
		case 2:
			s.level = int(v)
		case 3:
			if v != 8 && v != 10 && v != 12 {
				return stream{}, fmt.Errorf("a VP9 bit depth of %d", v)
			}
			s.depth = int(v)
		case 4:
			s.chroma = vpChroma(v)
		}
		p += 2 + n
	}
	return s, nil
}

// readCues reads the picture track's cue points (bounded), sorted by time,
// and lists the first as Info's keyframes.
func (m *mkvFile) readCues(kids []element, info *Info) error {
	for _, point := range kids {
		if point.id != idCuePoint {
			continue
		}
		if len(m.cues) == m.lim.Cues {
			return fmt.Errorf("%w: more than %d cue points", ErrLimit, m.lim.Cues)
		}
		es, err := elements(point.data)
		if err != nil {
			return fmt.Errorf("a CuePoint: %w", err)
		}
		t, err := uintChild(es, idCueTime, math.MaxUint64)
		if err != nil || t > 1<<53 {
			return errors.Join(errors.New("a CuePoint without its time"), err)
		}
		for _, pos := range es {
			if pos.id != idCueTrackPositions {
				continue
			}
			ps, err := elements(pos.data)
			if err != nil {
				return fmt.Errorf("CueTrackPositions: %w", err)
			}
			track, err1 := uintChild(ps, idCueTrack, 0)
			cluster, err2 := uintChild(ps, idCueClusterPosition, math.MaxUint64)
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			if track != m.track {
				continue
			}
			if cluster >= uint64(m.segEnd-m.segAt) {
				return fmt.Errorf("a cue point's cluster at %d, past the segment's end", cluster)
			}
			m.cues = append(m.cues, cue{time: int64(t), cluster: m.segAt + int64(cluster)})
		}
	}
	slices.SortStableFunc(m.cues, func(a, b cue) int { return cmp.Compare(a.time, b.time) })
	tb := TimeBase{Num: m.scale, Den: 1_000_000_000}
	for _, c := range m.cues {
		if len(info.Keyframes) == m.lim.Keyframes {
			info.MoreKeyframes = true
			break
		}
		info.Keyframes = append(info.Keyframes, Keyframe{Time: tb.Seconds(c.time), Offset: c.cluster})
	}
	return nil
}
