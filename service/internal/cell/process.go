package cell

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"

	"github.com/thumbd/thumbd/internal/procfs"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/sandbox"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Spec says how to start a cell and what to accept from it.
type Spec struct {
	Path string   // the thumbd binary
	Args []string // its arguments: "cell" and the cell's flags
	Env  []string // nil: the supervisor's environment
	// Stderr receives the cell's output as the supervisor's own JSON
	// records ("cell output", cell_pid, line), never the cell's bytes:
	// each cell writes into a pipe of its own (see relayOutput).
	Stderr io.Writer
	// Listen, when set, is a Unix socket path the cell connects to instead
	// of inheriting a socket: for a cell in a container, reached through a
	// shared volume (the bench's container arm). Its hello's PID is then
	// the container's and is not checked.
	Listen string

	// RequireSandbox refuses a cell whose hello reports a sandbox layer
	// off (THUMBD_SANDBOX_REQUIRED); otherwise such a cell serves.
	RequireSandbox bool

	MaxSource int64 // the largest source sent to a cell
	MaxSide   int   // the largest width or height accepted back
	// MaxAnimationPixels is the most frames x width x height an animated
	// job may make: it bounds an animated job's result, as MaxSide and the
	// job's own box bound a still one's.
	MaxAnimationPixels int64
}

// No encoder thumbd runs writes more than resultBytesPerPixel bytes a
// pixel plus resultHeaders: libjpeg-turbo's worst case is 6 bytes a pixel
// (tj3JPEGBufSize, 4:4:4), PNG's about 4 (RGBA in stored zlib blocks), and
// headers stay far under 64 KiB with metadata stripped.
const (
	resultBytesPerPixel = 6
	resultHeaders       = 64 << 10
)

// resultBound is the most bytes a cell may answer o with: the job's box
// (MaxSide for a side the job leaves to the source's aspect ratio) and
// its padding, or
// for an animated job the animation's pixel limit, at the worst case per
// pixel. A cell that declares more breaks the protocol before anything is
// allocated for it.
func (s *Spec) resultBound(o thumbjob.Options) int64 {
	side := func(n int) int64 {
		if n <= 0 || n > s.MaxSide {
			return int64(s.MaxSide)
		}
		return int64(n)
	}
	// pad= adds to the box's sides.
	px := (side(o.Width) + int64(o.Pad.Left+o.Pad.Right)) * (side(o.Height) + int64(o.Pad.Top+o.Pad.Bottom))
	if o.Animated {
		px = max(px, s.MaxAnimationPixels)
	}
	return resultBytesPerPixel*px + resultHeaders
}

// ErrCrashed is the error of a job whose cell died under it or broke the
// protocol: the job is lost and is not retried (a source that kills a cell
// would kill the next one too).
var ErrCrashed = errors.New("the cell running the thumbnail crashed")

// ErrSandboxOff is the start-up error of a cell whose hello reports a
// sandbox layer off while Spec.RequireSandbox is set.
var ErrSandboxOff = errors.New("a required sandbox layer is off")

// CrashError says how a cell ended a job. It is logged with the request.
type CrashError struct {
	PID int
	// Exit is how the process ended, in few words fit for a metric label:
	// "signal SIGSEGV", "exit status 2", or "protocol" for a cell that
	// answered outside the protocol (and was killed).
	Exit   string
	Detail string // the protocol error, if any
}

func (e *CrashError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("cell %d: %s: %s", e.PID, e.Exit, e.Detail)
	}
	return fmt.Sprintf("cell %d: %s", e.PID, e.Exit)
}

func (e *CrashError) Is(target error) bool { return target == ErrCrashed }

// LogValue makes the cell's PID and fate fields of the log line.
func (e *CrashError) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Int("cell_pid", e.PID), slog.String("exit", e.Exit)}
	if e.Detail != "" {
		attrs = append(attrs, slog.String("detail", e.Detail))
	}
	return slog.GroupValue(attrs...)
}

// Cell is the supervisor's handle on one cell process. One job at a time.
type Cell struct {
	spec   *Spec
	cmd    *exec.Cmd
	conn   *net.UnixConn
	hello  Hello
	exited chan struct{} // closed once the process is reaped
	killed atomic.Bool   // the supervisor sent SIGKILL
}

