package resultstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is a result store in a directory: a volume shared by pods
// (ReadWriteMany), or one pod's disk. Each result is one file, written
// as a temporary file beside its final name and renamed into place, so a
// reader sees the whole file or none.
type Dir struct{ Root string }

// dirMagic opens every stored file: a file without it is not a result
// (and is not read further).
const dirMagic = "thumbd-result 1\n"

// dirHeaderMax bounds the header line (media type and metadata): 2 KB
// of metadata (maxMetaSize) is at most 12 KB once JSON escapes it (a '<'
// is six bytes), and the reader's buffer holds the whole line.
const dirHeaderMax = 16 << 10

type dirHeader struct {
	ContentType string            `json:"content_type"`
	Meta        map[string]string `json:"meta"`
	Size        int64             `json:"size"`
}

func (d Dir) String() string { return "directory " + d.Root }

func (d Dir) path(key string) string { return filepath.Join(d.Root, filepath.FromSlash(key)) }

func (d Dir) Get(ctx context.Context, key string, lim Limits) (Object, error) {
	f, err := os.Open(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, len(dirMagic)+dirHeaderMax)
	magic := make([]byte, len(dirMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != dirMagic {
		return Object{}, fmt.Errorf("%s: not a stored result", f.Name())
	}
	line, err := r.ReadSlice('\n')
	if err != nil || len(line) > dirHeaderMax {
		return Object{}, fmt.Errorf("%s: header unreadable", f.Name())
	}
	var h dirHeader
	if err := json.Unmarshal(line, &h); err != nil {
		return Object{}, fmt.Errorf("%s: header: %w", f.Name(), err)
	}
	if h.Size < 0 {
		return Object{}, fmt.Errorf("%s: header: a negative size", f.Name())
	}
	body, release, err := lim.read(ctx, r, h.Size)
	switch {
	case errors.Is(err, errNoRoom):
		return Object{}, err
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return Object{}, fmt.Errorf("%s: body shorter than its header says: %w", f.Name(), err)
	case err != nil:
		return Object{}, err
	}
	if n, _ := r.Read(make([]byte, 1)); n != 0 {
		release()
		return Object{}, fmt.Errorf("%s: body longer than its header says", f.Name())
	}
	return Object{ContentType: h.ContentType, Meta: h.Meta, Body: body, release: release}, nil
}

func (d Dir) Put(ctx context.Context, key string, o Object) error {
	final := d.path(key)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	header, err := json.Marshal(dirHeader{ContentType: o.ContentType, Meta: o.Meta, Size: int64(len(o.Body))})
	if err != nil {
		return err
	}
	// The temporary name starts with a dot: never a key (keys are hex),
	// and an expiry by age (find -mtime) removes one a crash left.
	tmp, err := os.CreateTemp(filepath.Dir(final), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	var b bytes.Buffer
	b.Grow(len(dirMagic) + len(header) + 1)
	b.WriteString(dirMagic)
	b.Write(header)
	b.WriteByte('\n')
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(o.Body); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), final)
}

// Check refuses a root that is missing, not a directory, or not writable
// by this process: each is the operator's to fix, not a store that will
// come back.
func (d Dir) Check(ctx context.Context) error {
	info, err := os.Stat(d.Root)
	if err != nil {
		return &RefusedError{err}
	}
	if !info.IsDir() {
		return &RefusedError{fmt.Errorf("%s is not a directory", d.Root)}
	}
	probe, err := os.CreateTemp(d.Root, ".tmp-probe-*")
	if err != nil {
		return &RefusedError{fmt.Errorf("cannot write in %s: %w", d.Root, err)}
	}
	probe.Close()
	return os.Remove(probe.Name())
}
