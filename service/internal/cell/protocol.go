// Package cell runs thumbnails in worker processes ("cells"): the wire
// protocol between the supervisor and a cell, the cell's side of it
// (Serve), and the supervisor's handle on one cell process (Start, Run).
//
// A cell talks to its supervisor over one Unix stream socket, handed down
// at exec as file descriptor 3, one job at a time: the cell says hello once
// it is ready (libvips started, sandbox on), then answers each job frame
// with one result frame. The supervisor treats everything a cell sends as
// hostile: lengths are bounded, the result must be the asked format, and
// anything else ends the cell.
package cell

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/thumbd/thumbd/service/internal/prefault"
	"github.com/thumbd/thumbd/service/internal/sandbox"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Frame kinds.
const (
	kindHello byte = 'H' // cell → supervisor, once: ready
	// kindJob: supervisor → cell: a job (a thumbnail or a description,
	// thumbjob.Job says which) and its source's look, then the source bytes.
	kindJob byte = 'J'
	// kindResult: cell → supervisor: the outcome, then the image bytes (a
	// description travels in the outcome, with no payload).
	kindResult byte = 'R'
)

// headerSize is a frame's fixed header: kind, three zero bytes, the length
// of the JSON metadata and of the binary payload (little endian).
const headerSize = 12

// maxMeta bounds a frame's JSON part: options, an outcome, a hello.
const maxMeta = 64 << 10

// ErrProtocol is a frame that breaks the protocol: the peer is not to be
// trusted with another job.
var ErrProtocol = errors.New("cell protocol violation")

// Hello is what a cell sends once it is ready for jobs.
type Hello struct {
	PID     int             `json:"pid"`
	Libvips string          `json:"libvips"`
	Sandbox []sandbox.Layer `json:"sandbox"`
}

// jobMeta is a job on the wire; the source bytes follow. The job travels
// as thumbjob.Job itself, and the source's look (format, header) as
// thumbjob.Source without its bytes: supervisor and cell are the same
// binary, and a wire struct of its own once dropped options added later
// (format=auto's alpha format, animated) without any test noticing.
type jobMeta struct {
	thumbjob.Job
	Source thumbjob.Source `json:"source"`
	// Traceparent is the job's span context (W3C), when the request is
	// traced: the cell echoes it with its stage timings, which the
	// supervisor records only for the job it asked for.
	Traceparent string `json:"traceparent,omitempty"`
}

// kindInternal is the error of a result for an error the engine did not
// type; a typed one travels as its API code (thumbjob.Error.Code).
const kindInternal = "internal"

// Stats is what a cell measured of itself for one job.
type Stats struct {
	// MinorFaults taken during the job (getrusage): the copy-on-write and
	// first-touch cost a fresh process pays on its first calls.
	MinorFaults int64 `json:"minflt"`
	// LibvipsMemory and LibvipsPeak are libvips' tracked allocations after
	// the job.
	LibvipsMemory int64 `json:"vips_mem"`
	LibvipsPeak   int64 `json:"vips_peak"`
}

// resultMeta is a job's outcome on the wire; the image bytes follow.
type resultMeta struct {
	Error   string `json:"error,omitempty"` // an engine error's API code, or kindInternal
	Message string `json:"message,omitempty"`
	Format  string `json:"format,omitempty"`
	Width   int    `json:"w,omitempty"`
	Height  int    `json:"h,omitempty"`
	// Info answers an info job.
	Info  *thumbjob.Info `json:"info,omitempty"`
	Stats Stats          `json:"stats"`
	// Trace is the job's own timings, sent only for a traced job, with the
	// job's traceparent echoed.
	Trace       *thumbjob.Trace `json:"trace,omitempty"`
	JobStart    time.Time       `json:"job_start,omitzero"`
	JobEnd      time.Time       `json:"job_end,omitzero"`
	Traceparent string          `json:"traceparent,omitempty"`
}

// maxMessage bounds an error message a cell sends; it reaches clients.
const maxMessage = 1024

// writeFrame sends one frame in a single writev.
func writeFrame(w io.Writer, kind byte, meta any, payload []byte) error {
	m, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	var h [headerSize]byte
	h[0] = kind
	binary.LittleEndian.PutUint32(h[4:], uint32(len(m)))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
	bufs := net.Buffers{h[:], m}
	if len(payload) > 0 {
		bufs = append(bufs, payload)
	}
	_, err = bufs.WriteTo(w)
	return err
}

// readFrame reads one frame of the wanted kind, its metadata into meta and
// its payload (at most maxPayload bytes) into a new slice. io.EOF means the
// peer closed the socket before a frame began.
func readFrame(r io.Reader, want byte, meta any, maxPayload int64) ([]byte, error) {
	return readFrameOf(r, want, meta, maxPayload, false)
}

// readFrameOf is readFrame; trusted says the peer is the supervisor (the
// reader a cell): its declared length is the source it read and bounded
// itself, so the payload's buffer is sized from it at once; a cell's
// payload is read as it arrives.
func readFrameOf(r io.Reader, want byte, meta any, maxPayload int64, trusted bool) ([]byte, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	metaLen, payloadLen := binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint32(h[8:])
	switch {
	case h[0] != want || h[1] != 0 || h[2] != 0 || h[3] != 0:
		return nil, fmt.Errorf("%w: frame kind %q, want %q", ErrProtocol, h[0], want)
	case metaLen > maxMeta:
		return nil, fmt.Errorf("%w: %d bytes of metadata", ErrProtocol, metaLen)
	case int64(payloadLen) > maxPayload:
		return nil, fmt.Errorf("%w: a %d-byte payload, more than the %d allowed", ErrProtocol, payloadLen, maxPayload)
	}
	m := make([]byte, metaLen)
	if _, err := io.ReadFull(r, m); err != nil {
		return nil, unexpectedEOF(err)
	}
	if err := json.Unmarshal(m, meta); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if trusted {
		payload := make([]byte, payloadLen)
		// A source: its pages mapped in one call (package prefault).
		prefault.Write(payload)
		if _, err := io.ReadFull(r, payload); err != nil {
			return nil, unexpectedEOF(err)
		}
		return payload, nil
	}
	return readPayload(r, int(payloadLen))
}

// readPayload reads n bytes into a buffer that grows as they arrive
// (1 MiB, then doubling): a peer that declares more than it sends costs
// what it sent, not what it declared.
func readPayload(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, 1<<20))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = append(make([]byte, 0, min(n, 2*cap(buf))), buf...)
		}
		got, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+got]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return buf, nil
}

// unexpectedEOF is err, but a frame cut short is never a clean io.EOF.
func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