// Start starts a cell and waits, within ctx, for its hello: libvips up and
// the sandbox applied. On error no process or descriptor is left behind.
func Start(ctx context.Context, spec *Spec) (*Cell, error) {
	if spec.Listen != "" {
		return startListening(ctx, spec)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cell socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "cell-supervisor"), os.NewFile(uintptr(fds[1]), "cell-socket")
	cmd := command(spec)
	cmd.ExtraFiles = []*os.File{theirs} // fd 3 in the cell
	output, err := startWithOutput(cmd, spec)
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("cell: %w", err)
	}
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		<-output
		return nil, fmt.Errorf("cell socket: %w", err)
	}
	return handshake(ctx, spec, cmd, fc.(*net.UnixConn), output)
}

// startWithOutput starts cmd with its stderr on a pipe of its own, which
// relayOutput reads; the returned channel is closed once the pipe is
// drained (the cell has exited). A cell never writes to the supervisor's
// stderr, where it could forge the supervisor's log lines.
func startWithOutput(cmd *exec.Cmd, spec *Spec) (<-chan struct{}, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		relayOutput(r, spec.Stderr, cmd.Process.Pid)
	}()
	return done, nil
}

// A cell's output is bounded: lines are cut at maxOutputLine bytes, and
// at most outputBurst lines pass at once, then outputRate a second; the
// rest are dropped and counted.
const (
	maxOutputLine = 2 << 10
	outputBurst   = 100
	outputRate    = 10
)

// relayOutput reads a cell's output line by line and writes each as a
// record of the supervisor's own (JSON, "cell output"), the line a string
// field tagged with the cell's PID: nothing the cell writes is read as the
// supervisor's log. It returns at the pipe's end.
func relayOutput(r io.Reader, to io.Writer, pid int) {
	if to == nil {
		to = io.Discard
	}
	log := slog.New(slog.NewJSONHandler(to, nil))
	br := bufio.NewReaderSize(r, maxOutputLine)
	tokens, last, dropped := float64(outputBurst), time.Now(), 0
	for {
		line, err := br.ReadSlice('\n')
		truncated := errors.Is(err, bufio.ErrBufferFull)
		if truncated {
			// Skip the rest of the long line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if len(line) > 0 {
			now := time.Now()
			tokens = min(outputBurst, tokens+now.Sub(last).Seconds()*outputRate)
			last = now
			if tokens < 1 {
				dropped++
			} else {
				tokens--
				attrs := []any{"cell_pid", pid, "line", strings.TrimRight(string(line), "\n")}
				if truncated {
					attrs = append(attrs, "truncated", true)
				}
				if dropped > 0 {
					attrs = append(attrs, "dropped_before", dropped)
					dropped = 0
				}
				log.Info("cell output", attrs...)
			}
		}
		if err != nil {
			if dropped > 0 {
				log.Info("cell output", "cell_pid", pid, "line", "", "dropped_before", dropped)
			}
			return
		}
	}
}

// SealInherited marks every descriptor from 3 up close-on-exec. Call it
// once, before the first Start: descriptors the supervisor was handed
// without the flag (a careless parent's, a socket-activating init's) would
// otherwise pass through exec into every cell. Go opens its own with the
// flag, so nothing the supervisor uses changes. close_range(2) does it in
// one call since Linux 5.11; before, each descriptor in /proc/self/fd.
func SealInherited() error {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	fds, err := procfs.FDs(os.Getpid())
	if err != nil {
		return fmt.Errorf("inherited descriptors: %w", err)
	}
	for _, fd := range fds {
		if fd < 3 {
			continue
		}
		// The directory's own descriptor is gone by now: EBADF.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("inherited descriptor %d: %w", fd, err)
		}
	}
	return nil
}

func command(spec *Spec) *exec.Cmd {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	// A cell outlives a supervisor killed outright only until this signal;
	// one that is idle also leaves on its socket's EOF.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startListening starts a cell that connects to spec.Listen.
func startListening(ctx context.Context, spec *Spec) (*Cell, error) {
	os.Remove(spec.Listen)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: spec.Listen, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("cell socket: %w", err)
	}
	defer ln.Close()
	// The cell may run as another user (a container's non-root one).
	os.Chmod(spec.Listen, 0o666)
	cmd := command(spec)
	output, err := startWithOutput(cmd, spec)
	if err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { ln.SetDeadline(time.Unix(1, 0)) })
	conn, err := ln.AcceptUnix()
	stop()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		<-output
		return nil, fmt.Errorf("cell did not connect: %w", err)
	}
	return handshake(ctx, spec, cmd, conn, output)
}

