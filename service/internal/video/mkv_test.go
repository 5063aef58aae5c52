package video

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// idBytes is an element ID as written: its bytes, marker included.
func idBytes(id uint32) []byte {
	b := u32(id)
	for len(b) > 1 && b[0] == 0 {
		b = b[1:]
	}
	return b
}

// el is an element whose size is written in 8 bytes (as muxers reserve
// it), or unknown when size < -1.
func el(id uint32, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	size := u64(uint64(len(body)))
	size[0] = 0x01
	return append(append(idBytes(id), size...), body...)
}

// unsized is a master element of unknown size (a live stream's).
func unsized(id uint32, parts ...[]byte) []byte {
	return append(append(idBytes(id), 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF), bytes.Join(parts, nil)...)
}

func uel(id uint32, v uint64) []byte { return el(id, u64(v)) }
func sel(id uint32, s string) []byte { return el(id, []byte(s)) }
func fel(id uint32, v float64) []byte {
	return el(id, binary.BigEndian.AppendUint64(nil, math.Float64bits(v)))
}

// simpleBlock is a SimpleBlock of track 1, at rel ms in its cluster, of
// 10 bytes.
func simpleBlock(rel int16, key bool, flags byte) []byte {
	if key {
		flags |= 0x80
	}
	return el(idSimpleBlock, []byte{0x81, byte(uint16(rel) >> 8), byte(rel), flags}, bytes.Repeat([]byte{0xEE}, 10))
}

// mkvSynth describes a small WebM: one VP8 track, frames every 40 ms,
// a keyframe every keyEvery, clustersOf frames a cluster.
type mkvSynth struct {
	frames, keyEvery, clustersOf int
	track                        [][]byte // more of the TrackEntry
	video                        [][]byte // more of Video
	cues                         bool
	live                         bool // unknown sizes, no cues, no duration
	docReadVersion               uint64
	block                        func(i int, rel int16, key bool) []byte
}

func (s mkvSynth) build() []byte {
	if s.docReadVersion == 0 {
		s.docReadVersion = 2
	}
	header := el(idEBML, uel(idEBMLReadVersion, 1), sel(idDocType, "webm"), uel(idDocTypeReadVersion, s.docReadVersion))
	info := el(idInfo, uel(idTimestampScale, 1_000_000))
	if !s.live {
		info = el(idInfo, uel(idTimestampScale, 1_000_000), fel(idDuration, float64(40*s.frames)))
	}
	video := el(idVideo, append([][]byte{uel(idPixelWidth, 320), uel(idPixelHeight, 240)}, s.video...)...)
	entry := el(idTrackEntry, append([][]byte{uel(idTrackNumber, 1), uel(idTrackType, 1), sel(idCodecID, "V_VP8"), video}, s.track...)...)
	tracks := el(idTracks, entry)
	var clusters [][]byte
	type cuePoint struct{ time, cluster int }
	var points []cuePoint
	at := len(info) + len(tracks)
	for c := 0; c*s.clustersOf < s.frames; c++ {
		start := c * s.clustersOf
		kids := [][]byte{uel(idTimestamp, uint64(40*start))}
		for i := start; i < min(s.frames, start+s.clustersOf); i++ {
			key := i%s.keyEvery == 0
			if s.block != nil {
				kids = append(kids, s.block(i, int16(40*(i-start)), key))
			} else {
				kids = append(kids, simpleBlock(int16(40*(i-start)), key, 0))
			}
			if key {
				points = append(points, cuePoint{40 * i, at})
			}
		}
		var cluster []byte
		if s.live {
			cluster = unsized(idCluster, kids...)
		} else {
			cluster = el(idCluster, kids...)
		}
		clusters = append(clusters, cluster)
		at += len(cluster)
	}
	body := [][]byte{info, tracks}
	body = append(body, clusters...)
	if s.cues {
		// A SeekHead first, to the Cues after the clusters: every
		// position moves by its size.
		seek := func(pos int) []byte {
			return el(idSeekHead, el(idSeek, el(idSeekID, idBytes(idCues)), uel(idSeekPosition, uint64(pos))))
		}
		shift := len(seek(0))
		body = append([][]byte{seek(shift + at)}, body...)
		for i := range points {
			points[i].cluster += shift
		}
		var cps [][]byte
		for _, p := range points {
			cps = append(cps, el(idCuePoint, uel(idCueTime, uint64(p.time)), el(idCueTrackPositions, uel(idCueTrack, 1), uel(idCueClusterPosition, uint64(p.cluster)))))
		}
		body = append(body, el(idCues, cps...))
	}
	if s.live {
		return append(header, unsized(idSegment, body...)...)
	}
	return append(header, el(idSegment, body...)...)
}

func TestSynthMatroska(t *testing.T) {
	for _, s := range []mkvSynth{
		{frames: 50, keyEvery: 10, clustersOf: 10, cues: true},
		{frames: 50, keyEvery: 10, clustersOf: 10},             // no cues: clusters hopped
		{frames: 50, keyEvery: 10, clustersOf: 7},              // keyframes inside clusters
		{frames: 50, keyEvery: 10, clustersOf: 7, live: true},  // unknown sizes
		{frames: 50, keyEvery: 25, clustersOf: 5, cues: true},  // a GOP over clusters
		{frames: 50, keyEvery: 10, clustersOf: 50, cues: true}, // one cluster
	} {
		b := s.build()
		v, err := openBytes(b, DefaultLimits())
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if i := v.Info(); i.Codec != VP8 || i.Container != WebM || i.Width != 320 || s.cues != (len(i.Keyframes) == 50/s.keyEvery) {
			t.Fatalf("%+v: %+v", s, i)
		}
		for _, at := range []float64{0, 0.5, 1.0, 1.39, 1.96} {
			f, err := v.FrameAt(at)
			want := int64(math.Floor(at*25+1e-9)) * 40
			keyAt := want / int64(40*s.keyEvery) * int64(40*s.keyEvery)
			if err != nil || f.PTS != want || f.Packets[0].PTS != keyAt || len(f.Packets) != int((want-keyAt)/40)+1 {
				t.Errorf("%+v t=%v: %+v %v", s, at, f, err)
				continue
			}
			if err := v.ReadFrame(&f); err != nil || !bytes.Equal(f.Packets[0].Data, bytes.Repeat([]byte{0xEE}, 10)) {
				t.Errorf("%+v t=%v: %v", s, at, err)
			}
		}
		if !s.live {
			if _, err := v.FrameAt(2); !errors.Is(err, ErrPastEnd) {
				t.Errorf("past the end: %v", err)
			}
		}
	}
}

