package heiftest

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// EncodeSequence encodes the PNG frames as an AVIF image sequence with
// Debian's ffmpeg (libaom), in the given pixel format (yuv420p,
// yuv420p10le, yuv420p12le...); args are more of ffmpeg's output options.
// ffmpeg writes a still image (meta) beside the track; Sequence takes it
// out. An alpha sequence's luma is full range (AVIF, 4.1): encode it with
// AlphaRange().
func EncodeSequence(frames [][]byte, pixFmt string, args ...string) ([]byte, error) {
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, fmt.Errorf("heiftest: ffmpeg (Debian's ffmpeg): %w", err)
	}
	dir, err := os.MkdirTemp("", "heiftest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for i, f := range frames {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.png", i)), f, 0o600); err != nil {
			return nil, err
		}
	}
	out := filepath.Join(dir, "seq.avif")
	cmd := exec.Command(bin, append(append([]string{"-hide_banner", "-loglevel", "error", "-framerate", "10", "-i", filepath.Join(dir, "f%03d.png"),
		"-c:v", "libaom-av1", "-cpu-used", "8", "-crf", "10", "-pix_fmt", pixFmt}, args...), "-f", "avif", "-y", out)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("heiftest: ffmpeg: %v: %s", err, msg)
	}
	return os.ReadFile(out)
}

// AlphaRange are EncodeSequence's options for an alpha sequence: its
// grey frames' luma in full range, as AVIF's alpha is.
func AlphaRange() []string { return []string{"-vf", "scale=out_range=full", "-color_range", "pc"} }

// Sequence is an AVIF image sequence (brand avis) with no still image: the
// video track of colour, a file EncodeSequence wrote, and, when alpha is
// given (another, of the same size, whose luma is the alpha), that file's
// track as an auxiliary one (handler auxv, tref auxl to the first), as
// libavif writes a sequence with alpha. Both tracks' samples go into one
// mdat; their chunk offsets follow.
func Sequence(colour, alpha []byte) ([]byte, error) {
	c, err := seqParts(colour)
	if err != nil {
		return nil, fmt.Errorf("heiftest: colour: %w", err)
	}
	parts := []seqPart{c}
	if alpha != nil {
		a, err := seqParts(alpha)
		if err != nil {
			return nil, fmt.Errorf("heiftest: alpha: %w", err)
		}
		parts = append(parts, a)
	}
	ftyp := box("ftyp", []byte("avis"), u32(0), []byte("avisavifmsf1iso8mif1miaf"))
	moov := func(mdatAt int) ([]byte, error) {
		children := [][]byte{c.mvhd}
		at := mdatAt
		for i, p := range parts {
			trak, err := p.track(uint32(i+1), i > 0, at-p.dataAt)
			if err != nil {
				return nil, err
			}
			children = append(children, trak)
			at += len(p.data)
		}
		return box("moov", children...), nil
	}
	first, err := moov(0)
	if err != nil {
		return nil, err
	}
	mdatAt := len(ftyp) + len(first) + 8
	m, err := moov(mdatAt)
	if err != nil {
		return nil, err
	}
	var data [][]byte
	for _, p := range parts {
		data = append(data, p.data)
	}
	return append(append(ftyp, m...), box("mdat", data...)...), nil
}

// seqPart is what Sequence takes of one EncodeSequence file.
type seqPart struct {
	mvhd   []byte
	trak   rawBox
	data   []byte // the mdat's body
	dataAt int    // its offset in the file
}

func seqParts(b []byte) (seqPart, error) {
	var p seqPart
	top, err := boxes(b)
	if err != nil {
		return p, err
	}
	at := 0
	for _, bx := range top {
		switch bx.typ {
		case "moov":
			children, err := boxes(bx.body)
			if err != nil {
				return p, err
			}
			for _, ch := range children {
				switch ch.typ {
				case "mvhd":
					p.mvhd = ch.whole
				case "trak":
					if p.trak.typ == "" {
						p.trak = ch
					}
				}
			}
		case "mdat":
			p.data, p.dataAt = bx.body, at+len(bx.whole)-len(bx.body)
		}
		at += len(bx.whole)
	}
	if p.mvhd == nil || p.trak.typ == "" || p.data == nil {
		return p, fmt.Errorf("no moov with a track, or no mdat: %w", errShort)
	}
	return p, nil
}

// track is the part's trak with track ID id, its chunk offsets moved by
// shift, and, for an alpha track, the handler auxv and a tref auxl to
// track 1.
func (p seqPart) track(id uint32, alpha bool, shift int) ([]byte, error) {
	var edit func(typ string, whole []byte, path string) ([]byte, error)
	edit = func(typ string, whole []byte, path string) ([]byte, error) {
		hdr := len(whole) - len(bodyOf(whole))
		body := append([]byte(nil), whole[hdr:]...)
		switch path + typ {
		case "trak/tkhd":
			off := 12 // version and flags, creation and modification times
			if body[0] == 1 {
				off = 20
			}
			binary.BigEndian.PutUint32(body[off:], id)
		case "trak/mdia/hdlr":
			if alpha {
				copy(body[8:], "auxv")
			}
		case "trak/mdia/minf/stbl/stco":
			n := binary.BigEndian.Uint32(body[4:])
			for i := range n {
				at := 8 + 4*i
				binary.BigEndian.PutUint32(body[at:], uint32(int(binary.BigEndian.Uint32(body[at:]))+shift))
			}
		case "trak", "trak/mdia", "trak/mdia/minf", "trak/mdia/minf/stbl":
			children, err := boxes(body)
			if err != nil {
				return nil, err
			}
			var out [][]byte
			for _, ch := range children {
				e, err := edit(ch.typ, ch.whole, path+typ+"/")
				if err != nil {
					return nil, err
				}
				out = append(out, e)
			}
			if path+typ == "trak" && alpha {
				out = append(out, box("tref", box("auxl", u32(1))))
			}
			return box(typ, out...), nil
		case "trak/mdia/minf/stbl/co64":
			return nil, fmt.Errorf("co64: 64-bit chunk offsets are not moved here")
		}
		return box(typ, body), nil
	}
	return edit("trak", p.trak.whole, "")
}

// bodyOf is a whole box's body (after its 8- or 16-byte header).
func bodyOf(whole []byte) []byte {
	if binary.BigEndian.Uint32(whole) == 1 {
		return whole[16:]
	}
	return whole[8:]
}