// handshake watches the started process and waits, within ctx, for its
// hello on conn.
func handshake(ctx context.Context, spec *Spec, cmd *exec.Cmd, conn *net.UnixConn, output <-chan struct{}) (*Cell, error) {
	c := &Cell{spec: spec, cmd: cmd, conn: conn, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		c.conn.Close()
		// The cell's last lines (a crash's) are written before its end
		// is reported.
		<-output
		close(c.exited)
	}()
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	_, err := readFrame(c.conn, kindHello, &c.hello, 0)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err == nil && spec.Listen == "" && c.hello.PID != cmd.Process.Pid {
		err = fmt.Errorf("%w: hello from pid %d", ErrProtocol, c.hello.PID)
	}
	if err == nil && spec.RequireSandbox {
		err = sandboxOff(c.hello.Sandbox)
	}
	if err != nil {
		c.Kill()
		<-c.exited
		if c.Crashed() {
			return nil, fmt.Errorf("cell %d did not start: %w", cmd.Process.Pid, &CrashError{PID: cmd.Process.Pid, Exit: c.Exit(), Detail: err.Error()})
		}
		return nil, fmt.Errorf("cell %d did not start: %w (%s)", cmd.Process.Pid, err, c.Exit())
	}
	return c, nil
}

// sandboxOff names every layer a hello reports off, or leaves out, with
// its reason; nil when all are on.
func sandboxOff(layers []sandbox.Layer) error {
	var off []string
	for _, name := range sandbox.Names() {
		i := slices.IndexFunc(layers, func(l sandbox.Layer) bool { return l.Name == name })
		switch {
		case i < 0:
			off = append(off, name+" (not reported)")
		case !layers[i].On:
			off = append(off, name+" ("+layers[i].Detail+")")
		}
	}
	if len(off) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrSandboxOff, strings.Join(off, ", "))
}

// PID is the cell's process ID.
func (c *Cell) PID() int { return c.cmd.Process.Pid }

// Hello is what the cell said when it was ready.
func (c *Cell) Hello() Hello { return c.hello }

// Exited is closed once the cell's process has ended and been reaped.
func (c *Cell) Exited() <-chan struct{} { return c.exited }

// Kill ends the cell at once; the process is reaped in the background.
func (c *Cell) Kill() {
	c.killed.Store(true)
	c.cmd.Process.Kill()
}

// Close asks the cell to leave: it exits when it reads the socket's end.
// A cell that is still there after grace is killed.
func (c *Cell) Close(grace time.Duration) {
	c.conn.CloseWrite()
	select {
	case <-c.exited:
	case <-time.After(grace):
		c.Kill()
		<-c.exited
	}
}

// Exit describes how the process ended ("signal SIGSEGV", "exit status 2");
// call it once Exited is closed.
func (c *Cell) Exit() string {
	st := c.cmd.ProcessState
	if st == nil {
		return "running"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + unix.SignalName(ws.Signal())
	}
	return st.String()
}

// Crashed reports whether the process, once ended, died on its own: by a
// signal the supervisor did not send, or with an exit status other than 0
// (a cell exits 0 only when its socket closes). Call it once Exited is
// closed.
func (c *Cell) Crashed() bool {
	st := c.cmd.ProcessState
	if st == nil {
		return false
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return !(c.killed.Load() && ws.Signal() == syscall.SIGKILL)
	}
	return st.ExitCode() != 0
}

// RSS is the cell's resident memory now (VmRSS).
func (c *Cell) RSS() (int64, error) {
	st, err := procfs.Read(c.PID())
	return st.VmRSS, err
}

// Run runs one job in the cell, a thumbnail or a description (the
// in-process engine's one call, across the socket; a description's byte
// size is left to the caller). When ctx ends first the cell is killed
// (libvips cannot be interrupted; the process can) and ctx's error
// returned: then, and only then, is the error ctx's. A cell that dies
// under the job, or answers outside the protocol, gives a *CrashError;
// the caller must not use the cell again after any error but a typed
// engine error.
func (c *Cell) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, Stats, error) {
	if int64(len(src.Bytes)) > c.spec.MaxSource {
		return thumbjob.Result{}, Stats{}, fmt.Errorf("cell: a %d-byte source, more than the %d allowed", len(src.Bytes), c.spec.MaxSource)
	}
	var res thumbjob.Result
	meta := jobMeta{Job: job, Source: src, Traceparent: traceparent(ctx)}
	var bound int64 // a description has no payload
	if job.Info == nil {
		bound = c.spec.resultBound(job.Options)
	} else {
		meta.Traceparent = "" // descriptions are not traced stage by stage
	}
	stats, err := c.exchange(ctx, meta, src.Bytes, bound, func(r resultMeta, payload []byte, hop thumbjob.Stage) (err error) {
		if job.Info != nil {
			var info thumbjob.Info
			info, err = infoResult(*job.Info, r)
			res.Info = &info
			return err
		}
		res.Image, err = c.result(job.Options, r, payload)
		if err == nil && meta.Traceparent != "" {
			res.Image.Trace = cellTrace(meta.Traceparent, r, hop)
		}
		return err
	})
	return res, stats, err
}

