package signing

import (
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/origin"
	"github.com/thumbd/thumbd/service/internal/params"
)

// FuzzGetQuery drives the parse stage of a signed GET /thumbnail?url=
// with any query: the strict query parser, the signature check and the
// origin URL checks. It holds that nothing panics, that the canonical form
// names exactly the parameters signed (it parses back to them), that a
// signature made for a query verifies and one changed byte does not, and
// that a URL the checks pass is one the allow-list allows.
func FuzzGetQuery(f *testing.F) {
	for _, seed := range []string{
		"url=https%3A%2F%2Fimages.example.com%2Fa.jpg&w=200",
		"url=https://images.example.com/a.jpg?x=1%26y=2&w=200&h=100&exp=1900000000",
		"url=http://images.example.com:8080/a.jpg", "url=https://user:pw@images.example.com/a.jpg",
		"url=https://x.cdn.example.net./a.jpg", "url=https://cdn.example.net/a.jpg", "url=ftp://images.example.com/",
		"url=https://[::1]/", "url=https://images.example.com:99999/", "url=//images.example.com/a", "url=",
		"url=https://images.example.com\\@evil/", "url=https://images.example.com%2F@evil/", "url=HTTPS://IMAGES.EXAMPLE.COM/",
		"src=%C3%9Cn%C3%AFcode+~*!'()%2B%26%3D.jpg&w=64", "src=a.jpg&sig=AAAA&exp=", "src=a&src=b", "widht=1",
		"url=https://%C4%B0mages.example.com/a.jpg", "url=https://%C4%B0.cdn.example.net/a.jpg", "url=http://%C4%B0MAGES.example.com:8080/",
		"src=a.jpg&exp=-1", "src=a.jpg&exp=99999999999999999999", "src=%zz", "src=a;b", "&&=&", "sig=" + strings.Repeat("A", 43),
	} {
		f.Add(seed)
	}
	patterns, err := origin.ParsePatterns("images.example.com, *.cdn.example.net, http://images.example.com:8080")
	if err != nil {
		f.Fatal(err)
	}
	v := NewVerifier([][]byte{key0, key1}, func() time.Time { return now })
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := params.GetQuery(raw)
		if err != nil {
			if code(err) != apierr.BadParameter {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		// The canonical form parses back to the parameters it signs.
		canonical := Canonical("/thumbnail", q)
		back, err := url.ParseQuery(strings.TrimPrefix(canonical, "/thumbnail?"))
		if err != nil {
			t.Fatalf("%q: canonical %q does not parse: %v", raw, canonical, err)
		}
		want := maps.Clone(q)
		delete(want, "sig")
		if len(back) != len(want) && !(len(want) == 0 && len(back) == 0) {
			t.Fatalf("%q: canonical %q names %v, want %v", raw, canonical, back, want)
		}
		for k, vs := range back {
			if len(vs) != 1 || want[k] != vs[0] {
				t.Fatalf("%q: canonical %q gives %s=%q, want %q", raw, canonical, k, vs, want[k])
			}
		}
		// Whatever the query, its own signature verifies (or its exp is
		// what is wrong), and a changed signature does not.
		q["sig"] = Sign(key1, "/thumbnail", q)
		switch err := v.Check("/thumbnail", q); code(err) {
		case "", apierr.SignatureExpired:
		case apierr.BadParameter:
			if !strings.Contains(err.Error(), `"exp"`) {
				t.Fatalf("%q: %v", raw, err)
			}
		default:
			t.Fatalf("%q: its own signature: %v", raw, err)
		}
		sig := []byte(q["sig"])
		sig[len(raw)%len(sig)] ^= 1
		q["sig"] = string(sig)
		if err := v.Check("/thumbnail", q); code(err) != apierr.BadSignature {
			t.Fatalf("%q: a changed signature: %v", raw, err)
		}
		// A URL the checks pass is http(s), without user information, on
		// a host and port a pattern allows.
		u, ok := q["url"]
		if !ok {
			return
		}
		parsed, err := origin.Check(u, patterns)
		if err != nil {
			switch code(err) {
			case apierr.BadURL, apierr.URLSchemeNotAllowed, apierr.URLCredentials, apierr.OriginNotAllowed:
				return
			}
			t.Fatalf("%q: %v", u, err)
		}
		// The oracle reads the host as net/http dials it: a host that is
		// not ASCII is dialed as its IDNA form, another name, so only an
		// ASCII host can be allowed, and only ASCII letters fold (Unicode
		// lowercasing turns U+0130 and U+212A into ASCII letters).
		host, ok := asciiLower(parsed.Hostname())
		if !ok {
			t.Fatalf("%q passed the checks with the non-ASCII host %q", u, parsed.Hostname())
		}
		host = strings.TrimSuffix(host, ".")
		port := parsed.Port()
		allowed := parsed.User == nil && (parsed.Scheme == "https" && (port == "" || port == "443") &&
			(host == "images.example.com" || strings.HasSuffix(host, ".cdn.example.net")) ||
			parsed.Scheme == "http" && port == "8080" && host == "images.example.com")
		if !allowed {
			t.Fatalf("%q passed the checks", u)
		}
	})
}

// asciiLower lowercases the ASCII letters of s; ok is false when s has a
// byte that is not ASCII.
func asciiLower(s string) (string, bool) {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 0x80:
			return "", false
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b), true
}
