package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Dir is the source directory of GET /thumbnail?src=NAME.
type Dir struct {
	Limits
	Root *os.Root // os.Root refuses names that escape it, symlinks included
}

// File is one named file of the directory.
func (d *Dir) File(name string) Keyed {
	f := file{dir: d, name: name}
	if validName(name) {
		// Stat before reading: the key names this version of the file, and
		// Read keeps a thumbnail only of the very version it names.
		if info, err := d.Root.Stat(name); err == nil && info.Mode().IsRegular() {
			f.version = versionOf(info)
		}
	}
	return f
}

type file struct {
	dir     *Dir
	name    string
	version string // size and modification time when File was called; "" unknown
}

// versionOf is a file's size and modification time: a file written since
// has another version (a same-size rewrite within the file system's
// timestamp granularity aside).
func versionOf(info fs.FileInfo) string {
	return strconv.FormatInt(info.Size(), 10) + "\x00" + strconv.FormatInt(info.ModTime().UnixNano(), 10)
}

// Key is the file's name and version: a file changed since is another key,
// so a cached thumbnail of it is never served stale.
func (f file) Key() string {
	if f.version == "" {
		return ""
	}
	return "src\x00" + f.name + "\x00" + f.version
}

// Identity is the file's name, without its version.
func (f file) Identity() string { return "src\x00" + f.name }

// validName applies the contract's rules before the file system is asked:
// relative, without "..", NUL or backslash, and canonical (no empty or "."
// segment: no leading "./", no "//", no trailing "/"), so that one file
// has one name, one key and one tag (a purge by tag reaches every
// thumbnail of it), as a bucket's keys do.
func validName(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "..") ||
		strings.ContainsRune(name, 0) || strings.Contains(name, "\\") {
		return false
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || seg == "." {
			return false
		}
	}
	return true
}

func (f file) Read(ctx context.Context) (*Blob, error) {
	return f.ReadRanges(ctx, nil)
}

// ReadRanges reads the file whole, or, when plan finds the ranges a job
// needs (a video's: its index and the packets of the frames decoded),
// only those, through the budget and within MaxBytes; a file read by
// range may then be of any length. A file that changes while it is read
// by range is read again whole: its ranges were another version's.
func (f file) ReadRanges(ctx context.Context, plan Planner) (*Blob, error) {
	fh, info, err := f.open()
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var spans []thumbjob.Span
	if plan != nil {
		spans = plan(fh, info.Size())
	}
	if len(spans) == 0 {
		return f.read(ctx, fh, info, nil)
	}
	blob, err := f.read(ctx, fh, info, spans)
	if err == nil && len(blob.Spans) == 0 {
		// Changed while read: its ranges are of no version a stat names.
		blob.Release()
		return f.read(ctx, fh, info, nil)
	}
	return blob, err
}

// open opens the named file, a regular file inside the directory.
func (f file) open() (*os.File, fs.FileInfo, error) {
	if !validName(f.name) {
		return nil, nil, apierr.New(apierr.BadSourceName, "Parameter \"src\" must name a file inside the source directory: relative and canonical, without \"..\", \".\" or empty segments.")
	}
	// Non-blocking: opening a FIFO for reading otherwise waits for a
	// writer, forever. Regular files ignore the flag; anything else is
	// refused below.
	fh, err := f.dir.Root.OpenFile(f.name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, apierr.New(apierr.SourceNotFound, "No source named %q.", f.name)
		}
		return nil, nil, apierr.New(apierr.BadSourceName, "Source name %q is not inside the source directory.", f.name)
	}
	info, err := fh.Stat()
	if err != nil || !info.Mode().IsRegular() {
		fh.Close()
		return nil, nil, apierr.New(apierr.SourceNotFound, "No source file named %q.", f.name)
	}
	return fh, info, nil
}

// read reads the open file whole (spans nil) or its spans. A whole file
// written while it was read is identified by its bytes' hash and kept
// nowhere; spans read from a file written meanwhile come back without
// their Spans, for the caller to read it whole.
func (f file) read(ctx context.Context, fh *os.File, info fs.FileInfo, spans []thumbjob.Span) (*Blob, error) {
	tooLarge := func() error {
		return apierr.New(apierr.SourceTooLarge, "Source %q is larger than the %d bytes allowed.", f.name, f.dir.MaxBytes)
	}
	// The bytes' identity is the version opened, as the key's is: not
	// their hash (a same-size rewrite within the file system's timestamp
	// granularity aside, the same version is the same bytes).
	version := versionOf(info)
	id := f.Identity() + "\x00" + version
	var blob *Blob
	var err error
	switch {
	case spans != nil:
		open := func(s thumbjob.Span) (io.ReadCloser, error) {
			return io.NopCloser(io.NewSectionReader(fh, s.Offset, s.Size)), nil
		}
		blob, err = f.dir.Limits.ReadSpans(ctx, spans, info.Size(), open, id, fmt.Sprintf("video %q", f.name))
	case info.Size() > f.dir.MaxBytes:
		return nil, tooLarge()
	default:
		blob, err = f.dir.Limits.ReadSized(ctx, fh, info.Size(), id, tooLarge)
	}
	if err != nil {
		if apierr.From(err).Code == apierr.Internal {
			return nil, &apierr.Error{Code: apierr.Internal, Message: "The source could not be read.", Cause: err}
		}
		return nil, err
	}
	if after, err := fh.Stat(); err != nil || versionOf(after) != version {
		// Written while being read: the bytes are of no version a stat
		// names, so their hash is their identity, and nothing is kept.
		if spans != nil {
			blob.Spans, blob.Size = nil, 0 // the caller reads it anew, whole
			return blob, nil
		}
		blob.ID = f.dir.Limits.Sum(blob.Bytes)
		return blob, nil
	}
	if version == f.version {
		// The bytes read are the version the key names.
		blob.Fresh = Freshness{Store: true, Until: time.Unix(1<<62, 0)} // the key holds the version: never stale
	}
	return blob, nil
}
