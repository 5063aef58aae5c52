package s3test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// The kit does what the storage tests rely on: buckets and objects through
// the S3 API, files placed by hand served with no ETag, and a server that
// can be paused (requests go unanswered), resumed, killed (connections
// refused) and started again with its objects.
func TestServer(t *testing.T) {
	s := ForTest(t)
	ctx := context.Background()
	if err := s.MakeBucket(ctx, "images"); err != nil {
		t.Fatal(err)
	}
	etag, err := s.Put(ctx, "images", "a/b.jpg", []byte("abc"))
	if err != nil || etag == "" {
		t.Fatalf("put: %q %v", etag, err)
	}
	if got := s.get(t, "images", "a/b.jpg"); got != "abc" {
		t.Fatalf("got %q", got)
	}
	if err := s.Place("images", "placed.jpg", []byte("by hand")); err != nil {
		t.Fatal(err)
	}
	info, err := s.client.StatObject(ctx, "images", "placed.jpg", minio.StatObjectOptions{})
	if err != nil || info.Size != 7 || info.ETag != "" {
		t.Fatalf("placed: %+v %v", info, err)
	}

	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = s.client.StatObject(short, "images", "a/b.jpg", minio.StatObjectOptions{})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) && short.Err() == nil {
		t.Fatalf("paused: %v, want the deadline", err)
	}
	s.Resume()
	if got := s.get(t, "images", "a/b.jpg"); got != "abc" {
		t.Fatalf("resumed: %q", got)
	}

	if err := s.Kill(); err != nil || !s.Refuses() {
		t.Fatalf("killed: %v, refuses %v", err, s.Refuses())
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := s.get(t, "images", "a/b.jpg"); got != "abc" {
		t.Fatalf("restarted: %q", got)
	}
	if err := s.Stop(); err != nil || !s.Refuses() {
		t.Fatalf("stopped: %v", err)
	}
}

func (s *Server) get(t *testing.T, bucket, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	obj, err := s.client.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
