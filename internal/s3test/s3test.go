// Package s3test runs a real S3 server for the tests and the bench:
// versitygw (github.com/versity/versitygw, built by
// scripts/build-versitygw.sh), serving directories on a free loopback port
// with SigV4 authentication. Its buckets are subdirectories of Root, its
// objects plain files there, its metadata (ETags, content types) in a
// sidecar directory, so it needs no extended attributes.
//
// A test calls ForTest, which skips without THUMBD_VERSITYGW (and fails in
// CI, where scripts/test.sh sets it). The bench calls Start with the
// binary's path. Either way the server can be stopped, killed, paused
// (SIGSTOP: connections are accepted by the kernel, nothing is answered)
// and resumed, and started again on the same port and directories.
package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/procfs"
	"github.com/thumbd/thumbd/internal/toolbin"
)

// The credentials the server accepts, and its region.
const (
	AccessKey = "thumbd-test"
	SecretKey = "thumbd-test-secret-key"
	Region    = "us-east-1"
)

// ReadyTimeout bounds the wait for a started server to answer.
const ReadyTimeout = 15 * time.Second

// Server is one versitygw.
type Server struct {
	Binary   string
	Addr     string // 127.0.0.1:PORT
	Endpoint string // http://127.0.0.1:PORT
	Root     string // each subdirectory is a bucket
	Meta     string // the sidecar metadata directory
	Log      launch.Log

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	client *minio.Client
}

// ForTest starts a server for t in t's temporary directories, stopped when
// t ends. Without THUMBD_VERSITYGW it skips t, or fails it when CI is set.
func ForTest(t testing.TB) *Server {
	t.Helper()
	bin := toolbin.ForTest(t, "THUMBD_VERSITYGW", "scripts/build-versitygw.sh", "a real S3 server")
	s, err := Start(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("versitygw's log:\n%s", s.Log.String())
		}
	})
	return s
}

// Start runs the binary bin serving dir/root (buckets) with dir/meta
// (metadata) on a free loopback port, and waits until it answers.
func Start(bin, dir string) (*Server, error) {
	port, err := launch.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Binary: bin, Addr: "127.0.0.1:" + strconv.Itoa(port),
		Root: filepath.Join(dir, "root"), Meta: filepath.Join(dir, "meta")}
	s.Endpoint = "http://" + s.Addr
	for _, d := range []string{s.Root, s.Meta} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	s.client, err = minio.New(s.Addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: Region})
	if err != nil {
		return nil, err
	}
	return s, s.Restart()
}

// Restart starts the server again, on the same port and directories, after
// Stop or Kill (a no-op while it runs), and waits until it answers.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		select {
		case <-s.exited:
		default:
			return nil
		}
	}
	// --keep-alive: versitygw closes every connection after one answer
	// by default (Connection: close), which no S3 service does; without
	// it each bucket call paid a new connection, and a GET a new TCP
	// window that grew too slowly for a source of a few MB.
	cmd := exec.Command(s.Binary, "--port", s.Addr, "--access", AccessKey, "--secret", SecretKey,
		"--region", Region, "--keep-alive", "posix", "--sidecar", s.Meta, s.Root)
	cmd.Stdout, cmd.Stderr = &s.Log, &s.Log
	// Its own process group: a test's ^C reaches the test, which kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("s3test: starting %s: %w", s.Binary, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(ReadyTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("s3test: versitygw exited at start: %s\n%s", cmd.ProcessState, s.Log.String())
		default:
		}
		if answers(s.Endpoint) {
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("s3test: versitygw did not answer on %s within %s\n%s", s.Addr, ReadyTimeout, s.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answers reports whether an HTTP server answers at endpoint (any status:
// an unsigned request is refused, which is an answer).
func answers(endpoint string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(endpoint + "/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// Vars is the AWS SDKs' standard settings that reach this server with
// valid credentials, then over's (a wrong secret, another setting).
func (s *Server) Vars(over map[string]string) map[string]string {
	vars := map[string]string{
		"AWS_ENDPOINT_URL_S3":   s.Endpoint,
		"AWS_REGION":            Region,
		"AWS_ACCESS_KEY_ID":     AccessKey,
		"AWS_SECRET_ACCESS_KEY": SecretKey,
	}
	for k, v := range over {
		vars[k] = v
	}
	return vars
}

// Env is Vars(nil) as KEY=VALUE, for a process's environment.
func (s *Server) Env() []string { return List(s.Vars(nil)) }

// List is vars as KEY=VALUE.
func List(vars map[string]string) []string {
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// MakeBucket creates a bucket through the S3 API.
func (s *Server) MakeBucket(ctx context.Context, name string) error {
	return s.client.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region})
}

// Put stores an object through the S3 API (so it has an ETag) and returns
// its ETag.
func (s *Server) Put(ctx context.Context, bucket, key string, body []byte) (string, error) {
	info, err := s.client.PutObject(ctx, bucket, key, bytes.NewReader(body), int64(len(body)),
		minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return info.ETag, err
}

// PutReader stores size bytes of r as key in one streamed PUT (no
// multipart, nothing held in memory): an object larger than a test would
// hold, a video of a gigabyte.
func (s *Server) PutReader(ctx context.Context, bucket, key string, r io.Reader, size int64) (string, error) {
	info, err := s.client.PutObject(ctx, bucket, key, r, size,
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true})
	return info.ETag, err
}

// Place writes an object's file by hand, beside the server: it is served
// with an empty ETag, as gateways serve files they did not write.
func (s *Server) Place(bucket, key string, body []byte) error {
	path := filepath.Join(s.Root, bucket, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}

// Stop ends the server with SIGTERM and waits for it (SIGKILL after 5 s).
func (s *Server) Stop() error { return s.end(syscall.SIGTERM, 5*time.Second) }

// Kill ends the server with SIGKILL and waits for it.
func (s *Server) Kill() error { return s.end(syscall.SIGKILL, 5*time.Second) }

func (s *Server) end(sig syscall.Signal, grace time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot act on SIGTERM
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
		return nil
	case <-time.After(grace):
	}
	s.cmd.Process.Kill()
	select {
	case <-s.exited:
		return fmt.Errorf("s3test: versitygw ignored %s for %s: killed", sig, grace)
	case <-time.After(grace):
		return errors.New("s3test: versitygw outlived SIGKILL")
	}
}

// Pause stops the server with SIGSTOP and returns once every thread of it
// is stopped (the signal is delivered as threads are scheduled: a request
// sent at once could otherwise still be answered). The kernel still
// accepts its connections; nobody answers them. Resume continues it.
func (s *Server) Pause() error {
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for !stopped(s.PID()) {
		if time.Now().After(deadline) {
			return errors.New("s3test: versitygw not stopped 5 s after SIGSTOP")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// stopped reports whether every thread of pid is stopped (state T).
func stopped(pid int) bool {
	states, err := procfs.ThreadStates(pid)
	return err == nil && !slices.ContainsFunc(states, func(s string) bool { return s != "T" })
}

// Resume continues a paused server.
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("s3test: not started")
	}
	return s.cmd.Process.Signal(sig)
}

// PID is the server process's ID.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Refuses reports whether nothing listens on the server's port any more.
func (s *Server) Refuses() bool {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err != nil
}
