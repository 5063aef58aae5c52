package cell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n fake")

// echo is an engine that makes a tiny PNG of every job.
type echo struct{}

func (e echo) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	return job.Run(ctx, src, e.Thumbnail, e.Info)
}

func (echo) Thumbnail(_ context.Context, _ thumbjob.Source, o thumbjob.Options) (thumbjob.Image, error) {
	return thumbjob.Image{Bytes: pngBytes, Format: o.Format, Width: o.Width, Height: o.Width}, nil
}

// Info describes every source as a 40x30 JPEG, with a ThumbHash when asked.
func (echo) Info(_ context.Context, _ thumbjob.Source, job thumbjob.InfoJob) (thumbjob.Info, error) {
	return echoInfo(job), nil
}

func echoInfo(job thumbjob.InfoJob) thumbjob.Info {
	i := thumbjob.Info{Format: imagefmt.JPEG, Width: 40, Height: 30, StoredWidth: 40, StoredHeight: 30, Orientation: 1, Frames: 1, Space: "srgb"}
	if job.ThumbHash {
		i.ThumbHash = "nxcOLZpgd3dReYeGd3h3d+PxC/eH"
	}
	return i
}

func job(w int) thumbjob.Options {
	return thumbjob.Options{Width: w, Height: w, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
}

// The supervisor reads what a cell sends as hostile: frames of the wrong
// kind or size end the exchange as protocol violations.
func TestFramesAreBounded(t *testing.T) {
	var buf bytes.Buffer
	if err := writeFrame(&buf, kindResult, resultMeta{Format: "png"}, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	frame := buf.Bytes()
	for _, tc := range []struct {
		name       string
		frame      []byte
		want       byte
		maxPayload int64
		err        error
	}{
		{"wrong kind", frame, kindHello, 1000, ErrProtocol},
		{"payload over the limit", frame, kindResult, 99, ErrProtocol},
		{"truncated", frame[:len(frame)-1], kindResult, 1000, io.ErrUnexpectedEOF},
		{"empty", nil, kindResult, 1000, io.EOF},
		{"huge metadata", append([]byte{kindResult, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, frame[12:]...), kindResult, 1000, ErrProtocol},
		{"metadata not JSON", append([]byte{kindResult, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, "{x"...), kindResult, 1000, ErrProtocol},
	} {
		var meta resultMeta
		if _, err := readFrame(bytes.NewReader(tc.frame), tc.want, &meta, tc.maxPayload); !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.err)
		}
	}
	var meta resultMeta
	payload, err := readFrame(bytes.NewReader(frame), kindResult, &meta, 100)
	if err != nil || len(payload) != 100 || meta.Format != "png" {
		t.Fatalf("round trip: %v %d %+v", err, len(payload), meta)
	}
}

func TestResultsAreCheckedAgainstTheJob(t *testing.T) {
	c := &Cell{spec: &Spec{MaxSide: 100}}
	o := job(50)
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name    string
		meta    resultMeta
		payload []byte
		check   func(error) bool
	}{
		{"ok", resultMeta{Format: "png", Width: 50, Height: 50}, pngBytes, func(err error) bool { return err == nil }},
		{"labelled png, is jpeg", resultMeta{Format: "png", Width: 50, Height: 50}, []byte("\xFF\xD8\xFF"), isProtocol},
		{"other format", resultMeta{Format: "webp", Width: 50, Height: 50}, pngBytes, isProtocol},
		{"too wide", resultMeta{Format: "png", Width: 101, Height: 50}, pngBytes, isProtocol},
		{"no size", resultMeta{Format: "png"}, pngBytes, isProtocol},
		{"unknown error kind", resultMeta{Error: "pwned"}, nil, isProtocol},
		{"an API code the engine never gives", resultMeta{Error: "bad_signature"}, nil, isProtocol},
		{"long message cut", resultMeta{Error: string(thumbjob.ErrUndecodable.Code), Message: long}, nil, func(err error) bool {
			return errors.Is(err, thumbjob.ErrUndecodable) && len(err.Error()) == maxMessage
		}},
		{"untyped error", resultMeta{Error: kindInternal, Message: "no exporter"}, nil, func(err error) bool {
			return err != nil && !isProtocol(err) && err.Error() == "no exporter"
		}},
	} {
		if _, err := c.result(o, tc.meta, tc.payload); !tc.check(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func isProtocol(err error) bool { return errors.Is(err, ErrProtocol) }

// An AVIF and a format=auto job's alpha format are results as good as
// the format asked for.
func TestResultsOfOutputOnlyAndAlphaFormats(t *testing.T) {
	c := &Cell{spec: &Spec{MaxSide: 100}}
	avif := []byte("\x00\x00\x00\x1cftypavif")
	if img, err := c.result(thumbjob.Options{Format: imagefmt.AVIF}, resultMeta{Format: "avif", Width: 9, Height: 9}, avif); err != nil || img.Format != imagefmt.AVIF {
		t.Errorf("avif: %v %v", img.Format, err)
	}
	auto := thumbjob.Options{Format: imagefmt.JPEG, AlphaFormat: imagefmt.PNG}
	if img, err := c.result(auto, resultMeta{Format: "png", Width: 9, Height: 9}, pngBytes); err != nil || img.Format != imagefmt.PNG {
		t.Errorf("alpha format: %v %v", img.Format, err)
	}
	if _, err := c.result(thumbjob.Options{Format: imagefmt.JPEG}, resultMeta{Format: "png", Width: 9, Height: 9}, pngBytes); !isProtocol(err) {
		t.Errorf("png for a jpeg job without an alpha format: %v", err)
	}
}

// failing is an engine that fails every job with err.
type failing struct{ err error }

func (f failing) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	return job.Run(ctx, src, f.Thumbnail, f.Info)
}

func (f failing) Thumbnail(context.Context, thumbjob.Source, thumbjob.Options) (thumbjob.Image, error) {
	return thumbjob.Image{}, fmt.Errorf("%w: the detail", f.err)
}

func (f failing) Info(context.Context, thumbjob.Source, thumbjob.InfoJob) (thumbjob.Info, error) {
	return thumbjob.Info{}, fmt.Errorf("%w: the detail", f.err)
}

// Every typed engine error reaches the supervisor as itself (its HTTP
// status depends on it), with its message.
func TestEngineErrorsCrossTheWire(t *testing.T) {
	c := &Cell{spec: &Spec{MaxSide: 100}}
	for _, want := range thumbjob.Errors() {
		meta, payload := Worker{Engine: failing{want}}.run(jobMeta{Job: thumbjob.Job{Options: job(8)}})
		if _, err := c.result(job(8), meta, payload); !errors.Is(err, want) || !strings.Contains(err.Error(), "the detail") {
			t.Errorf("%v came back as %v", want, err)
		}
	}
	for _, want := range thumbjob.Errors() {
		meta, _ := Worker{Engine: failing{want}}.run(jobMeta{Job: thumbjob.Job{Info: &thumbjob.InfoJob{ThumbHash: true}}})
		if _, err := infoResult(thumbjob.InfoJob{ThumbHash: true}, meta); !errors.Is(err, want) || !strings.Contains(err.Error(), "the detail") {
			t.Errorf("info: %v came back as %v", want, err)
		}
	}
	meta, payload := Worker{Engine: failing{errors.New("no exporter")}}.run(jobMeta{Job: thumbjob.Job{Options: job(8)}})
	_, err := c.result(job(8), meta, payload)
	var typed *thumbjob.Error
	if err == nil || isProtocol(err) || errors.As(err, &typed) {
		t.Errorf("an untyped error came back as %v (%v)", err, typed)
	}
}

// A cell reads jobs over a socket pair: a closed supervisor end is a clean
// end, a frame of the wrong kind an error.
func TestWorkerEndsWithItsSupervisor(t *testing.T) {
	ours, theirs := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- Worker{Engine: echo{}, MaxSource: 10}.Serve(theirs, Hello{PID: 1}) }()
	var h Hello
	if _, err := readFrame(ours, kindHello, &h, 0); err != nil || h.PID != 1 {
		t.Fatalf("hello: %v %+v", err, h)
	}
	ours.Close()
	if err := <-done; err != nil {
		t.Fatalf("a closed socket ends the worker cleanly: %v", err)
	}
	ours, theirs = net.Pipe()
	go func() { done <- Worker{Engine: echo{}, MaxSource: 10}.Serve(theirs, Hello{PID: 1}) }()
	readFrame(ours, kindHello, &h, 0)
	go writeFrame(ours, kindJob, jobMeta{Job: thumbjob.Job{Options: thumbjob.Options{Width: 10}}}, make([]byte, 11))
	if err := <-done; !errors.Is(err, ErrProtocol) {
		t.Fatalf("a source over the limit: %v", err)
	}
}

// A peer that declares a large payload and sends little costs the reader
// what arrived, not what was declared: the payload is read as it comes.
func TestFramePayloadIsReadAsItArrives(t *testing.T) {
	var frame bytes.Buffer
	writeFrame(&frame, kindResult, resultMeta{}, nil)
	b := frame.Bytes()
	b[8], b[9], b[10], b[11] = 0, 0, 0x20, 0x03 // 50 MiB declared, none sent
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var meta resultMeta
	_, err := readFrame(bytes.NewReader(b), kindResult, &meta, 64<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a short payload: %v", err)
	}
	// The first step of the buffer is 1 MiB.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<20 {
		t.Errorf("reading a frame that declared 50 MiB and sent none allocated %d bytes", grew)
	}
}

// AfterJob runs once per job, once its result is sent (the cell gives its
// memory back between jobs).
func TestWorkerRunsAfterJobOncePerJob(t *testing.T) {
	ours, theirs := net.Pipe()
	defer ours.Close()
	ran := make(chan struct{}, 4)
	w := Worker{Engine: echo{}, MaxSource: 10, AfterJob: func(thumbjob.Source, thumbjob.Job) { ran <- struct{}{} }}
	go w.Serve(theirs, Hello{PID: 1})
	var h Hello
	readFrame(ours, kindHello, &h, 0)
	for i := range 2 {
		if len(ran) != 0 {
			t.Fatalf("job %d: AfterJob ran before its job", i)
		}
		go writeFrame(ours, kindJob, jobMeta{Job: thumbjob.Job{Options: thumbjob.Options{Width: 8, Height: 8, Format: "png"}}}, []byte("src"))
		var meta resultMeta
		if _, err := readFrame(ours, kindResult, &meta, 1<<20); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatalf("job %d: AfterJob never ran", i)
		}
	}
}

