package imgproxyendpoint

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/thumbd/thumbd/service/internal/flagenv"
	"github.com/thumbd/thumbd/service/internal/imgproxy"
)

// Settings are THUMBD_IMGPROXY_*.
type Settings struct {
	On          bool
	Prefix      string
	Keys, Salts [][]byte
	// PluralKeys and PluralSalts are THUMBD_IMGPROXY_KEYS and _SALTS,
	// taken into Keys and Salts by TakePlurals.
	PluralKeys, PluralSalts [][]byte
	// Unsigned is THUMBD_IMGPROXY_UNSIGNED: no imgproxy key beside
	// THUMBD_SIGNING_KEYS, on purpose.
	Unsigned      bool
	SignatureSize int
	Presets       string
	AutoFormat    bool
}

// setting is a row of the settings table, written unkeyed as package
// main's rows are.
type setting flagenv.Setting

// Rows are the settings table's rows of THUMBD_IMGPROXY_*, bound to s's
// fields, in the order docs/configuration.md shows them.
func (s *Settings) Rows() []flagenv.Setting {
	rows := []setting{
		{"THUMBD_IMGPROXY", "imgproxy", "false", "", "`true`: imgproxy's URLs (`/SIGNATURE/OPTIONS/SOURCE`) are served too, through the same pipeline ([imgproxy.md](imgproxy.md))", flagenv.Bool(&s.On)},
		{"THUMBD_IMGPROXY_PREFIX", "imgproxy-prefix", "", "the root", "a path prefix for the imgproxy URLs, as `IMGPROXY_PATH_PREFIX` (such as `/img`): `/` then one or more segments, none of thumbd's own route names", flagenv.String(&s.Prefix)},
		{"THUMBD_IMGPROXY_KEY", "imgproxy-key", "", "empty: any signature", "imgproxy's `IMGPROXY_KEY`: hex keys, comma-separated, each paired with the salt at its place in `THUMBD_IMGPROXY_SALT`; set: a wrong or missing signature is a 403. With `THUMBD_SIGNING_KEYS` set, leaving it empty is a start-up error unless `THUMBD_IMGPROXY_UNSIGNED=true` ([imgproxy.md](imgproxy.md#signatures-and-sources))", flagenv.Secret(&s.Keys, hexList)},
		{"THUMBD_IMGPROXY_KEYS", "imgproxy-keys", "", "", "the same as `THUMBD_IMGPROXY_KEY`, for those who spell it in the plural; both set: start-up error (imgproxy reads `IMGPROXY_KEY` alone)", flagenv.Secret(&s.PluralKeys, hexList)},
		{"THUMBD_IMGPROXY_SALT", "imgproxy-salt", "", "", "imgproxy's `IMGPROXY_SALT`: hex salts, comma-separated, as many as keys", flagenv.Secret(&s.Salts, hexList)},
		{"THUMBD_IMGPROXY_SALTS", "imgproxy-salts", "", "", "the same as `THUMBD_IMGPROXY_SALT`, in the plural; both set: start-up error", flagenv.Secret(&s.PluralSalts, hexList)},
		{"THUMBD_IMGPROXY_UNSIGNED", "imgproxy-unsigned", "false", "", "with `THUMBD_SIGNING_KEYS` set and `THUMBD_IMGPROXY=true`: `true` serves imgproxy's URLs without an imgproxy key, so unsigned (anyone may then ask any size and option there; logged as a warning); `false`: that combination is a start-up error, so signing keys mean every thumbnail URL is signed", flagenv.Bool(&s.Unsigned)},
		{"THUMBD_IMGPROXY_SIGNATURE_SIZE", "imgproxy-signature-size", "32", "", "bytes of the HMAC an imgproxy signature holds, 1 to 32, as `IMGPROXY_SIGNATURE_SIZE`; below 8 with keys set, a warning at start (a short signature can be found by trying: 2^(8 x size) values at most)", flagenv.Int(&s.SignatureSize)},
		{"THUMBD_IMGPROXY_PRESETS", "imgproxy-presets", "", "none", "imgproxy's `IMGPROXY_PRESETS`, in its syntax: `NAME=OPTION/OPTION` entries separated by `,`, such as `default=q:70,thumb=rs:fill:128:128`; `default` applies to every imgproxy URL first", flagenv.String(&s.Presets)},
		{"THUMBD_IMGPROXY_AUTO_FORMAT", "imgproxy-auto-format", "false", "", "`true`: an imgproxy URL that names no format is answered in the best format its `Accept` allows (thumbd's `format=auto`, with `Vary: Accept`), as imgproxy's `IMGPROXY_AUTO_WEBP`/`IMGPROXY_AUTO_AVIF`; `false`: in the source's format", flagenv.Bool(&s.AutoFormat)},
	}
	out := make([]flagenv.Setting, len(rows))
	for i, r := range rows {
		out[i] = flagenv.Setting(r)
	}
	return out
}

// Service is what the endpoint's settings are checked against: thumbd's
// own settings and routes.
type Service struct {
	MaxSide int
	// Signed: THUMBD_SIGNING_KEYS is set.
	Signed bool
	// Bucket and BucketPrefix are THUMBD_SOURCE's bucket, when it is one.
	Bucket, BucketPrefix string
	// Roots are the first segments of thumbd's own routes: a prefix may
	// not be one of them.
	Roots []string
}

