package origin

import (
	"strings"
	"testing"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

func TestParsePatterns(t *testing.T) {
	got, err := ParsePatterns(" images.example.com, http://cdn.example.org:8080 ,*.Static.Example.NET,127.0.0.1:9000,http://[::1]:81, https://a.example.:444,,")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"https://images.example.com:443", "http://cdn.example.org:8080", "https://*.static.example.net:443",
		"https://127.0.0.1:9000", "http://[::1]:81", "https://a.example:444",
	}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("pattern %d: %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{
		"ftp://example.com", "example.com/images", "user@example.com", "example.com:0", "example.com:65536",
		"example.com:", "example.com:http", "*.com", "*", "a.*.example.com", "-bad.example.com", "exa_mple.com",
		"::1", "[::1", "[::1]x", "[fe80::1%eth0]", "bücher.example", "example.com?x", "http://",
	} {
		if _, err := ParsePatterns(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// Every bad entry is reported at once.
	_, err = ParsePatterns("ftp://a.example, ok.example, b.example/x")
	if err == nil || !strings.Contains(err.Error(), "ftp://a.example") || !strings.Contains(err.Error(), "b.example/x") {
		t.Errorf("%v", err)
	}
}

func TestCheck(t *testing.T) {
	patterns, err := ParsePatterns("images.example.com, http://cdn.example.org:8080, *.static.example.net, http://127.0.0.1:9000, http://[::1]:81")
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]apierr.Code{
		"https://images.example.com/a.jpg":           "",
		"https://IMAGES.example.com./a.jpg?v=2#frag": "",
		"https://images.example.com:443/a.jpg":       "",
		"http://cdn.example.org:8080/a.jpg":          "",
		"https://x.static.example.net/a.jpg":         "",
		"https://a.b.static.example.net/a.jpg":       "",
		"http://127.0.0.1:9000/a.jpg":                "",
		"http://[::1]:81/a.jpg":                      "",
		"http://[0:0::1]:81/a.jpg":                   "",
		"http://[::ffff:127.0.0.1]:9000/a.jpg":       "",

		"":                                      apierr.BadURL,
		"/a.jpg":                                apierr.BadURL,
		"images.example.com/a.jpg":              apierr.BadURL,
		"https:///a.jpg":                        apierr.BadURL,
		"https:images.example.com":              apierr.BadURL,
		"https://images.example.com:99999/":     apierr.BadURL,
		"https://images.example.com:x/":         apierr.BadURL,
		"https://images.example.com\\@evil/":    apierr.BadURL,
		"http://[::1/":                          apierr.BadURL,
		"%zz":                                   apierr.BadURL,
		"file:///etc/passwd":                    apierr.URLSchemeNotAllowed,
		"gopher://images.example.com/":          apierr.URLSchemeNotAllowed,
		"ftp://images.example.com/a.jpg":        apierr.URLSchemeNotAllowed,
		"data:image/png;base64,AAAA":            apierr.URLSchemeNotAllowed,
		"https://user:pw@images.example.com/":   apierr.URLCredentials,
		"https://@images.example.com/":          apierr.URLCredentials,
		"https://images.example.com@evil.test/": apierr.URLCredentials,
		"http://images.example.com/a.jpg":       apierr.OriginNotAllowed, // https only
		"https://images.example.com:8443/":      apierr.OriginNotAllowed, // default port only
		"https://cdn.example.org:8080/a.jpg":    apierr.OriginNotAllowed, // http only
		"https://static.example.net/a.jpg":      apierr.OriginNotAllowed, // *. is below the domain
		"https://xstatic.example.net/a.jpg":     apierr.OriginNotAllowed,
		"https://images.example.com.evil.test/": apierr.OriginNotAllowed,
		"https://evil.test/images.example.com":  apierr.OriginNotAllowed,
		"http://127.0.0.1:9001/a.jpg":           apierr.OriginNotAllowed,
		"http://127.0.0.2:9000/a.jpg":           apierr.OriginNotAllowed,
		"http://localhost:9000/a.jpg":           apierr.OriginNotAllowed,
		"http://2130706433:9000/a.jpg":          apierr.OriginNotAllowed,
	} {
		_, err := Check(raw, patterns)
		if got := code(err); got != want {
			t.Errorf("Check(%q) = %v, want %q", raw, err, want)
		}
	}
	if _, err := Check("https://images.example.com/", nil); code(err) != apierr.OriginNotAllowed {
		t.Errorf("no patterns: %v", err)
	}
}

func code(err error) apierr.Code {
	if err == nil {
		return ""
	}
	return apierr.From(err).Code
}

func TestPatternRefused(t *testing.T) {
	ps, err := ParsePatterns("images.example.com, 8.8.8.8, 10.0.0.5:8080, [fd00::1], 127.0.0.1:9000, *.example.net")
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, p := range ps {
		if why := p.Refused(true); why != "" {
			refused = append(refused, p.Host+": "+why)
		}
	}
	if len(refused) != 2 || !strings.Contains(refused[0], "10.0.0.5: private") || !strings.Contains(refused[1], "fd00::1: unique local") {
		t.Errorf("%q", refused)
	}
	if ps[4].Refused(false) != Loopback {
		t.Error("loopback entry without the switch")
	}
}

// A host that is not ASCII is matched in the form net/http dials (its
// IDNA Lookup mapping, xn--...), never by Unicode lowercasing: U+0130 (İ)
// lowercases to an ASCII i, but dials as another domain. The URL returned
// names exactly the host that was checked.
func TestCheckNonASCIIHost(t *testing.T) {
	patterns, err := ParsePatterns("images.bigcorp.com, images.xn--bcher-kva.example, *.static.example.net")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		"https://images.b\u0130gcorp.com/x.jpg",
		"https://images.b%C4%B0gcorp.com/x.jpg",
		"https://IMAGES.B\u0130GCORP.COM/x.jpg",
		"https://x.stat\u0130c.example.net/x.jpg",
		"https://images.bigcorp.co\u212a/x.jpg", // KELVIN SIGN lowercases to k
	} {
		u, err := Check(raw, patterns)
		if code(err) != apierr.OriginNotAllowed {
			host := ""
			if u != nil {
				host = u.Host
			}
			t.Errorf("Check(%q) = %v (host %q), want origin_not_allowed", raw, err, host)
		}
	}
	for raw, want := range map[string]string{
		"https://images.b\u00fccher.example/a.jpg":       "images.xn--bcher-kva.example",
		"https://IMAGES.B\u00dcCHER.example:443/a.jpg":   "images.xn--bcher-kva.example:443",
		"https://images.bigcorp.com./a.jpg":              "images.bigcorp.com",
		"https://Images.BigCorp.com/a.jpg":               "images.bigcorp.com",
		"https://a.b\u00fccher.static.example.net/":      "a.xn--bcher-kva.static.example.net",
		"https://images.xn--bcher-kva.example/a.jpg?x=1": "images.xn--bcher-kva.example",
	} {
		u, err := Check(raw, patterns)
		if err != nil || u.Host != want {
			t.Errorf("Check(%q) = %v, %v: want host %q", raw, u, err, want)
		}
	}
}