// An info job's result is checked as a thumbnail's is: a description no
// image could have, or a ThumbHash not asked for or malformed, is a
// protocol violation.
func TestInfoResultsAreChecked(t *testing.T) {
	with, without := thumbjob.InfoJob{ThumbHash: true}, thumbjob.InfoJob{}
	edit := func(job thumbjob.InfoJob, f func(*thumbjob.Info)) resultMeta {
		i := echoInfo(job)
		f(&i)
		return resultMeta{Info: &i}
	}
	for _, tc := range []struct {
		name string
		job  thumbjob.InfoJob
		meta resultMeta
		ok   bool
	}{
		{"ok", with, edit(with, func(*thumbjob.Info) {}), true},
		{"ok without hash", without, edit(without, func(*thumbjob.Info) {}), true},
		{"no info", with, resultMeta{}, false},
		{"no input format", with, edit(with, func(i *thumbjob.Info) { i.Format = "svg" }), false},
		{"no width", with, edit(with, func(i *thumbjob.Info) { i.Width = 0 }), false},
		{"orientation 9", with, edit(with, func(i *thumbjob.Info) { i.Orientation = 9 }), false},
		{"more delays than frames", with, edit(with, func(i *thumbjob.Info) { i.DelaysMS = []int{1, 2} }), false},
		{"long space", with, edit(with, func(i *thumbjob.Info) { i.Space = strings.Repeat("s", 33) }), false},
		{"hash not asked", without, edit(with, func(*thumbjob.Info) {}), false},
		{"hash missing", with, edit(without, func(*thumbjob.Info) {}), false},
		{"hash not base64", with, edit(with, func(i *thumbjob.Info) { i.ThumbHash = "<script>" }), false},
		{"hash too long", with, edit(with, func(i *thumbjob.Info) { i.ThumbHash = strings.Repeat("AAAA", 13) }), false},
		{"hash too short", with, edit(with, func(i *thumbjob.Info) { i.ThumbHash = "AAAA" }), false},
	} {
		info, err := infoResult(tc.job, tc.meta)
		if tc.ok && (err != nil || !reflect.DeepEqual(info, echoInfo(tc.job))) || !tc.ok && !isProtocol(err) {
			t.Errorf("%s: %+v %v", tc.name, info, err)
		}
	}
}