// minSignatureSize is the imgproxy signature below which start-up warns:
// 8 bytes leave 2^64 values to try per URL, 4 bytes 2^32, 1 byte 256.
const minSignatureSize = 8

// TakePlurals reads THUMBD_IMGPROXY_KEYS and _SALTS as THUMBD_IMGPROXY_KEY
// and _SALT. imgproxy itself has only the singular names (each a
// comma-separated list: config.go up to v3, security/config.go in v4);
// with both spellings set there is no rule of its to follow, and choosing
// one silently could leave the keys an operator meant unused, so it is a
// start-up error.
func (s *Settings) TakePlurals() []error {
	var errs []error
	take := func(singular string, one *[][]byte, plural string, many [][]byte) {
		switch {
		case len(many) == 0:
		case len(*one) > 0:
			errs = append(errs, fmt.Errorf("%s and %s are both set: set one of them (each takes a comma-separated list)", singular, plural))
		default:
			*one = many
		}
	}
	take("THUMBD_IMGPROXY_KEY", &s.Keys, "THUMBD_IMGPROXY_KEYS", s.PluralKeys)
	take("THUMBD_IMGPROXY_SALT", &s.Salts, "THUMBD_IMGPROXY_SALTS", s.PluralSalts)
	return errs
}

// unsignedBesideSigning reports an imgproxy endpoint without a key while
// thumbd's own URLs are signed (signed): everything THUMBD_SIGNING_KEYS
// bounds on GET /thumbnail would be open there.
func (s Settings) unsignedBesideSigning(signed bool) bool {
	return s.On && signed && len(s.Keys) == 0
}

// Warnings are the sentences start-up logs as warnings about the imgproxy
// endpoint; signed: THUMBD_SIGNING_KEYS is set.
func (s Settings) Warnings(signed bool) []string {
	var out []string
	if s.unsignedBesideSigning(signed) && s.Unsigned {
		out = append(out, "THUMBD_IMGPROXY_UNSIGNED is on: imgproxy's URLs are served without a signature (any size and option) beside signed /thumbnail URLs")
	}
	if s.On && len(s.Keys) > 0 && s.SignatureSize < minSignatureSize {
		out = append(out, fmt.Sprintf("THUMBD_IMGPROXY_SIGNATURE_SIZE=%d: a signature this short is found by trying at most 2^%d values per URL; use %d bytes or more (imgproxy's default is 32)",
			s.SignatureSize, 8*s.SignatureSize, minSignatureSize))
	}
	return out
}

// hexList reads comma-separated hex values (imgproxy's keys and salts:
// any length); set but blank is an error, never a quiet "unsigned".
func hexList(s string) ([][]byte, error) {
	var out [][]byte
	for i, item := range strings.Split(s, ",") {
		b, err := hexValue(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i+1, err)
		}
		out = append(out, b)
	}
	return out, nil
}

func hexValue(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, errors.New("not hex")
	}
	return b, nil
}

// Root is the route pattern of the imgproxy endpoint; thumbd's own routes
// are fixed names, matched before it.
func (s Settings) Root() string { return strings.TrimSuffix(s.Prefix, "/") + "/*" }

// Config checks THUMBD_IMGPROXY_* against the service's and builds the
// parser's config.
func (s Settings) Config(svc Service) (imgproxy.Config, error) {
	ic := imgproxy.Config{SignatureSize: s.SignatureSize, MaxSide: svc.MaxSide, AutoFormat: s.AutoFormat}
	if len(s.Keys) != len(s.Salts) {
		return ic, fmt.Errorf("THUMBD_IMGPROXY_KEY has %d keys and THUMBD_IMGPROXY_SALT %d salts: give one salt per key", len(s.Keys), len(s.Salts))
	}
	if s.unsignedBesideSigning(svc.Signed) && !s.Unsigned {
		return ic, errors.New("THUMBD_IMGPROXY=true without THUMBD_IMGPROXY_KEY while THUMBD_SIGNING_KEYS is set: imgproxy's URLs would be served unsigned (any size and option) beside signed /thumbnail URLs; set THUMBD_IMGPROXY_KEY and THUMBD_IMGPROXY_SALT, or THUMBD_IMGPROXY_UNSIGNED=true to serve them unsigned on purpose")
	}
	for i := range s.Keys {
		ic.Keys = append(ic.Keys, imgproxy.Key{Key: s.Keys[i], Salt: s.Salts[i]})
	}
	if s.SignatureSize < 1 || s.SignatureSize > 32 {
		return ic, fmt.Errorf("THUMBD_IMGPROXY_SIGNATURE_SIZE=%d: want 1..32", s.SignatureSize)
	}
	if p := s.Prefix; p != "" {
		first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if !strings.HasPrefix(p, "/") || p == "/" || strings.Contains(p, "*") || slices.Contains(svc.Roots, first) {
			return ic, fmt.Errorf("THUMBD_IMGPROXY_PREFIX=%q: want /NAME (segments), none of thumbd's own routes (%s)", p, strings.Join(svc.Roots, ", "))
		}
	}
	ic.Bucket, ic.BucketPrefix = svc.Bucket, svc.BucketPrefix
	presets, err := imgproxy.ParsePresets(s.Presets)
	if err == nil {
		err = presets.Check(ic)
	}
	if err != nil {
		return ic, fmt.Errorf("THUMBD_IMGPROXY_PRESETS: %w", err)
	}
	ic.Presets = presets
	return ic, nil
}
