package resultstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
)

// What a stored object must be to be answered (docs/storage.md, "Trust
// boundaries"). A writer of the store other than thumbd (anyone with the
// bucket's or the volume's write access) could otherwise choose what
// thumbd serves under its own URLs, text/html included: body-sha256 only
// catches torn writes, since any writer can compute it.

// trusted reports why obj, read under key, is not answered: a media type
// thumbd does not write, a body that is not of that type, or, with Keys,
// no valid signature.
func (s *Store) trusted(key string, obj Object) error {
	if !written(obj) {
		return fmt.Errorf("media type %q: not one thumbd writes, or not the body's", obj.ContentType)
	}
	if len(s.cfg.Keys) == 0 {
		return nil
	}
	got, err := hex.DecodeString(obj.Meta[metaSignature])
	if err != nil || len(got) == 0 {
		return errors.New("not signed (THUMBD_RESULT_STORE_KEY)")
	}
	for _, k := range s.cfg.Keys {
		want, _ := hex.DecodeString(sign(k, key, obj))
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("signed with no key of THUMBD_RESULT_STORE_KEY")
}

// signedMeta are the metadata a signature covers: every name the store
// writes and reads (a backend may add names of its own, which nothing
// reads).
var signedMeta = []string{metaETag, metaUntil, metaSourceETag, metaSourceLM, metaVary, metaOrigin, metaAnswerUntil, metaDigest}

// written reports whether obj is of a media type thumbd writes with a body
// of that type: an image format it encodes (the body's signature says
// which), or /info's JSON object.
func written(obj Object) bool {
	if obj.ContentType == jsonType {
		return len(obj.Body) > 0 && obj.Body[0] == '{' && json.Valid(obj.Body)
	}
	spec, ok := imagefmt.Identify(obj.Body)
	return ok && spec.Output && spec.ContentType == obj.ContentType
}

// jsonType is /info's media type, as the pipeline writes it.
const jsonType = "application/json"

// sign is the hex HMAC-SHA256, by k, of the object's key (an object moved
// to another key is refused), its media type, its metadata and its body's
// SHA-256.
func sign(k []byte, key string, obj Object) string {
	m := hmac.New(sha256.New, k)
	field := func(s string) {
		fmt.Fprintf(m, "%d:%s;", len(s), s)
	}
	field(key)
	field(obj.ContentType)
	for _, name := range signedMeta {
		if v, ok := obj.Meta[name]; ok {
			field(name)
			field(v)
		}
	}
	field(digest(obj.Body))
	return hex.EncodeToString(m.Sum(nil))
}