// A worker answers info jobs and thumbnail jobs on the same socket, in
// any order: one frame kind, the job saying which it is.
func TestWorkerServesInfoJobs(t *testing.T) {
	ours, theirs := net.Pipe()
	defer ours.Close()
	go Worker{Engine: echo{}, MaxSource: 10}.Serve(theirs, Hello{PID: 1})
	var h Hello
	readFrame(ours, kindHello, &h, 0)
	for _, info := range []bool{true, false, true} {
		j := thumbjob.Job{Options: job(8)}
		if info {
			j = thumbjob.Job{Info: &thumbjob.InfoJob{ThumbHash: true}}
		}
		go writeFrame(ours, kindJob, jobMeta{Job: j}, []byte("src"))
		var meta resultMeta
		payload, err := readFrame(ours, kindResult, &meta, 1<<20)
		switch {
		case err != nil:
			t.Fatalf("info %t: %v", info, err)
		case info:
			if info, err := infoResult(thumbjob.InfoJob{ThumbHash: true}, meta); err != nil || len(payload) != 0 {
				t.Errorf("info: %+v %v, %d bytes", info, err, len(payload))
			}
		default:
			if _, err := (&Cell{spec: &Spec{MaxSide: 100}}).result(job(8), meta, payload); err != nil {
				t.Errorf("thumbnail: %v", err)
			}
		}
	}
}

