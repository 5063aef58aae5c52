package bucketsource

import (
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/s3test"
	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/source"
)

// The 12 MP photo's size (bench storage's sources step).
const photoBytes = 3724857

// BenchmarkRead splits a bucket source's read of the 12 MP photo's size
// from versitygw on loopback: dir is the same bytes from a directory
// (read and hashed), bucket the whole source (the HEAD, then the GET read
// and hashed through the budget), stat the HEAD alone, readfile a file's
// bytes alone, get-headers a GET to its headers, get-readall a GET's
// body read without hashing. Run with GOMAXPROCS=1 for thumbd's one CPU
// in bench storage.
func BenchmarkRead(b *testing.B) {
	s := s3test.ForTest(b)
	ctx := context.Background()
	if err := s.MakeBucket(ctx, "images"); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, photoBytes)
	rand.Read(body)
	if _, err := s.Put(ctx, "images", "photo.jpg", body); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "photo.jpg"), body, 0o644); err != nil {
		b.Fatal(err)
	}
	vars := s.Vars(nil)
	conn, err := bucket.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		b.Fatal(err)
	}
	client, err := bucket.New(bucket.Location{Bucket: "images"}, conn, bucket.Options{Use: "source"})
	if err != nil {
		b.Fatal(err)
	}
	limits := source.Limits{MaxBytes: 64 << 20, Budget: admission.NewBytes(1 << 30), Wait: time.Second}
	src := New(client, limits, Config{})
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	d := &source.Dir{Limits: limits, Root: root}
	b.Run("dir", func(b *testing.B) {
		for b.Loop() {
			blob, err := d.File("photo.jpg").Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			blob.Release()
		}
	})
	b.Run("bucket", func(b *testing.B) {
		for b.Loop() {
			o, _ := src.Object("photo.jpg")
			k, err := o.Identify(ctx)
			if err != nil {
				b.Fatal(err)
			}
			blob, err := k.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			blob.Release()
		}
	})
	b.Run("stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := client.Stat(ctx, "photo.jpg"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("readfile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(dir, "photo.jpg")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get-headers", func(b *testing.B) {
		for b.Loop() {
			r, err := client.Get(ctx, "photo.jpg", bucket.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
	b.Run("get-readall", func(b *testing.B) {
		for b.Loop() {
			r, err := client.Get(ctx, "photo.jpg", bucket.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
}
