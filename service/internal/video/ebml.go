package video

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Matroska's element IDs (RFC 9559; EBML's in RFC 8794), with their
// length marker kept, as the specification writes them.
const (
	idEBML               = 0x1A45DFA3
	idEBMLReadVersion    = 0x42F7
	idEBMLMaxIDLength    = 0x42F2
	idEBMLMaxSizeLength  = 0x42F3
	idDocType            = 0x4282
	idDocTypeReadVersion = 0x4285

	idSegment      = 0x18538067
	idSeekHead     = 0x114D9B74
	idSeek         = 0x4DBB
	idSeekID       = 0x53AB
	idSeekPosition = 0x53AC

	idInfo           = 0x1549A966
	idTimestampScale = 0x2AD7B1
	idDuration       = 0x4489

	idTracks              = 0x1654AE6B
	idTrackEntry          = 0xAE
	idTrackNumber         = 0xD7
	idTrackType           = 0x83
	idFlagEnabled         = 0xB9
	idFlagDefault         = 0x88
	idDefaultDuration     = 0x23E383
	idTrackTimestampScale = 0x23314F
	idCodecID             = 0x86
	idCodecPrivate        = 0x63A2
	idContentEncodings    = 0x6D80
	idVideo               = 0xE0
	idPixelWidth          = 0xB0
	idPixelHeight         = 0xBA
	idPixelCropBottom     = 0x54AA
	idPixelCropTop        = 0x54BB
	idPixelCropLeft       = 0x54CC
	idPixelCropRight      = 0x54DD
	idDisplayWidth        = 0x54B0
	idDisplayHeight       = 0x54BA
	idDisplayUnit         = 0x54B2
	idColour              = 0x55B0
	idMatrixCoefficients  = 0x55B1
	idBitsPerChannel      = 0x55B2
	idChromaSubsampleHorz = 0x55B3
	idChromaSubsampleVert = 0x55B4
	idRange               = 0x55B9
	idTransferChar        = 0x55BA
	idPrimaries           = 0x55BB
	idProjection          = 0x7670
	idProjectionType      = 0x7671
	idProjectionPoseYaw   = 0x7673
	idProjectionPosePitch = 0x7674
	idProjectionPoseRoll  = 0x7675

	idCues               = 0x1C53BB6B
	idCuePoint           = 0xBB
	idCueTime            = 0xB3
	idCueTrackPositions  = 0xB7
	idCueTrack           = 0xF7
	idCueClusterPosition = 0xF1

	idCluster        = 0x1F43B675
	idTimestamp      = 0xE7
	idSimpleBlock    = 0xA3
	idBlockGroup     = 0xA0
	idBlock          = 0xA1
	idReferenceBlock = 0xFB
)

// ehead is an element's header: its ID, where it starts, where its data
// starts, and its data's size (-1: unknown, to its parent's end).
type ehead struct {
	id     uint32
	at     int64
	dataAt int64
	size   int64
}

// end is where the element's data ends (for a known size).
func (h ehead) end() int64 { return h.dataAt + h.size }

// maxHead is the longest element header: a 4-byte ID and an 8-byte size.
const maxHead = 12

// vint reads an EBML variable-length integer at b[p:]: its length (1 to
// max bytes, from the first byte's leading zeros), its value with the
// length marker kept (an ID) or cleared (a size), and whether every value
// bit is set (an unknown size).
func vint(b []byte, p int64, maxLen int) (n int, marked, value uint64, allOnes bool, err error) {
	if p >= int64(len(b)) {
		return 0, 0, 0, false, errors.New("an element header cut short")
	}
	first := b[p]
	if first == 0 {
		return 0, 0, 0, false, errors.New("an element header longer than 8 bytes")
	}
	n = 1
	for mask := byte(0x80); first&mask == 0; mask >>= 1 {
		n++
	}
	if n > maxLen {
		return 0, 0, 0, false, fmt.Errorf("an element header of %d bytes", n)
	}
	if p+int64(n) > int64(len(b)) {
		return 0, 0, 0, false, errors.New("an element header cut short")
	}
	for i := range n {
		marked = marked<<8 | uint64(b[p+int64(i)])
	}
	value = marked &^ (1 << (7 * uint(n)))
	return n, marked, value, value == 1<<(7*uint(n))-1, nil
}

