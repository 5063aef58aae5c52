package origin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// Pattern is one entry of THUMBD_ORIGINS: a host, a host and port, or
// *.domain (any name below domain, not domain itself), reached over https,
// or over http when the entry is written with http://. Without a port only
// the scheme's default port is allowed.
type Pattern struct {
	Scheme string // "https" or "http"
	// Host is lowercase, without a trailing dot; an IPv6 literal is in its
	// canonical form without brackets; for a wildcard it is the suffix
	// ".domain".
	Host     string
	Wildcard bool
	Port     int
}

func defaultPort(scheme string) int {
	if scheme == "http" {
		return 80
	}
	return 443
}

func (p Pattern) String() string {
	host := p.Host
	if p.Wildcard {
		host = "*" + host
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return p.Scheme + "://" + host + ":" + strconv.Itoa(p.Port)
}

// FormatPatterns writes patterns as THUMBD_ORIGINS reads them.
func FormatPatterns(ps []Pattern) string {
	out := make([]string, len(ps))
	for i, o := range ps {
		out[i] = o.String()
	}
	return strings.Join(out, ",")
}

// ParsePatterns reads THUMBD_ORIGINS: patterns separated by commas. Every
// bad entry is reported.
func ParsePatterns(s string) ([]Pattern, error) {
	var out []Pattern
	var errs []error
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := parsePattern(item)
		if err != nil {
			errs = append(errs, fmt.Errorf("origin %q: %w", item, err))
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

func parsePattern(item string) (Pattern, error) {
	p := Pattern{Scheme: "https"}
	rest := item
	if scheme, after, ok := strings.Cut(item, "://"); ok {
		p.Scheme = strings.ToLower(scheme)
		if p.Scheme != "http" && p.Scheme != "https" {
			return Pattern{}, errors.New("the scheme must be http:// or https://")
		}
		rest = after
	}
	if strings.ContainsAny(rest, "/?#@") {
		return Pattern{}, errors.New("want host, host:port or *.domain, without a path or user")
	}
	p.Port = defaultPort(p.Scheme)
	host := rest
	if h, port, err := splitHostPort(rest); err != nil {
		return Pattern{}, err
	} else if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Pattern{}, fmt.Errorf("port %q: want 1..65535", port)
		}
		p.Port, host = n, h
	} else {
		host = h
	}
	host = strings.ToLower(host)
	if suffix, ok := strings.CutPrefix(host, "*."); ok {
		if !validName(suffix) || !strings.Contains(suffix, ".") {
			return Pattern{}, errors.New("a wildcard must be *. followed by a domain with a dot, such as *.example.com")
		}
		p.Host, p.Wildcard = "."+suffix, true
		return p, nil
	}
	if _, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil && strings.HasSuffix(host, ".") {
		// Go's dialer resolves "127.0.0.1." through DNS, as a name.
		return Pattern{}, errors.New("an IP address with a trailing dot is a name to the resolver: write it without the dot")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return Pattern{}, errors.New("an address with a zone is not an origin")
		}
		p.Host = a.Unmap().String()
		return p, nil
	}
	if !validName(strings.TrimSuffix(host, ".")) {
		return Pattern{}, errors.New("not a host name (letters, digits, hyphens and dots; non-ASCII names in their xn-- form)")
	}
	p.Host = strings.TrimSuffix(host, ".")
	return p, nil
}

// splitHostPort splits "host", "host:port", "[v6]" and "[v6]:port".
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", errors.New("unclosed [")
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if p, ok := strings.CutPrefix(rest, ":"); ok {
			return host, p, nil
		}
		return "", "", errors.New("unexpected text after ]")
	}
	if strings.Count(s, ":") > 1 {
		return "", "", errors.New("write an IPv6 address in brackets: [::1]:8080")
	}
	host, port, _ = strings.Cut(s, ":")
	if strings.HasSuffix(s, ":") {
		return "", "", errors.New("empty port")
	}
	return host, port, nil
}

