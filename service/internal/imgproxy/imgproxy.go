// Package imgproxy reads imgproxy's URL grammar into thumbd's own query
// values: a second parser in front of the one pipeline. A path
//
//	/%signature/%options/plain/%source[@%ext]
//	/%signature/%options/%base64url_source[.%ext]
//
// becomes the map params reads for GET /thumbnail (src= or url=, and the
// options), checked the way imgproxy checks it (security/signature.go,
// options/parser in imgproxy's source): its signature, its source's
// scheme and its options, each refused by name when thumbd cannot honour
// it with imgproxy's meaning. It is pure Go and knows nothing of HTTP
// beyond the path.
package imgproxy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/params"
)

// Key is one signing pair, as imgproxy's IMGPROXY_KEY and IMGPROXY_SALT.
type Key struct{ Key, Salt []byte }

// ParseKeys reads comma-separated hex keys and salts into pairs, in
// order: both lists as long as each other (imgproxy's IMGPROXY_KEYS and
// IMGPROXY_SALTS); both empty: no pair, signatures are not checked.
func ParseKeys(keys, salts string) ([]Key, error) {
	split := func(s string) []string {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	k, s := split(keys), split(salts)
	if len(k) != len(s) {
		return nil, fmt.Errorf("%d keys and %d salts: give one salt per key", len(k), len(s))
	}
	out := make([]Key, len(k))
	for i := range k {
		var err error
		if out[i].Key, err = hex.DecodeString(strings.TrimSpace(k[i])); err != nil || len(out[i].Key) == 0 {
			return nil, fmt.Errorf("key %d is not hex", i+1)
		}
		if out[i].Salt, err = hex.DecodeString(strings.TrimSpace(s[i])); err != nil || len(out[i].Salt) == 0 {
			return nil, fmt.Errorf("salt %d is not hex", i+1)
		}
	}
	return out, nil
}

// Config is what an imgproxy path is read with.
type Config struct {
	// Keys check signatures; none: any signature segment is taken.
	Keys []Key
	// SignatureSize truncates the HMAC to that many bytes (1 to 32; 0: 32),
	// as IMGPROXY_SIGNATURE_SIZE.
	SignatureSize int
	// Presets are IMGPROXY_PRESETS' in imgproxy's syntax (ParsePresets).
	Presets Presets
	// Bucket is the bucket THUMBD_SOURCE names, with its prefix ("" or
	// ending in "/"); "" when the source is a directory.
	Bucket, BucketPrefix string
	// MaxSide is thumbd's largest side: imgproxy's "no size" (keep the
	// source's) is a box of it that does not enlarge.
	MaxSide int
	// Now is the clock expires is read against; nil: time.Now.
	Now func() time.Time
	// AutoFormat: an answer in the source's format (no format asked) is
	// one of thumbd's format=auto instead, from Accept (imgproxy's WebP
	// and AVIF detection, THUMBD_IMGPROXY_AUTO_FORMAT).
	AutoFormat bool
}

// Request is an imgproxy path read into thumbd's terms.
type Request struct {
	// Asked is the thumbnail in thumbd's values, its source named (Src
	// or URL), for params.Rules.Make: its sentences name imgproxy's
	// options as the URL wrote them, and its Chooser says which values
	// the operator chose (the URL's presets and imgproxy's own defaults,
	// where its options left them so), which the allow-lists bind no
	// more than a thumbd preset's.
	Asked params.Asked
	// Signed: the path carried a signature checked against Keys.
	Signed bool
	// Filename and Attachment make the Content-Disposition.
	Filename   string
	Attachment bool
	// Expires is the expires option's time; zero when not given.
	Expires time.Time
}

// Parse reads path, the request's path after any prefix, beginning with
// "/" and still escaped as it came (r.URL.EscapedPath()).
func (c Config) Parse(escaped string) (Request, error) {
	sig, rest, ok := strings.Cut(strings.TrimPrefix(escaped, "/"), "/")
	if sig == "" || !ok || rest == "" {
		return Request{}, apierr.New(apierr.NotFound, "No route %s: an imgproxy path is /SIGNATURE/OPTIONS/SOURCE.", escaped)
	}
	rest = redenormalize(rest)
	if err := c.verify(sig, "/"+rest); err != nil {
		return Request{}, err
	}
	parts := strings.Split(rest, "/")
	var opts []option
	i := 0
	for ; i < len(parts); i++ {
		name, args, isOption := strings.Cut(parts[i], ":")
		if !isOption {
			break
		}
		opts = append(opts, option{name, strings.Split(args, ":")})
	}
	source, ext, err := decodeSource(parts[i:])
	if err != nil {
		return Request{}, err
	}
	st := newState()
	if def, ok := c.Presets["default"]; ok {
		if err := st.apply(c, def, []string{"default"}); err != nil {
			return Request{}, err
		}
	}
	if err := st.apply(c, opts, nil); err != nil {
		return Request{}, err
	}
	if ext != "" && !st.raw {
		if err := st.set(c, option{"format", []string{ext}}, nil); err != nil {
			return Request{}, err
		}
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if !st.expires.IsZero() && st.expires.Before(now()) {
		return Request{}, apierr.New(apierr.SignatureExpired, "This imgproxy URL expired at %s (option \"expires\").", st.expires.UTC().Format(time.RFC3339))
	}
	a, err := st.asked(c)
	if err != nil {
		return Request{}, err
	}
	name, err := c.source(&a, source)
	if err != nil {
		return Request{}, err
	}
	if len(c.Keys) == 0 {
		a.Chooser = c.chooser(st, a, opts)
	}
	req := Request{Asked: a, Signed: len(c.Keys) > 0, Filename: st.filename, Attachment: st.attachment, Expires: st.expires}
	if req.Filename == "" {
		req.Filename = strings.TrimSuffix(path.Base(name), path.Ext(name))
	}
	return req, nil
}

// chooser says who chose each option of a, read from st with opts: the
// client where the URL's own options set it to another value than
// imgproxy's defaults and its presets alone give (the default preset,
// then those opts name, in order); else the operator (""). Without a size from them, w and h are
// the source's own size up to the max side, which is not the operator's
// choice: they stay the client's. A signed URL needs none: the
// allow-lists do not bind it.
func (c Config) chooser(st *state, a params.Asked, opts []option) func(string) string {
	alone := newState()
	if def, ok := c.Presets["default"]; ok {
		_ = alone.apply(c, def, []string{"default"}) // checked at start (Presets.Check)
	}
	for _, o := range opts {
		if o.name == "preset" || o.name == "pr" {
			_ = alone.set(c, o, nil) // applied to st already: no error
		}
	}
	byPresets, err := alone.asked(c)
	presetSize := alone.width != 0 || alone.height != 0
	return func(option string) string {
		switch {
		case (option == "w" || option == "h") && !presetSize && a.Options.Width == c.MaxSide && a.Options.Height == c.MaxSide:
			return st.name(option) // the source's own size
		case !st.client(option), err == nil && params.Same(option, a, byPresets):
			return ""
		}
		return st.name(option)
	}
}

// verify checks sig against path, the part after the signature (with its
// leading "/"), as imgproxy's security.VerifySignature does.
func (c Config) verify(sig, path string) error {
	if len(c.Keys) == 0 {
		if strings.Contains(sig, ":") {
			return apierr.New(apierr.BadSignature, "The signature segment %q is malformed: an imgproxy path starts with a signature (any, such as _ or insecure, when no key is set), not an option.", sig)
		}
		return nil
	}
	mac, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sig, "="))
	if err != nil || len(mac) == 0 {
		return apierr.New(apierr.BadSignature, "The imgproxy signature %q is not base64url: this endpoint is signed (THUMBD_IMGPROXY_KEY).", sig)
	}
	size := c.SignatureSize
	if size <= 0 || size > sha256.Size {
		size = sha256.Size
	}
	for _, k := range c.Keys {
		h := hmac.New(sha256.New, k.Key)
		h.Write(k.Salt)
		h.Write([]byte(path))
		if hmac.Equal(mac, h.Sum(nil)[:size]) {
			return nil
		}
	}
	return apierr.New(apierr.BadSignature, "The imgproxy signature does not match the path: this endpoint is signed (THUMBD_IMGPROXY_KEY).")
}

