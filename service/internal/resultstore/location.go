package resultstore

import (
	"errors"
	"path/filepath"
	"strings"
)

// Location is THUMBD_RESULT_STORE: a bucket and a prefix in it, or a
// directory. The zero Location is off.
type Location struct {
	Bucket string // s3://BUCKET[/PREFIX]
	Prefix string // without leading or trailing slash
	Dir    string // a directory path, absolute
}

// ParseLocation reads `s3://BUCKET[/PREFIX]` or a directory path ("": off).
func ParseLocation(s string) (Location, error) {
	if s == "" {
		return Location{}, nil
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Location{}, errors.New("a control character: not a bucket or a path")
	}
	if rest, ok := strings.CutPrefix(s, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		prefix = strings.Trim(prefix, "/")
		switch {
		case bucket == "":
			return Location{}, errors.New("want s3://BUCKET[/PREFIX]: the bucket is missing")
		case strings.Contains(prefix, "//") || strings.Contains("/"+prefix+"/", "/../") || strings.Contains("/"+prefix+"/", "/./"):
			return Location{}, errors.New("the prefix must be plain path segments (no empty, . or .. segment)")
		}
		return Location{Bucket: bucket, Prefix: prefix}, nil
	}
	if strings.Contains(s, "://") {
		return Location{}, errors.New("want s3://BUCKET[/PREFIX] or a directory path")
	}
	dir, err := filepath.Abs(s)
	if err != nil {
		return Location{}, err
	}
	return Location{Dir: dir}, nil
}

// On reports whether a store is configured.
func (l Location) On() bool { return l.Bucket != "" || l.Dir != "" }

func (l Location) String() string {
	switch {
	case l.Bucket != "" && l.Prefix != "":
		return "s3://" + l.Bucket + "/" + l.Prefix
	case l.Bucket != "":
		return "s3://" + l.Bucket
	}
	return l.Dir
}