// validName accepts a DNS name of ASCII labels: letters, digits and
// hyphens, not starting or ending with a hyphen, at most 63 bytes each.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Refused returns why the address guard would refuse every connection to
// the pattern (an IP literal in a refused range), or "": such an entry is
// a configuration mistake, reported at start-up.
func (p Pattern) Refused(allowLoopback bool) string {
	if a, err := netip.ParseAddr(p.Host); err == nil && !p.Wildcard {
		return Judge(a, allowLoopback)
	}
	return ""
}

// matches reports whether the pattern allows scheme, host and port (host
// already normalised as Pattern.Host is).
func (p Pattern) matches(scheme, host string, port int) bool {
	if p.Scheme != scheme || p.Port != port {
		return false
	}
	if p.Wildcard {
		// DNS names only: an IP literal is no name below a domain, even
		// one that ends in its text (1.2.3.4 against *.2.3.4).
		if _, err := netip.ParseAddr(host); err == nil || !validName(host) {
			return false
		}
		return strings.HasSuffix(host, p.Host) && len(host) > len(p.Host)
	}
	return host == p.Host
}

// Check applies the checks made before any connection: the URL parses as
// an absolute http or https URL with a host, carries no user information,
// and its scheme, host and port are allowed by one of the patterns. It
// returns the URL to fetch. Redirects are put through the same checks.
func Check(raw string, patterns []Pattern) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, apierr.New(apierr.BadURL, "Parameter \"url\" is not a URL: %s.", urlErrorText(err))
	}
	return u, checkURL(u, patterns)
}

func urlErrorText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func checkURL(u *url.URL, patterns []Pattern) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return apierr.New(apierr.BadURL, "Parameter \"url\" must be an absolute http or https URL.")
		}
		return apierr.New(apierr.URLSchemeNotAllowed, "URL scheme %q is not fetched: only http and https are.", u.Scheme)
	}
	if u.User != nil {
		return apierr.New(apierr.URLCredentials, "A URL with user information (user:password@) is not fetched.")
	}
	if u.Opaque != "" || u.Host == "" {
		return apierr.New(apierr.BadURL, "Parameter \"url\" must be an absolute http or https URL with a host.")
	}
	port := defaultPort(u.Scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return apierr.New(apierr.BadURL, "The URL's port %q is not 1..65535.", p)
		}
		port = n
	}
	if strings.Contains(u.Hostname(), "%") {
		// A zone ([::1%25eth0]) or a percent sign left after decoding:
		// "[::1%25x.static.example.net]" ends in a wildcard's domain but
		// is dialed as ::1. No origin is reached so.
		return apierr.New(apierr.BadURL, "The URL's host has a zone or a percent sign (%%): thumbd fetches no such host.")
	}
	if host, ok := normalHost(u.Hostname()); ok {
		for _, p := range patterns {
			if p.matches(u.Scheme, host, port) {
				// Fetch exactly the host that was checked: left to
				// itself, net/http would map a non-ASCII name again and
				// resolve "127.0.0.1." as a name.
				switch given := u.Port(); {
				case given != "":
					u.Host = net.JoinHostPort(host, given)
				case strings.Contains(host, ":"):
					u.Host = "[" + host + "]"
				default:
					u.Host = host
				}
				return nil
			}
		}
	}
	return apierr.New(apierr.OriginNotAllowed, "Origin %s://%s is not among the allowed origins (THUMBD_ORIGINS).", u.Scheme, u.Host)
}

// normalHost is h as it is dialed and as patterns are written: ASCII,
// lowercase, without a trailing dot; an IP literal in its canonical form,
// so [::1] and [0:0::1] are the same origin. A name that is not ASCII
// takes the IDNA form net/http would dial (the Lookup profile), never a
// Unicode lowercasing: U+0130 lowercases to an ASCII i, but dials as
// another domain. ok is false for a name IDNA refuses.
func normalHost(h string) (string, bool) {
	if !isASCII(h) {
		a, err := idna.Lookup.ToASCII(h)
		if err != nil || !isASCII(a) {
			return "", false
		}
		h = a
	}
	if strings.Contains(h, "%") {
		return "", false // a zone: never an origin (checkURL says why)
	}
	h = strings.TrimSuffix(asciiLower(h), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String(), true
	}
	return h, true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// asciiLower lowercases ASCII letters only (s is ASCII).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