// schemeFix undoes a proxy's "scheme:/x" for "scheme://x" in a plain
// source, as imgproxy's RedenormalizePath.
var schemeFix = regexp.MustCompile(`^(\S+?):/([^/])`)

// redenormalize is imgproxy's RedenormalizePath: %3A in the options is
// ":", and a plain source's "scheme:/" is "scheme://" (local: "local:///").
func redenormalize(p string) string {
	var opts, plain string
	var hasPlain bool
	if rest, ok := strings.CutPrefix(p, "plain/"); ok {
		plain, hasPlain = rest, true
	} else {
		opts, plain, hasPlain = strings.Cut(p, "/plain/")
	}
	opts = strings.ReplaceAll(opts, "%3A", ":")
	if !hasPlain {
		return strings.TrimPrefix(opts, "/")
	}
	if m := schemeFix.FindStringSubmatch(plain); m != nil {
		repl := m[1] + "://"
		if m[1] == "local" {
			repl += "/"
		}
		plain = strings.Replace(plain, m[0], repl+m[2], 1)
	}
	return strings.TrimPrefix(opts+"/plain/"+plain, "/")
}

// decodeSource is imgproxy's DecodeURL: "plain/URL[@ext]" (URL escaped)
// or base64url segments, joined, with an optional ".ext".
func decodeSource(parts []string) (src, ext string, err error) {
	if len(parts) > 1 && parts[0] == "plain" {
		enc := strings.Join(parts[1:], "/")
		u, e, many := splitExt(enc, "@")
		if u == "" || many {
			return "", "", apierr.New(apierr.BadURL, "The imgproxy source %q is empty or names several formats.", enc)
		}
		if src, err = url.PathUnescape(u); err != nil {
			return "", "", apierr.New(apierr.BadURL, "The imgproxy source %q is not escaped well: %s.", enc, err)
		}
		return src, e, nil
	}
	enc := strings.Join(parts, "")
	u, e, many := splitExt(enc, ".")
	if u == "" || many {
		return "", "", apierr.New(apierr.BadURL, "The imgproxy source %q is empty or names several formats.", enc)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(u, "="))
	if err != nil {
		return "", "", apierr.New(apierr.BadURL, "The imgproxy source %q is not base64url (a plain source is written plain/URL).", enc)
	}
	return string(b), e, nil
}

