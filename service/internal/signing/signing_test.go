package signing

import (
	"encoding/hex"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

var (
	key0 = mustHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	key1 = mustHex("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100")
	now  = time.Unix(1_800_000_000, 0)
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func code(err error) apierr.Code {
	if err == nil {
		return ""
	}
	return apierr.From(err).Code
}

// Vectors computed with Python's hmac and urllib.parse.quote(s, safe=""),
// docs/signing.md's recipe: another language reproduces them byte for byte.
func TestVectors(t *testing.T) {
	for _, v := range []struct {
		q         map[string]string
		canonical string
		sig       string
	}{
		{
			map[string]string{"url": "https://images.example.com/photos/cat 1.jpg", "w": "200", "h": "200", "exp": "1893456000", "sig": "ignored"},
			"/thumbnail?exp=1893456000&h=200&url=https%3A%2F%2Fimages.example.com%2Fphotos%2Fcat%201.jpg&w=200",
			"gvEFO89JLOGDBAmR56y5w_TTaLHybYD2l6tqV2L7_-k",
		},
		{
			map[string]string{"src": "Ünïcode ~*!'()+&=.jpg", "w": "64"},
			"/thumbnail?src=%C3%9Cn%C3%AFcode%20~%2A%21%27%28%29%2B%26%3D.jpg&w=64",
			"nDIYebfcAuf1__82-sZZai3MaxDTbGa9IocpaNmjYSg",
		},
	} {
		if got := Canonical("/thumbnail", v.q); got != v.canonical {
			t.Errorf("canonical\n%s\nwant\n%s", got, v.canonical)
		}
		if got := Sign(key0, "/thumbnail", v.q); got != v.sig {
			t.Errorf("sig %s, want %s", got, v.sig)
		}
	}
}

func TestParseKeys(t *testing.T) {
	keys, err := ParseKeys(" 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f, FFEEDDCCBBAA99887766554433221100ffeeddccbbaa99887766554433221100 ,")
	if err != nil || len(keys) != 2 || string(keys[0]) != string(key0) || string(keys[1]) != string(key1) {
		t.Fatalf("%x %v", keys, err)
	}
	for _, blank := range []string{"", " , ", ","} {
		if keys, err := ParseKeys(blank); err == nil || !strings.Contains(err.Error(), "no key") {
			t.Errorf("%q: %v %v", blank, keys, err)
		}
	}
	_, err = ParseKeys("zz, 0011, 00112233445566778899aabbccddeeff")
	if err == nil || !strings.Contains(err.Error(), "key 1 is not hex") || !strings.Contains(err.Error(), "key 2 has 2 bytes") {
		t.Errorf("%v", err)
	}
}

func signed(key []byte, path string, q map[string]string) map[string]string {
	q = maps.Clone(q)
	q["sig"] = Sign(key, path, q)
	return q
}

func TestCheck(t *testing.T) {
	v := NewVerifier([][]byte{key0}, func() time.Time { return now })
	base := map[string]string{"url": "https://images.example.com/a.jpg", "w": "200"}
	with := func(q map[string]string, k, val string) map[string]string {
		q = maps.Clone(q)
		q[k] = val
		return q
	}
	good := signed(key0, "/thumbnail", base)
	for name, tc := range map[string]struct {
		path string
		q    map[string]string
		want apierr.Code
	}{
		"valid":                      {"/thumbnail", good, ""},
		"tampered path":              {"/thumbnail2", good, apierr.BadSignature},
		"tampered parameter":         {"/thumbnail", with(good, "w", "201"), apierr.BadSignature},
		"tampered url":               {"/thumbnail", with(good, "url", "https://images.example.com/b.jpg"), apierr.BadSignature},
		"parameter added":            {"/thumbnail", with(good, "h", "10"), apierr.BadSignature},
		"parameter added, empty":     {"/thumbnail", with(good, "h", ""), apierr.BadSignature},
		"missing":                    {"/thumbnail", base, apierr.SignatureMissing},
		"empty":                      {"/thumbnail", with(base, "sig", ""), apierr.BadSignature},
		"not base64url":              {"/thumbnail", with(base, "sig", strings.Repeat("+", 43)), apierr.BadSignature},
		"padded":                     {"/thumbnail", with(base, "sig", good["sig"]+"="), apierr.BadSignature},
		"short":                      {"/thumbnail", with(base, "sig", good["sig"][:42]), apierr.BadSignature},
		"long":                       {"/thumbnail", with(base, "sig", good["sig"]+"AAAA"), apierr.BadSignature},
		"unknown key":                {"/thumbnail", signed(key1, "/thumbnail", base), apierr.BadSignature},
		"expires later":              {"/thumbnail", signed(key0, "/thumbnail", with(base, "exp", "1800000001")), ""},
		"expires now":                {"/thumbnail", signed(key0, "/thumbnail", with(base, "exp", "1800000000")), ""},
		"expired":                    {"/thumbnail", signed(key0, "/thumbnail", with(base, "exp", "1799999999")), apierr.SignatureExpired},
		"exp moved":                  {"/thumbnail", with(signed(key0, "/thumbnail", with(base, "exp", "1799999999")), "exp", "1900000000"), apierr.BadSignature},
		"exp not a number, signed":   {"/thumbnail", signed(key0, "/thumbnail", with(base, "exp", "tomorrow")), apierr.BadParameter},
		"exp with a sign, signed":    {"/thumbnail", signed(key0, "/thumbnail", with(base, "exp", "+1900000000")), apierr.BadParameter},
		"exp empty, signed":          {"/thumbnail", signed(key0, "/thumbnail", with(base, "exp", "")), apierr.BadParameter},
		"exp not a number, unsigned": {"/thumbnail", with(base, "exp", "tomorrow"), apierr.SignatureMissing},
	} {
		if got := code(v.Check(tc.path, tc.q)); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	// A signature's last character carries 4 unused bits: flipping them
	// decodes to the same bytes, and is refused, so that one signature has
	// one spelling.
	last := good["sig"][42]
	for _, c := range "AEIMQUYcgkosw048" {
		if byte(c) != last && strings.IndexByte("AEIMQUYcgkosw048", last) >= 0 {
			if got := code(v.Check("/thumbnail", with(good, "sig", good["sig"][:42]+string(c)))); got != apierr.BadSignature {
				t.Errorf("sig ending %c: %q", c, got)
			}
		}
	}
	odd := good["sig"][:42] + string(last+1)
	if got := code(v.Check("/thumbnail", with(good, "sig", odd))); got != apierr.BadSignature {
		t.Errorf("non-canonical last character: %q", got)
	}
}

// Rotation: with keys [new, old], URLs signed with either pass; once old
// is dropped, its URLs fail.
func TestRotation(t *testing.T) {
	q := map[string]string{"src": "a.jpg"}
	both := NewVerifier([][]byte{key1, key0}, time.Now)
	for _, k := range [][]byte{key0, key1} {
		if err := both.Check("/thumbnail", signed(k, "/thumbnail", q)); err != nil {
			t.Errorf("key %x: %v", k[:2], err)
		}
	}
	newOnly := NewVerifier([][]byte{key1}, time.Now)
	if code(newOnly.Check("/thumbnail", signed(key0, "/thumbnail", q))) != apierr.BadSignature {
		t.Error("a dropped key still verifies")
	}
}

func TestOff(t *testing.T) {
	v := NewVerifier(nil, time.Now)
	if v.On() {
		t.Fatal("on without keys")
	}
	if err := v.Check("/thumbnail", map[string]string{"src": "a.jpg"}); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"sig", "exp"} {
		err := v.Check("/thumbnail", map[string]string{"src": "a.jpg", name: "x"})
		if code(err) != apierr.BadParameter || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("%s with signing off: %v", name, err)
		}
	}
}

func TestSignedPath(t *testing.T) {
	q := map[string]string{"w": "10", "src": "a b.jpg"}
	got := SignedPath(key0, "/thumbnail", q)
	if want := "/thumbnail?src=a%20b.jpg&w=10&sig=" + Sign(key0, "/thumbnail", q); got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

// The check on the hot path of a signed GET: the canonical form and one
// HMAC per key.
func BenchmarkCheck(b *testing.B) {
	v := NewVerifier([][]byte{key0}, time.Now)
	q := signed(key0, "/thumbnail", map[string]string{"src": "photos/2026/11/cat.jpg", "w": "320", "h": "240", "format": "webp", "q": "75"})
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Check("/thumbnail", q); err != nil {
			b.Fatal(err)
		}
	}
}
