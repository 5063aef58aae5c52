package source

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkDirKey measures what a directory file's key costs (issue 39,
// finding 2): the stat it takes now (name, size, modification time) against
// reading and hashing the file (a key that names the bytes), for small
// files. Each iteration is one key of one file in the page cache.
func BenchmarkDirKey(b *testing.B) {
	dir := b.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	for _, size := range []int{16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20} {
		name := "f" + strconv.Itoa(size)
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
		d := &Dir{Root: root}
		b.Run("stat/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			for b.Loop() {
				if d.File(name).Key() == "" {
					b.Fatal("no key")
				}
			}
		})
		b.Run("read+sha256/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			b.SetBytes(int64(size))
			buf := make([]byte, 64<<10)
			for b.Loop() {
				f, err := root.Open(name)
				if err != nil {
					b.Fatal(err)
				}
				h := sha256.New()
				if _, err := io.CopyBuffer(h, f, buf); err != nil {
					b.Fatal(err)
				}
				f.Close()
				h.Sum(nil)
			}
		})
	}
}
