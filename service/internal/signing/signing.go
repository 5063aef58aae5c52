// Package signing is signed URLs: HMAC-SHA256 over a request's path and its
// query in a canonical form, so that a public thumbd makes only the
// thumbnails its operator's URLs name.
//
// The canonical form of a request is its path, "?", then every query
// parameter but sig, sorted by name (bytewise), each written name=value
// with every byte outside A-Z a-z 0-9 - . _ ~ percent-encoded as %XX
// (uppercase hex, UTF-8), joined by "&". The signature is the HMAC-SHA256
// of that string, in base64url without padding, given as sig=. An exp=
// parameter (Unix seconds, signed like the others) ends the URL's life.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// MinKeyBytes is the shortest key accepted: 128 bits.
const MinKeyBytes = 16

// ParseKeys reads THUMBD_SIGNING_KEYS: hex keys separated by commas, the
// first used to sign, all accepted, so that keys rotate without downtime.
// A list without a key is an error.
func ParseKeys(s string) ([][]byte, error) {
	var keys [][]byte
	var errs []error
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, err := hex.DecodeString(item)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("key %d is not hex", i+1))
		case len(k) < MinKeyBytes:
			errs = append(errs, fmt.Errorf("key %d has %d bytes: want at least %d (%d hex digits; `openssl rand -hex 32` makes one)", i+1, len(k), MinKeyBytes, 2*MinKeyBytes))
		default:
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 && len(errs) == 0 {
		// Set but blank (an empty Secret, a key command that failed):
		// never a quiet way to turn signing off.
		return nil, errors.New("set but holds no key: want hex keys separated by commas (`openssl rand -hex 32` makes one); leave it unset for unsigned URLs")
	}
	return keys, errors.Join(errs...)
}

// unreserved are the bytes RFC 3986 leaves unencoded.
func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func appendEscaped(b []byte, s string) []byte {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		if c := s[i]; unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return b
}

// AppendCanonical appends the canonical form of path and q (see the
// package documentation) to b.
func AppendCanonical(b []byte, path string, q map[string]string) []byte {
	return appendCanonical(b, nil, path, q)
}

// appendCanonical is AppendCanonical sorting the names in names' space.
func appendCanonical(b []byte, names []string, path string, q map[string]string) []byte {
	names = names[:0]
	for name := range q {
		if name != "sig" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b = append(b, path...)
	b = append(b, '?')
	for i, name := range names {
		if i > 0 {
			b = append(b, '&')
		}
		b = appendEscaped(b, name)
		b = append(b, '=')
		b = appendEscaped(b, q[name])
	}
	return b
}

// Canonical is the string a request's signature is made over.
func Canonical(path string, q map[string]string) string {
	return string(AppendCanonical(nil, path, q))
}

// Sign returns the sig= value of path and q with key.
func Sign(key []byte, path string, q map[string]string) string {
	m := hmac.New(sha256.New, key)
	m.Write(AppendCanonical(nil, path, q))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SignedPath returns path with q in canonical order and its sig: a URL
// path and query ready to use.
func SignedPath(key []byte, path string, q map[string]string) string {
	return Canonical(path, q) + "&sig=" + Sign(key, path, q)
}

// Verifier checks the signatures of requests.
type Verifier struct {
	keys    [][]byte
	scratch sync.Pool // of *scratch: a signed GET allocates nothing here
	now     func() time.Time
}

// scratch is what one check works with: the canonical form, the names it
// sorts, and an HMAC per key, keyed once and reset for each check.
type scratch struct {
	msg   []byte
	names []string
	macs  []hash.Hash
	sum   [sha256.Size]byte
}

// NewVerifier checks with keys (none: signing is off) and now for exp=.
func NewVerifier(keys [][]byte, now func() time.Time) *Verifier {
	v := &Verifier{keys: keys, now: now}
	v.scratch.New = func() any {
		s := &scratch{msg: make([]byte, 0, 512), names: make([]string, 0, 16)}
		for _, k := range keys {
			s.macs = append(s.macs, hmac.New(sha256.New, k))
		}
		return s
	}
	return v
}

// On reports whether requests must be signed.
func (v *Verifier) On() bool { return len(v.keys) > 0 }

// decoder refuses non-canonical base64 (stray bits in the last
// character), so that one signature has one spelling and a CDN one key.
var decoder = base64.RawURLEncoding.Strict()

// Check verifies q's sig over path and q, then its exp. It runs before the
// request reads a file, contacts an origin or takes a place. With signing
// off, sig and exp are refused as parameters this service does not take.
func (v *Verifier) Check(path string, q map[string]string) error {
	if !v.On() {
		for _, name := range []string{"sig", "exp"} {
			if _, ok := q[name]; ok {
				return apierr.New(apierr.BadParameter, "Parameter %q is not taken: signed URLs are off here (THUMBD_SIGNING_KEYS).", name)
			}
		}
		return nil
	}
	sig, ok := q["sig"]
	if !ok {
		return apierr.New(apierr.SignatureMissing, "This URL must be signed: sig= is missing.")
	}
	var got [sha256.Size]byte
	if len(sig) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return apierr.New(apierr.BadSignature, "The signature is not valid for this URL.")
	}
	if n, err := decoder.Decode(got[:], []byte(sig)); err != nil || n != sha256.Size {
		return apierr.New(apierr.BadSignature, "The signature is not valid for this URL.")
	}
	sc := v.scratch.Get().(*scratch)
	sc.msg = appendCanonical(sc.msg[:0], sc.names, path, q)
	valid := false
	for _, m := range sc.macs {
		m.Reset()
		m.Write(sc.msg)
		// Every key is tried, match or not: the time taken does not say
		// which key matched; each comparison is constant-time.
		valid = hmac.Equal(m.Sum(sc.sum[:0]), got[:]) || valid
	}
	v.scratch.Put(sc)
	if !valid {
		return apierr.New(apierr.BadSignature, "The signature is not valid for this URL.")
	}
	if raw, ok := q["exp"]; ok {
		exp, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || raw[0] == '+' || raw[0] == '-' {
			return apierr.New(apierr.BadParameter, "Parameter \"exp\" must be a time in Unix seconds.")
		}
		if v.now().Unix() > exp {
			return apierr.New(apierr.SignatureExpired, "This signed URL expired at %s.", time.Unix(exp, 0).UTC().Format(time.RFC3339))
		}
	}
	return nil
}
