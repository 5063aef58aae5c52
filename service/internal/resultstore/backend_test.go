package resultstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/s3test"
	"github.com/thumbd/thumbd/service/internal/bucket"
)

// backendCase is one kind of backend: setup (run once per test) gives a
// maker of fresh, empty backends of that kind, and makers of the same kind
// configured wrongly, which Check must refuse.
type backendCase struct {
	name  string
	setup func(t *testing.T) (fresh func(t *testing.T) Backend, refused []func(t *testing.T) Backend)
	// metaApart: the metadata is written apart from the body, so a reader
	// racing a writer may see one write's metadata beside another's whole
	// body. versitygw keeps it in a sidecar file; S3 writes both in one
	// PUT. The store checks the body against its digest (TestStoreMixedWrite).
	metaApart bool
}

// backendCases are every backend the table runs against.
func backendCases() []backendCase {
	return []backendCase{
		{"dir", func(*testing.T) (func(*testing.T) Backend, []func(*testing.T) Backend) {
			return func(t *testing.T) Backend { return Dir{Root: t.TempDir()} }, []func(*testing.T) Backend{
				func(t *testing.T) Backend { return Dir{Root: filepath.Join(t.TempDir(), "missing")} },
				func(t *testing.T) Backend {
					f := filepath.Join(t.TempDir(), "file")
					os.WriteFile(f, nil, 0o644)
					return Dir{Root: f}
				},
				func(t *testing.T) Backend {
					if os.Geteuid() == 0 {
						t.Skip("root writes in a read-only directory")
					}
					d := t.TempDir()
					os.Chmod(d, 0o555)
					return Dir{Root: d}
				},
			}
		}, false},
		{"bucket", func(t *testing.T) (func(*testing.T) Backend, []func(*testing.T) Backend) {
			srv := s3test.ForTest(t)
			var n atomic.Int32
			return func(t *testing.T) Backend {
					name := fmt.Sprintf("store-%d", n.Add(1))
					if err := srv.MakeBucket(context.Background(), name); err != nil {
						t.Fatal(err)
					}
					return bucketBackend(t, srv.Env(), "s3://"+name+"/thumbs")
				}, []func(*testing.T) Backend{
					func(t *testing.T) Backend {
						return bucketBackend(t, append(srv.Env(), "AWS_SECRET_ACCESS_KEY=wrong-secret"), "s3://store-1")
					},
					func(t *testing.T) Backend { return bucketBackend(t, srv.Env(), "s3://no-such-bucket") },
				}
		}, true},
	}
}

// bucketBackend is a Bucket at url reached with env's AWS variables (the
// last of a name wins).
func bucketBackend(t *testing.T, env []string, url string) Bucket {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	conn, err := bucket.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	loc, err := bucket.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bucket.New(loc, conn, bucket.Options{Use: "result_store"})
	if err != nil {
		t.Fatal(err)
	}
	return Bucket{Client: c}
}

func object(body string) Object {
	return Object{ContentType: "image/webp", Meta: map[string]string{"etag": `"` + body + `"`, "vary": "Accept, Sec-CH-DPR"}, Body: []byte(body)}
}

func TestBackends(t *testing.T) {
	ctx := context.Background()
	for _, bc := range backendCases() {
		t.Run(bc.name, func(t *testing.T) {
			fresh, refused := bc.setup(t)
			t.Run("missing", func(t *testing.T) {
				_, err := fresh(t).Get(ctx, "0123/4567", Limits{Max: 1 << 20})
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Get of a key never put: %v, want ErrNotFound", err)
				}
			})
			t.Run("put then get, replace", func(t *testing.T) {
				b := fresh(t)
				for _, body := range []string{"first", "second, longer than the first"} {
					want := object(body)
					if err := b.Put(ctx, "abcd/ef01", want); err != nil {
						t.Fatal(err)
					}
					got, err := b.Get(ctx, "abcd/ef01", Limits{Max: 1 << 20})
					if err != nil {
						t.Fatal(err)
					}
					if got.ContentType != want.ContentType || !bytes.Equal(got.Body, want.Body) || !maps.Equal(got.Meta, want.Meta) {
						t.Fatalf("got %q %q %v, want %q %q %v", got.ContentType, got.Body, got.Meta, want.ContentType, want.Body, want.Meta)
					}
				}
			})
			t.Run("over the bound", func(t *testing.T) {
				b := fresh(t)
				if err := b.Put(ctx, "abcd/big", object("0123456789")); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Get(ctx, "abcd/big", Limits{Max: 9}); err == nil || errors.Is(err, ErrNotFound) {
					t.Fatalf("Get of 10 bytes bounded at 9: %v, want an error", err)
				}
				if _, err := b.Get(ctx, "abcd/big", Limits{Max: 10}); err != nil {
					t.Fatalf("Get of 10 bytes bounded at 10: %v", err)
				}
			})
			t.Run("never half visible", func(t *testing.T) {
				// Readers see one whole version or none while a writer
				// replaces the object with versions of other sizes.
				b := fresh(t)
				versions := map[string]bool{}
				for i := range 4 {
					versions[string(bytes.Repeat([]byte{'a' + byte(i)}, 1<<(14+i)))] = true
				}
				stop := time.Now().Add(2 * time.Second)
				var wg sync.WaitGroup
				errs := make(chan error, 8)
				wg.Go(func() {
					for i := 0; time.Now().Before(stop) && i < 200; i++ {
						for v := range versions {
							if err := b.Put(ctx, "aaaa/same", Object{ContentType: "image/png", Meta: map[string]string{"len": fmt.Sprint(len(v))}, Body: []byte(v)}); err != nil {
								errs <- err
								return
							}
						}
					}
				})
				for range 2 {
					wg.Go(func() {
						for time.Now().Before(stop) {
							o, err := b.Get(ctx, "aaaa/same", Limits{Max: 1 << 20})
							if errors.Is(err, ErrNotFound) {
								continue
							}
							if err != nil {
								errs <- err
								return
							}
							if !versions[string(o.Body)] || !bc.metaApart && o.Meta["len"] != fmt.Sprint(len(o.Body)) {
								errs <- fmt.Errorf("read %d bytes with metadata %v: not one version written", len(o.Body), o.Meta)
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
			t.Run("check", func(t *testing.T) {
				if err := fresh(t).Check(ctx); err != nil {
					t.Fatalf("Check of a usable backend: %v", err)
				}
				for i, refused := range refused {
					t.Run(fmt.Sprint("refused ", i), func(t *testing.T) {
						var r *RefusedError
						if err := refused(t).Check(ctx); !errors.As(err, &r) {
							t.Errorf("Check gave %v, want a *RefusedError", err)
						}
					})
				}
			})
		})
	}
}