// An IP literal written with a trailing dot is not an address to Go's
// dialer but a name it resolves through DNS: such an entry is refused, and
// a URL so written is fetched from the literal that was checked.
func TestIPLiteralWithTrailingDot(t *testing.T) {
	for _, bad := range []string{"127.0.0.1.", "http://127.0.0.1.:9000", "8.8.8.8.", "*.1.2.3.4."} {
		if _, err := ParsePatterns(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	patterns, err := ParsePatterns("http://127.0.0.1:9000")
	if err != nil {
		t.Fatal(err)
	}
	u, err := Check("http://127.0.0.1.:9000/a.jpg", patterns)
	if err != nil || u.Host != "127.0.0.1:9000" {
		t.Errorf("%v %v: want host 127.0.0.1:9000", u, err)
	}
}

// A host with a zone (%) is refused outright, whatever entry it would
// match: "[::1%25x.static.example.net]" ends in a wildcard's domain but is
// dialed as ::1. Wildcards match DNS names only, never IP literals; exact
// and literal entries see no zoned form either. Every entry kind against
// zoned, bracketed, percent-encoded and doubly encoded forms.
func TestCheckRefusesZonesAndWildcardLiterals(t *testing.T) {
	patterns, err := ParsePatterns("http://images.example.com:81, http://*.static.example.net:81, http://[::1]:81, " +
		"http://127.0.0.1:81, http://[2001:4860::1]:81, http://*.2.3.4:81")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		// wildcard
		"http://[::1%25x.static.example.net]:81/a.jpg",
		"http://[2001:4860::1%25x.static.example.net]:81/a.jpg",
		"http://[fe80::1%25eth0.static.example.net]:81/a.jpg",
		"http://[::1%2525x.static.example.net]:81/a.jpg",
		"http://x%25y.static.example.net:81/a.jpg",
		"http://%5B::1%25x.static.example.net%5D:81/a.jpg",
		"http://1.2.3.4:81/a.jpg", // an IP literal ending in a wildcard's "domain"
		"http://[::ffff:1.2.3.4]:81/a.jpg",
		// exact
		"http://[::1%25images.example.com]:81/a.jpg",
		"http://images.example.com%25x:81/a.jpg",
		// literal
		"http://[::1%25lo]:81/a.jpg",
		"http://[::1%251]:81/a.jpg",
		"http://[2001:4860::1%25eth0]:81/a.jpg",
		"http://[::ffff:127.0.0.1%25lo]:81/a.jpg",
		"http://127.0.0.1%25lo:81/a.jpg",
	} {
		u, err := Check(raw, patterns)
		if err == nil {
			t.Errorf("Check(%q) allowed host %q", raw, u.Host)
		}
	}
	// What the entries do allow still passes.
	for _, raw := range []string{"http://x.static.example.net:81/", "http://[::1]:81/", "http://127.0.0.1:81/",
		"http://[2001:4860::1]:81/", "http://images.example.com:81/", "http://a.1.2.3.4:81/"} {
		if _, err := Check(raw, patterns); err != nil {
			t.Errorf("Check(%q) = %v", raw, err)
		}
	}
}