// parseElement reads the element header at b[off:] (off is also the
// element's position: b is from the file's start or its own origin).
func parseElement(b []byte, off int64) (ehead, error) {
	n, id, _, _, err := vint(b, off, 4)
	if err != nil {
		return ehead{}, err
	}
	m, _, size, unknown, err := vint(b, off+int64(n), 8)
	if err != nil {
		return ehead{}, err
	}
	h := ehead{id: uint32(id), at: off, dataAt: off + int64(n+m), size: int64(size)}
	if unknown {
		h.size = -1
	} else if size > math.MaxInt64/2 {
		return ehead{}, fmt.Errorf("an element of %d bytes", size)
	}
	return h, nil
}

// element is an element read whole: its header and its data.
type element struct {
	ehead
	data []byte
}

// maxElements bounds the children of one element read in memory.
const maxElements = 200_000

// elements splits b, a master element's data, into its children; every
// child's size is checked against b, and an unknown size is refused (it
// is allowed only where the file walk reads it: Segment and Cluster).
func elements(b []byte) ([]element, error) {
	var out []element
	for p := int64(0); p < int64(len(b)); {
		if len(out) == maxElements {
			return out, fmt.Errorf("%w: more than %d elements in one", ErrLimit, maxElements)
		}
		h, err := parseElement(b, p)
		if err != nil {
			return out, err
		}
		if h.size < 0 {
			return out, fmt.Errorf("an element 0x%X of unknown size inside one of known size", h.id)
		}
		if h.size > int64(len(b))-h.dataAt {
			return out, fmt.Errorf("an element 0x%X of %d bytes, past its parent's end", h.id, h.size)
		}
		out = append(out, element{ehead: h, data: b[h.dataAt:h.end()]})
		p = h.end()
	}
	return out, nil
}

// child is the first child with the id.
func child(es []element, id uint32) (element, bool) {
	for _, e := range es {
		if e.id == id {
			return e, true
		}
	}
	return element{}, false
}

// ebmlUint reads an unsigned integer element's data (0 to 8 bytes).
func ebmlUint(b []byte) (uint64, error) {
	if len(b) > 8 {
		return 0, fmt.Errorf("an integer of %d bytes", len(b))
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// ebmlInt reads a signed integer element's data.
func ebmlInt(b []byte) (int64, error) {
	v, err := ebmlUint(b)
	if err != nil || len(b) == 0 {
		return 0, err
	}
	shift := 64 - 8*uint(len(b))
	return int64(v<<shift) >> shift, nil
}

// ebmlFloat reads a float element's data (0, 4 or 8 bytes).
func ebmlFloat(b []byte) (float64, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case 4:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), nil
	case 8:
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("a float of %d bytes", len(b))
}

// ebmlString reads a string element's data, up to its first NUL.
func ebmlString(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\x00")
	return s
}

// uintChild is the unsigned integer child with the id, else def.
func uintChild(es []element, id uint32, def uint64) (uint64, error) {
	e, ok := child(es, id)
	if !ok {
		return def, nil
	}
	v, err := ebmlUint(e.data)
	if err != nil {
		return 0, fmt.Errorf("element 0x%X: %w", id, err)
	}
	return v, nil
}

// floatChild is the float child with the id, else def.
func floatChild(es []element, id uint32, def float64) (float64, error) {
	e, ok := child(es, id)
	if !ok {
		return def, nil
	}
	v, err := ebmlFloat(e.data)
	if err != nil {
		return 0, fmt.Errorf("element 0x%X: %w", id, err)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("element 0x%X: %v", id, v)
	}
	return v, nil
}

// fileHead reads the element header at off in the file, whose parent
// ends at end (-1: unknown, the file's end).
func fileHead(src *source, off, end int64) (ehead, error) {
	if end < 0 || end > src.size {
		end = src.size
	}
	if off >= end {
		return ehead{}, errors.New("an element header past its parent's end")
	}
	b, err := src.read(off, min(maxHead, end-off), headerAhead)
	if err != nil {
		return ehead{}, err
	}
	h, err := parseElement(b, 0)
	if err != nil {
		return ehead{}, fmt.Errorf("at %d: %w", off, err)
	}
	h.at, h.dataAt = off, off+h.dataAt
	if h.size >= 0 && h.size > end-h.dataAt {
		return ehead{}, fmt.Errorf("an element 0x%X of %d bytes at %d, past its parent's end at %d", h.id, h.size, off, end)
	}
	return h, nil
}

// readElement reads a known-size element's data whole (under the budget).
func readElement(src *source, h ehead) ([]element, error) {
	if h.size < 0 {
		return nil, fmt.Errorf("element 0x%X of unknown size", h.id)
	}
	b, err := src.read(h.dataAt, h.size, exact)
	if err != nil {
		return nil, err
	}
	return elements(b)
}