// A BlockGroup is a keyframe unless it has a ReferenceBlock.
func TestBlockGroups(t *testing.T) {
	s := mkvSynth{frames: 20, keyEvery: 10, clustersOf: 20, cues: true, block: func(i int, rel int16, key bool) []byte {
		block := el(idBlock, []byte{0x81, byte(uint16(rel) >> 8), byte(rel), 0}, bytes.Repeat([]byte{0xEE}, 10))
		if key {
			return el(idBlockGroup, block)
		}
		return el(idBlockGroup, block, el(idReferenceBlock, []byte{0xD8}))
	}}
	v, err := openBytes(s.build(), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	f, err := v.FrameAt(0.7)
	if err != nil || len(f.Packets) != 8 || !f.Packets[0].Key || f.Packets[1].Key || f.Packets[0].PTS != 400 {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestMatroskaRefusals(t *testing.T) {
	base := mkvSynth{frames: 20, keyEvery: 10, clustersOf: 10, cues: true}
	notServed := map[string]mkvSynth{
		"content encodings":           {track: [][]byte{el(idContentEncodings, el(0x6240))}},
		"a track timestamp scale":     {track: [][]byte{fel(idTrackTimestampScale, 2)}},
		"a cropped picture":           {video: [][]byte{uel(idPixelCropLeft, 8)}},
		"a projection of 30 degrees":  {video: [][]byte{el(idProjection, uel(idProjectionType, 0), fel(idProjectionPoseRoll, 30))}},
		"a DocType read version of 4": {docReadVersion: 4},
	}
	for name, s := range notServed {
		s.frames, s.keyEvery, s.clustersOf, s.cues = base.frames, base.keyEvery, base.clustersOf, true
		if _, err := openBytes(s.build(), DefaultLimits()); !errors.Is(err, ErrNotServed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	theora := bytes.Replace(base.build(), []byte("V_VP8"), []byte("V_THE"), 1)
	if _, err := openBytes(theora, DefaultLimits()); !errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), "V_THE") {
		t.Errorf("another codec: %v", err)
	}
	laced := base
	laced.block = func(i int, rel int16, key bool) []byte { return simpleBlock(rel, key, 0x02) }
	v, err := openBytes(laced.build(), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.FrameAt(0.2); !errors.Is(err, ErrNotServed) {
		t.Errorf("laced: %v", err)
	}
	// Truncated: the Segment's size past the file.
	b := base.build()
	if _, err := openBytes(b[:len(b)-1], DefaultLimits()); err == nil || !strings.Contains(err.Error(), "past its parent's end") {
		t.Errorf("cut short: %v", err)
	}
	// A rectangular projection rolled 90 degrees counterclockwise.
	rolled := base
	rolled.video = [][]byte{el(idProjection, uel(idProjectionType, 0), fel(idProjectionPoseRoll, 90))}
	if v, err := openBytes(rolled.build(), DefaultLimits()); err != nil || v.Info().Rotation != 270 || v.Info().DisplayWidth != 240 {
		t.Errorf("rolled: %v", err)
	}
	// An anamorphic picture: shown 640 wide.
	wide := base
	wide.video = [][]byte{uel(idDisplayWidth, 640), uel(idDisplayHeight, 240)}
	if v, err := openBytes(wide.build(), DefaultLimits()); err != nil || v.Info().DisplayWidth != 640 || v.Info().SampleAspect != [2]int{2, 1} {
		t.Errorf("anamorphic: %v %+v", err, v.Info())
	}
}

func TestMatroskaLimits(t *testing.T) {
	lim := DefaultLimits()
	lim.Cues = 3
	if _, err := openBytes(mkvSynth{frames: 50, keyEvery: 10, clustersOf: 10, cues: true}.build(), lim); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "cue points") {
		t.Errorf("5 cue points: %v", err)
	}
	lim = DefaultLimits()
	lim.Clusters = 3
	v, err := openBytes(mkvSynth{frames: 50, keyEvery: 10, clustersOf: 10}.build(), lim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.FrameAt(1.9); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "clusters") {
		t.Errorf("5 clusters hopped: %v", err)
	}
	lim = DefaultLimits()
	lim.Samples = 5
	v, err = openBytes(mkvSynth{frames: 50, keyEvery: 25, clustersOf: 50, cues: true}.build(), lim)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.FrameAt(0.5); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "frames read") {
		t.Errorf("13 frames for one: %v", err)
	}
	lim = DefaultLimits()
	lim.Tracks = 0
	if _, err := openBytes(mkvSynth{frames: 5, keyEvery: 5, clustersOf: 5}.build(), lim); !errors.Is(err, ErrLimit) {
		t.Errorf("a track past 0: %v", err)
	}
}
