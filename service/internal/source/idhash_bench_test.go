package source

import (
	"crypto/rand"
	"crypto/sha256"
	"hash"
	"testing"
)

// BenchmarkIDHash is what identifying bytes by a hash costs, 64 KiB a
// write as a read hashes them: SHA-256 (the identity of every source
// before issue 49) against the keyed HighwayHash-256 of IDHash, at the
// size of a turn, of the 12 MP photo and of a 25 MB TIFF.
func BenchmarkIDHash(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64KiB", 64 << 10}, {"3.7MB", 3_700_000}, {"25MB", 25_000_000}} {
		data := make([]byte, size.n)
		rand.Read(data)
		for _, h := range []struct {
			name string
			new  func() hash.Hash
		}{{"sha256", sha256.New}, {"highwayhash", NewIDHash(nil)}} {
			b.Run(h.name+"/"+size.name, func(b *testing.B) {
				b.SetBytes(int64(size.n))
				for b.Loop() {
					d := h.new()
					for off := 0; off < len(data); off += turn {
						d.Write(data[off:min(off+turn, len(data))])
					}
					d.Sum(nil)
				}
			})
		}
	}
}