// splitExt cuts s at sep into the source and its extension; many: sep
// occurs more than once.
func splitExt(s, sep string) (src, ext string, many bool) {
	p := strings.Split(s, sep)
	if len(p) > 2 {
		return "", "", true
	}
	if len(p) == 2 {
		return p[0], p[1], false
	}
	return p[0], "", false
}

// source names a's source: local:// and s3:// as src=, http(s):// as url=
// (checked later by the origin allow-list, as any url=).
func (c Config) source(a *params.Asked, raw string) (string, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, _, _ = strings.Cut(raw, ":")
		if scheme == raw {
			scheme = ""
		}
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		a.URL = raw
		return rest, nil
	case "local":
		name, err := relative(strings.TrimPrefix(rest, "/"), raw)
		a.Src = name
		return name, err
	case "s3":
		bucket, key, _ := strings.Cut(rest, "/")
		if c.Bucket == "" || bucket != c.Bucket || !strings.HasPrefix(key, c.BucketPrefix) {
			served := "none (THUMBD_SOURCE is not a bucket)"
			if c.Bucket != "" {
				served = "s3://" + c.Bucket + "/" + c.BucketPrefix
			}
			return "", apierr.New(apierr.SourceNotFound, "The imgproxy source %q is in a bucket this service does not read; it serves %s.", raw, served)
		}
		name, err := relative(strings.TrimPrefix(key, c.BucketPrefix), raw)
		a.Src = name
		return name, err
	case "":
		return "", apierr.New(apierr.BadURL, "The imgproxy source %q has no scheme: write local:///NAME, s3://BUCKET/KEY or an http(s) URL.", raw)
	}
	return "", apierr.New(apierr.URLSchemeNotAllowed, "The imgproxy source scheme %q is not served by thumbd: it reads local://, s3:// (its own bucket) and http(s)://.", scheme)
}

// relative is name as thumbd's src= takes it: relative and canonical; a
// name that climbs out of the root is refused here, before any file.
func relative(name, raw string) (string, error) {
	clean := path.Clean("/" + name)[1:]
	if name == "" || clean != name || slices.Contains(strings.Split(name, "/"), "..") {
		return "", apierr.New(apierr.BadSourceName, "The imgproxy source %q is not a canonical name under the source root (no .., no //, no ./).", raw)
	}
	return name, nil
}

var errArgs = errors.New("bad arguments")