// exchange sends one job frame and reads its result frame (a payload of
// at most bound bytes), which check turns into the job's answer, as Run
// says; check is also given when the job was sent and its result read.
func (c *Cell) exchange(ctx context.Context, job jobMeta, src []byte, bound int64, check func(meta resultMeta, payload []byte, hop thumbjob.Stage) error) (Stats, error) {
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	var meta resultMeta
	var payload []byte
	sent := time.Now()
	err := writeFrame(c.conn, kindJob, job, src)
	if err == nil {
		payload, err = readFrame(c.conn, kindResult, &meta, bound)
	}
	received := time.Now()
	if !stop() {
		// ctx ended during the job: the answer would be late, and the
		// socket's deadline is spent.
		c.Kill()
		<-c.exited
		return Stats{}, ctx.Err()
	}
	if err == nil {
		if err = check(meta, payload, thumbjob.Stage{Start: sent, End: received}); err == nil || !errors.Is(err, ErrProtocol) {
			return meta.Stats, err
		}
	}
	return Stats{}, c.crashed(err)
}

// engineError is the engine error a result reports (nil for none), or a
// protocol error for a kind of error the protocol does not know.
func engineError(meta resultMeta) error {
	if meta.Error == "" {
		return nil
	}
	msg := meta.Message
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	if kind, ok := thumbjob.ForCode(apierr.Code(meta.Error)); ok {
		return &remoteError{msg: msg, kind: kind}
	}
	if meta.Error == kindInternal {
		return &remoteError{msg: msg}
	}
	return fmt.Errorf("%w: error kind %q", ErrProtocol, meta.Error)
}

// result checks a result frame against the job and turns it into an image
// or the engine's typed error.
func (c *Cell) result(o thumbjob.Options, meta resultMeta, payload []byte) (thumbjob.Image, error) {
	if err := engineError(meta); err != nil {
		return thumbjob.Image{}, err
	}
	// The bytes must be the format asked for: o.Format, or o.AlphaFormat
	// for a source with transparency (format=auto). Identify, not Sniff:
	// some outputs (AVIF) are no input format.
	spec, ok := imagefmt.Identify(payload)
	asked := spec.Format == o.Format || (o.AlphaFormat != "" && spec.Format == o.AlphaFormat)
	switch {
	case !ok || !asked || meta.Format != string(spec.Format):
		return thumbjob.Image{}, fmt.Errorf("%w: asked for %s, got %q bytes labelled %q", ErrProtocol, o.Format, spec.Format, meta.Format)
	case meta.Width < 1 || meta.Height < 1 || meta.Width > c.spec.MaxSide+o.Pad.Left+o.Pad.Right || meta.Height > c.spec.MaxSide+o.Pad.Top+o.Pad.Bottom:
		return thumbjob.Image{}, fmt.Errorf("%w: a %dx%d image", ErrProtocol, meta.Width, meta.Height)
	}
	return thumbjob.Image{Bytes: payload, Format: spec.Format, Width: meta.Width, Height: meta.Height}, nil
}

// maxThumbHash bounds a ThumbHash's base64 text: the format's longest hash
// is 25 bytes (36 characters).
const maxThumbHash = 48

