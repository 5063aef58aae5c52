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
