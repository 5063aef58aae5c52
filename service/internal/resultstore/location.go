package resultstore

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/thumbd/thumbd/service/internal/bucket"
)

// Location is THUMBD_RESULT_STORE: a bucket and a prefix in it, or a
// directory. The zero Location is off.
type Location struct {
	Bucket *bucket.Location // s3://BUCKET[/PREFIX]
	Dir    string           // a directory path, absolute
}

// ParseLocation reads `s3://BUCKET[/PREFIX]` or a directory path ("": off).
func ParseLocation(s string) (Location, error) {
	switch {
	case s == "":
		return Location{}, nil
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return Location{}, errors.New("a control character: not a bucket or a path")
	case strings.HasPrefix(s, "s3://"):
		loc, err := bucket.ParseURL(s)
		if err != nil {
			return Location{}, err
		}
		return Location{Bucket: &loc}, nil
	case strings.Contains(s, "://"):
		return Location{}, errors.New("want s3://BUCKET[/PREFIX] or a directory path")
	}
	dir, err := filepath.Abs(s)
	if err != nil {
		return Location{}, err
	}
	return Location{Dir: dir}, nil
}

// On reports whether a store is configured.
func (l Location) On() bool { return l.Bucket != nil || l.Dir != "" }

func (l Location) String() string {
	if l.Bucket != nil {
		return l.Bucket.String()
	}
	return l.Dir
}

// Overlaps reports whether the store and the sources' location (a bucket,
// nil for none, or a directory, "" for none) overlap: the same directory
// or bucket prefix, or one inside the other. Whoever can upload sources
// there could write results thumbd answers.
func (l Location) Overlaps(sources *bucket.Location, dir string) bool {
	switch {
	case l.Bucket != nil && sources != nil:
		return l.Bucket.Bucket == sources.Bucket && (strings.HasPrefix(l.Bucket.Prefix, sources.Prefix) || strings.HasPrefix(sources.Prefix, l.Bucket.Prefix))
	case l.Dir != "" && dir != "":
		return within(l.Dir, dir) || within(dir, l.Dir)
	}
	return false
}

// within reports whether path is dir or inside it, as written and with
// symbolic links resolved (where they resolve).
func within(path, dir string) bool {
	inside := func(p, d string) bool {
		rel, err := filepath.Rel(d, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		return a
	}
	resolved := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	path, dir = abs(path), abs(dir)
	return inside(path, dir) || inside(resolved(path), resolved(dir))
}

// ParseNamespace reads THUMBD_RESULT_STORE_NAMESPACE: printable, at most
// 256 bytes.
func ParseNamespace(s string) (string, error) {
	if len(s) > 256 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", errors.New("want at most 256 bytes without control characters")
	}
	return s, nil
}