// A cell reads its job's source, which the supervisor read and bounded
// itself, into one buffer of the declared size: no copy as it grows.
func TestJobSourceIsReadIntoOneBuffer(t *testing.T) {
	src := make([]byte, 5<<20)
	var frame bytes.Buffer
	writeFrame(&frame, kindJob, jobMeta{}, src)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := readFrameOf(&frame, kindJob, &jobMeta{}, 8<<20, true)
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != len(src) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	// Growing from 1 MiB by doubling allocates 1+2+4+5 MiB.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 6<<20 {
		t.Errorf("reading a 5 MiB source allocated %d bytes", grew)
	}
}

// seen is echo that hands each source it gets to got.
type seen struct {
	echo
	got chan thumbjob.Source
}

func (s seen) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	s.got <- src
	return s.echo.Run(ctx, src, job)
}

// A job's source reaches the cell's engine with what the supervisor's
// look found: the format and the whole header, a HEIF's embedded
// thumbnail and nclx colour included, which the engine uses and never
// reads again.
func TestJobSourceKeepsTheLook(t *testing.T) {
	ours, theirs := net.Pipe()
	defer ours.Close()
	eng := seen{got: make(chan thumbjob.Source, 1)}
	go Worker{Engine: eng, MaxSource: 10}.Serve(theirs, Hello{PID: 1})
	var h Hello
	readFrame(ours, kindHello, &h, 0)
	sent := thumbjob.Source{Format: imagefmt.HEIC, Header: thumbjob.Header{
		Format: imagefmt.HEIC, Width: 4032, Height: 3024, Bands: 3, BytesPerSample: 1, Frames: 1, BitDepth: 8,
		ThumbWidth: 320, ThumbHeight: 240, ThumbCoded: true,
		NCLX: thumbjob.NCLX{Primaries: 12, Transfer: 13, Matrix: 6, FullRange: true},
	}}
	go writeFrame(ours, kindJob, jobMeta{Job: thumbjob.Job{Options: job(8)}, Source: sent}, []byte("src"))
	got := <-eng.got
	if string(got.Bytes) != "src" {
		t.Errorf("bytes %q, want the frame's payload", got.Bytes)
	}
	got.Bytes = nil
	if !reflect.DeepEqual(got, sent) {
		t.Errorf("the engine got %+v, want %+v", got, sent)
	}
	var meta resultMeta
	if _, err := readFrame(ours, kindResult, &meta, 1<<20); err != nil {
		t.Fatal(err)
	}
}
