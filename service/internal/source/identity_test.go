package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/admission"
)

// countingHashers is Hashers of one token that counts the turns hashed:
// every hashed turn holds a token, and this one is taken and given back
// by a goroutine of its own, which counts it.
func countingHashers(t *testing.T) (Hashers, *atomic.Int64) {
	hs := make(Hashers)
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hs:
				n.Add(1)
			case <-done:
				return
			}
			select {
			case hs <- struct{}{}:
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() { close(done) })
	return hs, &n
}

// countingIDs is an IDHash of this process's own key that counts the
// hashes begun.
func countingIDs() (IDHash, *atomic.Int64) {
	var n atomic.Int64
	ids := NewIDHash(nil)
	return func() hash.Hash { n.Add(1); return ids() }, &n
}

// pattern is n bytes that are not all alike.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8 + 1)
	}
	return b
}

// A src= file is read without a hash pass (its identity is its name, size
// and modification time, the version its key names); an upload, which
// has no other identity, is hashed every turn, holding a token each time.
func TestOnlyBytesWithoutIdentityAreHashed(t *testing.T) {
	const size = 1 << 20
	data := pattern(size)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "photo.tif"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	hashers, turns := countingHashers(t)
	ids, hashes := countingIDs()
	limits := Limits{MaxBytes: size, Budget: admission.NewBytes(2 * size), Wait: time.Second, Hashers: hashers, IDs: ids}
	ctx := context.Background()
	f := (&Dir{Limits: limits, Root: root}).File("photo.tif")
	blob, err := f.Read(ctx)
	if err != nil || !bytes.Equal(blob.Bytes, data) {
		t.Fatalf("%v, %d bytes", err, len(blob.Bytes))
	}
	if turns.Load() != 0 || hashes.Load() != 0 {
		t.Errorf("a src= file was hashed: %d turns, %d hashes", turns.Load(), hashes.Load())
	}
	if blob.ID != f.Key() || !blob.Fresh.Store {
		t.Errorf("a file's identity %q, want its key %q (kept %v)", blob.ID, f.Key(), blob.Fresh.Store)
	}
	blob.Release()

	blob, err = Upload{Limits: limits, Body: bytes.NewReader(data), Length: size}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blob.Release()
	if turns.Load() != size/turn || hashes.Load() != 1 {
		t.Errorf("an upload: %d turns hashed, %d hashes; want %d and 1", turns.Load(), hashes.Load(), size/turn)
	}
	if want := (Limits{IDs: ids}).Sum(data); blob.ID != want {
		t.Errorf("an upload's identity %q, want its keyed hash %q", blob.ID, want)
	}
}

// An upload's identity is a keyed hash: the same bytes have the same ID
// in one process, different bytes (a byte more or less, a bit changed,
// across a turn's boundary) never share one, processes without a shared
// secret have IDs of their own, and replicas given the same secret (the
// result store's key) agree.
func TestUploadIdentityIsKeyed(t *testing.T) {
	id := func(ids IDHash, b []byte) string { return Limits{IDs: ids}.Sum(b) }
	own := NewIDHash(nil)
	photo := pattern(3 * turn / 2)
	if id(own, photo) != id(own, bytes.Clone(photo)) {
		t.Error("the same upload twice: two IDs")
	}
	seen := map[string]string{}
	distinct := func(name string, b []byte) {
		got := id(own, b)
		if other, ok := seen[got]; ok {
			t.Errorf("%s and %s share an ID", name, other)
		}
		seen[got] = name
	}
	for _, n := range []int{0, 1, 2, 31, 32, 33, turn - 1, turn, turn + 1, len(photo) - 1} {
		distinct("the first "+strconv.Itoa(n)+" bytes", photo[:n])
		if n > 0 { // 0 zero bytes are the first 0 bytes
			distinct(strconv.Itoa(n)+" zero bytes", make([]byte, n))
		}
	}
	distinct("the photo", photo)
	for _, bit := range []int{0, 8*turn - 1, 8 * turn, 8*len(photo) - 1} {
		flipped := bytes.Clone(photo)
		flipped[bit/8] ^= 1 << (bit % 8)
		distinct("the photo with bit "+strconv.Itoa(bit)+" flipped", flipped)
	}

	if id(NewIDHash(nil), photo) == id(own, photo) {
		t.Error("two processes without a secret: the same ID (a key not drawn at start)")
	}
	sum := sha256.Sum256(photo)
	if got := id(own, photo); got == hex.EncodeToString(sum[:]) || len(got) != 64 {
		t.Errorf("ID %q: want 256 bits of a keyed hash, not SHA-256", got)
	}
	secret := []byte("0123456789abcdef0123456789abcdef")
	replica := id(NewIDHash(secret), photo)
	if id(NewIDHash(bytes.Clone(secret)), photo) != replica {
		t.Error("two replicas with the same secret: two IDs")
	}
	if id(NewIDHash([]byte("fedcba9876543210fedcba9876543210")), photo) == replica || replica == id(own, photo) {
		t.Error("another secret, or none: the same ID")
	}

	limits := Limits{MaxBytes: int64(len(photo)), Budget: admission.NewBytes(int64(len(photo))), IDs: own}
	blob, err := Upload{Limits: limits, Body: bytes.NewReader(photo), Length: -1}.Read(context.Background())
	if err != nil || blob.ID != id(own, photo) {
		t.Fatalf("the upload's read: %v, ID %q", err, blob.ID)
	}
	blob.Release()
}

