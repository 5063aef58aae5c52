package source

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/admission"
)

// BenchmarkSourceRead is the source stage's read of a large src= file and
// of an upload, as production reads them (the budget, 64 KiB turns, the
// hashing tokens), one at a time: the sizes of issue 49's LZW TIFF
// (25.5 MB) and PNG (31.0 MB) from a directory, and the 12 MP photo
// (3.7 MB) and the TIFF's size as uploads. The bytes are random: neither
// reading nor hashing depends on them. cpu-ns/op is the process's user and
// system time (getrusage) over the loop, which a busy machine inflates
// less than ns/op.
func BenchmarkSourceRead(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	limits := benchLimits()
	d := &Dir{Limits: limits, Root: root}
	for _, f := range []struct {
		name string
		size int
	}{{"tiff-25.5MB", 25_500_000}, {"png-31.0MB", 31_000_000}} {
		data := make([]byte, f.size)
		rand.Read(data)
		if err := os.WriteFile(filepath.Join(dir, f.name), data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run("src/"+f.name, func(b *testing.B) {
			b.SetBytes(int64(f.size))
			cpu := cpuTime(b)
			for b.Loop() {
				blob, err := d.File(f.name).Read(ctx)
				if err != nil {
					b.Fatal(err)
				}
				blob.Release()
			}
			cpu()
		})
	}
	for _, u := range []struct {
		name string
		size int
	}{{"photo-3.7MB", 3_724_857}, {"tiff-25.5MB", 25_500_000}} {
		data := make([]byte, u.size)
		rand.Read(data)
		b.Run("upload/"+u.name, func(b *testing.B) {
			b.SetBytes(int64(u.size))
			cpu := cpuTime(b)
			for b.Loop() {
				blob, err := Upload{Limits: limits, Body: bytes.NewReader(data), Length: int64(u.size)}.Read(ctx)
				if err != nil {
					b.Fatal(err)
				}
				blob.Release()
			}
			cpu()
		})
	}
}

// benchLimits are the service's limits for the benchmark: room for the
// largest source, the hashing tokens one per processor, the uploads' keyed
// hash.
func benchLimits() Limits {
	return Limits{MaxBytes: 64 << 20, Budget: admission.NewBytes(1 << 30), Wait: time.Second,
		Hashers: NewHashers(runtime.GOMAXPROCS(0)), IDs: NewIDHash(nil)}
}

// cpuTime starts counting the process's CPU time; the function it returns
// reports it per iteration as cpu-ns/op.
func cpuTime(b *testing.B) func() {
	used := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := used()
	return func() {
		b.ReportMetric(float64(used()-start)/float64(b.N), "cpu-ns/op")
	}
}
