package bucket

import (
	"context"
	"io"
	"net/http/httptrace"
	"sync/atomic"
	"testing"

	"github.com/thumbd/thumbd/internal/s3test"
)

// Calls share kept-alive connections: a miss (a 404 read by the
// transport), a PUT and a GET read to its end each leave the connection
// for the next call (s3test runs versitygw with --keep-alive, as S3
// services keep them).
func TestConnectionsReused(t *testing.T) {
	s := s3test.ForTest(t)
	ctx := context.Background()
	if err := s.MakeBucket(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	vars := s.Vars(nil)
	conn, err := FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Location{Bucket: "kept"}, conn, Options{Use: "result_store"})
	if err != nil {
		t.Fatal(err)
	}
	var fresh atomic.Int64
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			fresh.Add(1)
		}
	}})
	calls := map[string]func() error{
		"miss": func() error {
			if _, err := c.Get(ctx, "missing", GetOptions{}); !NotFound(err) {
				t.Fatalf("a missing key: %v", err)
			}
			return nil
		},
		"put": func() error { return c.Put(ctx, "k", []byte("hello"), "image/webp", nil) },
		"get": func() error {
			r, err := c.Get(ctx, "k", GetOptions{})
			if err != nil {
				return err
			}
			defer r.Close()
			_, err = io.ReadAll(r)
			return err
		},
	}
	for _, name := range []string{"put", "miss", "put", "get"} {
		before := fresh.Load()
		for range 5 {
			if err := calls[name](); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if n := fresh.Load() - before; n > 0 && before > 0 {
			t.Errorf("%s: %d new connections in 5 calls, want none", name, n)
		}
	}
	if n := fresh.Load(); n != 1 {
		t.Errorf("%d connections opened, want 1", n)
	}
}