// A file's identity is its name and version: another size or another
// modification time is another identity (so another ETag), even for the
// same bytes; another name too.
func TestFileIdentityIsItsVersion(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ids, hashes := countingIDs()
	d := &Dir{Limits: Limits{MaxBytes: 100, Budget: admission.NewBytes(100), IDs: ids}, Root: root}
	path := filepath.Join(dir, "a.png")
	when := time.Now().Add(-time.Hour)
	seen := map[string]string{}
	read := func(what, name string) {
		t.Helper()
		blob, err := d.File(name).Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		blob.Release()
		if other, ok := seen[blob.ID]; ok {
			t.Errorf("%s: the identity of %s (%q)", what, other, blob.ID)
		}
		seen[blob.ID] = what
	}
	write := func(b string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write("one", when)
	read("the first version", "a.png")
	write("two", when.Add(time.Second))
	read("another modification time", "a.png")
	write("three", when.Add(time.Second))
	read("another size", "a.png")
	write("three", when.Add(2*time.Second))
	read("the same bytes, touched", "a.png")
	if err := os.Link(path, filepath.Join(dir, "b.png")); err != nil {
		t.Fatal(err)
	}
	read("another name of the same file", "b.png")
	if hashes.Load() != 0 {
		t.Errorf("%d hashes of files", hashes.Load())
	}
}

// A file written while it is read has bytes of no version a stat names:
// they are hashed, and the blob is not kept.
func TestFileWrittenWhileReadIsHashed(t *testing.T) {
	const size = 1000
	dir := t.TempDir()
	path := filepath.Join(dir, "a.png")
	if err := os.WriteFile(path, pattern(size), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ids, hashes := countingIDs()
	budget := admission.NewBytes(size + 1)
	limits := Limits{MaxBytes: size, Budget: budget, Wait: 10 * time.Second, IDs: ids}
	ctx := context.Background()
	// The budget held, the file's read waits for it, opened and stat'ed.
	held, err := Upload{Limits: limits, Body: bytes.NewReader(pattern(size)), Length: size}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := (&Dir{Limits: limits, Root: root}).File("a.png")
	read := make(chan *Blob, 1)
	go func() {
		blob, err := f.Read(ctx)
		if err != nil {
			t.Error(err)
		}
		read <- blob
	}()
	// The read waits once a reservation of the byte left cannot be made
	// at once: the budget serves its waiters in order.
	done, cancel := context.WithCancel(ctx)
	cancel()
	for {
		r, err := budget.Reserve(done, strings.NewReader(""), 1)
		if err != nil {
			break
		}
		r.Close()
		time.Sleep(time.Millisecond)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	held.Release()
	blob := <-read
	if blob == nil {
		return
	}
	defer blob.Release()
	if want := (Limits{IDs: ids}).Sum(blob.Bytes); blob.ID != want || blob.ID == f.Key() {
		t.Errorf("identity %q, want the bytes' hash %q", blob.ID, want)
	}
	if blob.Fresh.Store {
		t.Error("kept under the key of a version it may not be")
	}
	if hashes.Load() != 3 { // the upload, the read, want
		t.Errorf("%d hashes, want 3", hashes.Load())
	}
}