// infoResult checks an info job's result: a description that could be
// true of some input image, and a ThumbHash only when one was asked.
func infoResult(job thumbjob.InfoJob, meta resultMeta) (thumbjob.Info, error) {
	if err := engineError(meta); err != nil {
		return thumbjob.Info{}, err
	}
	i := meta.Info
	if i == nil {
		return thumbjob.Info{}, fmt.Errorf("%w: an info result without its info", ErrProtocol)
	}
	hash, hashErr := base64.StdEncoding.DecodeString(i.ThumbHash)
	switch {
	case !slices.Contains(imagefmt.Inputs(), i.Format):
		return thumbjob.Info{}, fmt.Errorf("%w: an info result for format %q", ErrProtocol, i.Format)
	case i.Width < 1 || i.Height < 1 || i.StoredWidth < 1 || i.StoredHeight < 1 || i.Orientation < 1 || i.Orientation > 8 || i.Frames < 1:
		return thumbjob.Info{}, fmt.Errorf("%w: an info result of %dx%d (%dx%d stored), orientation %d, %d frames", ErrProtocol, i.Width, i.Height, i.StoredWidth, i.StoredHeight, i.Orientation, i.Frames)
	case len(i.DelaysMS) > i.Frames || len(i.Space) > 32:
		return thumbjob.Info{}, fmt.Errorf("%w: an info result with %d delays for %d frames, space %d bytes", ErrProtocol, len(i.DelaysMS), i.Frames, len(i.Space))
	case job.ThumbHash == (i.ThumbHash == "") || len(i.ThumbHash) > maxThumbHash || hashErr != nil || (job.ThumbHash && len(hash) < 5):
		return thumbjob.Info{}, fmt.Errorf("%w: an info result with ThumbHash %.64q (asked: %t)", ErrProtocol, i.ThumbHash, job.ThumbHash)
	case i.Video != nil && !validVideo(*i.Video):
		return thumbjob.Info{}, fmt.Errorf("%w: an info result with video %+v", ErrProtocol, *i.Video)
	}
	return *i, nil
}

// crashed ends the cell after a failed exchange and says how it ended. A
// cell whose socket closed is dying: it gets a moment to be reaped so that
// its signal is the one reported; one that broke the protocol is killed.
func (c *Cell) crashed(err error) error {
	if errors.Is(err, ErrProtocol) {
		c.Kill()
		<-c.exited
		return &CrashError{PID: c.PID(), Exit: "protocol", Detail: err.Error()}
	}
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
		c.Kill()
		<-c.exited
	}
	return &CrashError{PID: c.PID(), Exit: c.Exit()}
}

// remoteError is an engine error reported by a cell: its text is the
// cell's message, and it matches the engine's typed error it names.
type remoteError struct {
	msg  string
	kind *thumbjob.Error // nil: an error the engine did not type
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error {
	if e.kind == nil {
		return nil // not a typed nil: errors.As would find it
	}
	return e.kind
}

// traceparent is ctx's span context as a W3C traceparent, "" when the
// request is not traced (or not sampled: no span would be recorded).
func traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// cellTrace is the timings a cell reported for the job sent as
// traceparent, checked as everything a cell sends: a result that echoes
// another job's traceparent, or times outside the exchange, or a stage
// thumbd does not know, gives no timings (the image itself is still
// good). exchange is the supervisor's round trip.
func cellTrace(traceparent string, meta resultMeta, exchange thumbjob.Stage) thumbjob.Trace {
	within := func(s thumbjob.Stage) bool {
		return !s.Start.Before(exchange.Start) && !s.End.After(exchange.End) && !s.End.Before(s.Start)
	}
	job := thumbjob.Stage{Start: meta.JobStart, End: meta.JobEnd}
	if meta.Traceparent != traceparent || !within(job) {
		return thumbjob.Trace{Exchange: exchange}
	}
	var t thumbjob.Trace
	if meta.Trace != nil && len(meta.Trace.Stages) <= 3 {
		t = *meta.Trace
		if _, ok := imagefmt.Lookup(t.SourceFormat); !ok && t.SourceFormat != "" {
			t.SourceFormat = "unknown"
		}
		for _, s := range t.Stages {
			known := s.Name == thumbjob.StageDecode || s.Name == thumbjob.StageResize || s.Name == thumbjob.StageEncode
			if !known || !within(s) {
				t.Stages = nil
				break
			}
		}
	}
	t.Job, t.Exchange = job, exchange
	return t
}

// validVideo holds a cell's account of a video to what the container
// reader can say: a known container, a finite duration and frame rate, a
// quarter turn, a known HDR transfer.
func validVideo(v thumbjob.VideoInfo) bool {
	finite := func(f float64) bool { return f >= 0 && f < 1e12 }
	return slices.Contains([]string{"mp4", "mov", "webm", "mkv"}, v.Container) && finite(v.Duration) && finite(v.FrameRate) &&
		v.Rotation%90 == 0 && v.Rotation >= 0 && v.Rotation < 360 && (v.HDR == "" || v.HDR == "pq" || v.HDR == "hlg")
}
