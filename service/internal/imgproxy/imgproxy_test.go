package imgproxy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// aliases: the errors found once every option is read name the long form.
var aliases = map[string]string{"rs": "resizing_type", "rt": "resizing_type", "resize": "resizing_type",
	"mw": "min-width", "mh": "min-height", "z": "zoom", "g": "gravity", "ex": "extend", "c": "crop",
	"bl": "blur", "sh": "sharpen", "pix": "pixelate", "fq": "format_quality"}

func config() Config { return Config{MaxSide: 4096, SignatureSize: 32} }

// sign is imgproxy's signature of path (with its leading "/").
func sign(key, salt, path string, size int) string {
	k, _ := hex.DecodeString(key)
	s, _ := hex.DecodeString(salt)
	h := hmac.New(sha256.New, k)
	h.Write(s)
	h.Write([]byte(path))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:size])
}

func codeOf(err error) apierr.Code {
	if err == nil {
		return ""
	}
	return apierr.From(err).Code
}

// base is what every translated query holds: imgproxy's defaults.
func base(extra map[string]string) map[string]string {
	q := map[string]string{"hints": "off", "fit": "inside", "enlarge": "false", "gravity": "centre", "copyright": "keep"}
	maps.Copy(q, extra)
	for k, v := range q {
		if v == "-" {
			delete(q, k)
		}
	}
	return q
}

func TestSignature(t *testing.T) {
	key, salt := "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881", "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
	k2, s2 := "aa", "bb"
	keys, err := ParseKeys(key+","+k2, salt+","+s2)
	if err != nil {
		t.Fatal(err)
	}
	path := "/rs:fit:300:300/plain/http://img.example.com/pretty/image.jpg"
	// imgproxy's examples (signature.java, signature.clj): this key, salt
	// and path sign to this.
	if got := sign(key, salt, path, 32); got != "m3k5QADfcKPDj-SDI2AIogZbC3FlAXszuwhtWXYqavc" {
		t.Fatalf("signature %s: not imgproxy's documented one", got)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		sig  string
		code apierr.Code
	}{
		{"first key", Config{Keys: keys}, sign(key, salt, path, 32), ""},
		{"rotated key", Config{Keys: keys}, sign(k2, s2, path, 32), ""},
		{"truncated", Config{Keys: keys, SignatureSize: 8}, sign(key, salt, path, 8), ""},
		{"full when truncated", Config{Keys: keys, SignatureSize: 8}, sign(key, salt, path, 32), apierr.BadSignature},
		{"wrong", Config{Keys: keys}, sign(key, salt, path+"x", 32), apierr.BadSignature},
		{"unsafe with keys", Config{Keys: keys}, "unsafe", apierr.BadSignature},
		{"not base64", Config{Keys: keys}, "!!", apierr.BadSignature},
		{"no keys: any", Config{}, "insecure", ""},
		{"no keys: an option is no signature", Config{}, "w:100", apierr.BadSignature},
	} {
		c.cfg.MaxSide = 4096
		_, err := c.cfg.Parse("/" + c.sig + path)
		if codeOf(err) != c.code {
			t.Errorf("%s: %v, want %q", c.name, err, c.code)
		}
	}
	if _, err := ParseKeys("aa", ""); err == nil {
		t.Error("a key without its salt was taken")
	}
	if _, err := ParseKeys("zz", "aa"); err == nil {
		t.Error("a key that is not hex was taken")
	}
}

func TestSources(t *testing.T) {
	b64 := base64.RawURLEncoding.EncodeToString
	chunk := func(s string) string { return s[:5] + "/" + s[5:] }
	bucket := Config{MaxSide: 4096, Bucket: "photos", BucketPrefix: "in/"}
	for _, c := range []struct {
		cfg      Config
		path     string
		src, url string
		code     apierr.Code
	}{
		{config(), "/_/plain/local:///a/b.jpg", "a/b.jpg", "", ""},
		{config(), "/_/plain/local:/a/b.jpg", "a/b.jpg", "", ""}, // a proxy's "local:/"
		{config(), "/_/" + b64([]byte("local:///a/b.jpg")), "a/b.jpg", "", ""},
		{config(), "/_/" + chunk(b64([]byte("local:///a/b.jpg"))) + ".png", "a/b.jpg", "", ""},
		{config(), "/_/plain/http://example.com/a%20b.jpg", "", "http://example.com/a b.jpg", ""},
		{config(), "/_/plain/https:/example.com/x.jpg@webp", "", "https://example.com/x.jpg", ""},
		{config(), "/_/plain/local:///../etc/passwd", "", "", apierr.BadSourceName},
		{config(), "/_/plain/local:///a/../../x.jpg", "", "", apierr.BadSourceName},
		{config(), "/_/plain/local:///a//x.jpg", "", "", apierr.BadSourceName},
		{config(), "/_/plain/local:///", "", "", apierr.BadSourceName},
		{bucket, "/_/plain/s3://photos/in/a.jpg", "a.jpg", "", ""},
		{bucket, "/_/plain/s3://photos/out/a.jpg", "", "", apierr.SourceNotFound},
		{bucket, "/_/plain/s3://other/in/a.jpg", "", "", apierr.SourceNotFound},
		{config(), "/_/plain/s3://photos/a.jpg", "", "", apierr.SourceNotFound},
		{config(), "/_/plain/gs://b/a.jpg", "", "", apierr.URLSchemeNotAllowed},
		{config(), "/_/plain/abs://b/a.jpg", "", "", apierr.URLSchemeNotAllowed},
		{config(), "/_/plain/swift://b/a.jpg", "", "", apierr.URLSchemeNotAllowed},
		{config(), "/_/plain/data:image/png;base64,AAAA", "", "", apierr.URLSchemeNotAllowed},
		{config(), "/_/plain/a.jpg", "", "", apierr.BadURL},
		{config(), "/_/plain/local:///a.jpg@png@webp", "", "", apierr.BadURL},
		{config(), "/_/%%%", "", "", apierr.BadURL},
		{config(), "/_/plain/local:///a%zz.jpg", "", "", apierr.BadURL},
		{config(), "/_", "", "", apierr.NotFound},
		{config(), "/", "", "", apierr.NotFound},
	} {
		r, err := c.cfg.Parse(c.path)
		if codeOf(err) != c.code {
			t.Errorf("%s: %v, want %q", c.path, err, c.code)
			continue
		}
		if err == nil && (r.Asked.Src != c.src || r.Asked.URL != c.url) {
			t.Errorf("%s: src %q url %q, want %q %q", c.path, r.Asked.Src, r.Asked.URL, c.src, c.url)
		}
	}
	r, _ := config().Parse("/_/plain/local:///dir/cat.photo.jpg")
	if r.Filename != "cat.photo" || r.Asked.Options.Format != imagefmt.Source {
		t.Errorf("filename %q, format %q: want the source's base name and its format", r.Filename, r.Asked.Options.Format)
	}
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opts string
		want map[string]string // "-" removes a default key
		code apierr.Code
	}{
		{"", base(map[string]string{"w": "4096", "h": "4096"}), ""},
		{"rs:fill:300:400:0", base(map[string]string{"w": "300", "h": "400", "fit": "cover"}), ""},
		{"resize:fit:300:0:1", base(map[string]string{"w": "300", "enlarge": "true"}), ""},
		{"rs:force:30:40", base(map[string]string{"w": "30", "h": "40", "fit": "fill"}), ""},
		{"rs:fill-down:30:40", base(map[string]string{"w": "30", "h": "40", "fit": "cover"}), ""},
		{"rs:fill-down:30:40:1", base(map[string]string{"w": "30", "h": "40", "fit": "cover"}), ""}, // never enlarges
		{"ex:1:so", base(map[string]string{"w": "4096", "h": "4096"}), ""},                          // no size: nothing to extend to
		{"rs:auto:30", base(map[string]string{"w": "30"}), ""},
		{"rs:auto:30:40", nil, ""}, // the plan decides (TestSourceSizedOptions)
		{"rs:crop:30:40", nil, apierr.BadParameter},
		{"rs:fit:30:40:1:1:1", nil, apierr.BadParameter}, // extend gravity "1"
		{"rs:fit:1:2:3:4:5:6:7:8", nil, apierr.BadParameter},
		{"s:30:40", base(map[string]string{"w": "30", "h": "40"}), ""},
		{"size:30:40:t:t:so", base(map[string]string{"w": "30", "h": "40", "enlarge": "true", "extend": "true", "gravity": "s"}), ""},
		{"s:x", nil, apierr.BadParameter},
		{"rt:fill/w:10/h:20", base(map[string]string{"w": "10", "h": "20", "fit": "cover"}), ""},
		{"resizing_type:force/width:10/height:20", base(map[string]string{"w": "10", "h": "20", "fit": "fill"}), ""},
		{"rt:nope", nil, apierr.BadParameter},
		{"w:-1", nil, apierr.BadParameter},
		{"h:1.5", nil, apierr.BadParameter},
		{"w:10/h:0", base(map[string]string{"w": "10"}), ""},
		{"mw:0/mh:0/min-width:0/min-height:0", base(map[string]string{"w": "4096", "h": "4096"}), ""},
		{"mw:10", nil, ""},
		{"min-height:10", nil, ""},
		{"w:100/z:1.5", base(map[string]string{"w": "150"}), ""},
		{"w:100/h:100/zoom:2:0.5", base(map[string]string{"w": "200", "h": "50"}), ""},
		{"z:2", nil, apierr.BadParameter},
		{"z:0", nil, apierr.BadParameter},
		{"w:10/dpr:2", base(map[string]string{"w": "10", "dpr": "2"}), ""},
		{"w:10/dpr:0.5", nil, apierr.BadParameter},
		{"w:10/dpr:5", nil, apierr.BadParameter},
		{"dpr:x", nil, apierr.BadParameter},
		{"el:1/dpr:2", nil, apierr.BadParameter},
		{"w:10/el:1", base(map[string]string{"w": "10", "enlarge": "true"}), ""},
		{"w:10/enlarge:maybe", nil, apierr.BadParameter},
		{"w:10/h:10/ex:1:nowe", base(map[string]string{"w": "10", "h": "10", "extend": "true", "gravity": "nw"}), ""},
		{"w:10/h:10/extend:1", base(map[string]string{"w": "10", "h": "10", "extend": "true"}), ""},
		{"w:10/h:10/ex:1:no:5:0", nil, ""},
		{"w:10/h:10/ex:1:sm", nil, apierr.BadParameter},
		{"rs:fill:10:10/g:no/ex:1:so", nil, apierr.BadParameter},
		{"rs:fill:10:10/g:no/ex:1:no", base(map[string]string{"w": "10", "h": "10", "fit": "cover", "extend": "true", "gravity": "n"}), ""},
		{"w:10/exar:0", base(map[string]string{"w": "10"}), ""},
		{"w:10/extend_aspect_ratio:1", nil, ""},
		{"rs:fill:10:10/g:soea", base(map[string]string{"w": "10", "h": "10", "fit": "cover", "gravity": "se"}), ""},
		{"rs:fill:10:10/gravity:sm", base(map[string]string{"w": "10", "h": "10", "fit": "cover", "gravity": "attention"}), ""},
		{"rs:fill:10:10/g:fp:0.25:0.75", base(map[string]string{"w": "10", "h": "10", "fit": "cover", "gravity": "focal", "fx": "0.25", "fy": "0.75"}), ""},
		{"rs:fill:10:10/g:ce:0:0", base(map[string]string{"w": "10", "h": "10", "fit": "cover"}), ""},
		{"g:ce:10:0", nil, ""},
		{"g:fp:2:0.5", nil, apierr.BadParameter},
		{"g:fp:0.5", nil, apierr.BadParameter},
		{"g:fp:nan:0.5", nil, apierr.BadParameter},
		{"wm:nan", nil, apierr.BadParameter},
		{"bl:inf", nil, apierr.BadParameter},
		{"g:obj:face", nil, apierr.BadParameter},
		{"g:sm:1", nil, apierr.BadParameter},
		{"w:10/c:0.5:0.5", nil, ""}, // imgproxy's crop (TestSourceSizedOptions)
		{"w:10/crop:0.5:0:nowe", nil, ""},
		{"w:10/c:0.5:0.5:fp:1:0", nil, ""},
		{"w:10/c:100:50:nowe", nil, ""},
		{"w:10/g:nowe/c:100:50", nil, ""},
		{"w:10/c:100:50", nil, ""},
		{"w:10/c:0.5:0.5:sm", nil, apierr.BadParameter},
		{"w:10/c:0:0", base(map[string]string{"w": "10"}), ""},
		{"c:-1:5", nil, apierr.BadParameter},
		{"w:10/t:10", base(map[string]string{"w": "10", "trim": "10"}), ""},
		{"w:10/trim:10:FFFFFF:0:0", base(map[string]string{"w": "10", "trim": "10,ffffff"}), ""},
		{"w:10/t:10::1", nil, ""},
		{"t:10::x", nil, apierr.BadParameter},
		{"w:10/t:10.5", base(map[string]string{"w": "10", "trim": "10.5"}), ""},
		{"t:nan", nil, apierr.BadParameter},
		{"t:300", nil, apierr.BadParameter},
		{"t:10:xyz", nil, apierr.BadParameter},
		{"w:10/pd:5", base(map[string]string{"w": "10", "pad": "5,5,5,5"}), ""},
		{"w:10/padding:1:2", base(map[string]string{"w": "10", "pad": "1,2,1,2"}), ""},
		{"w:10/pd:1:2:3", base(map[string]string{"w": "10", "pad": "1,2,3,2"}), ""},
		{"w:10/pd:1:2:3:4", base(map[string]string{"w": "10", "pad": "1,2,3,4"}), ""},
		{"pd:-1", nil, apierr.BadParameter},
		{"pd:1:2:3:4:5", nil, apierr.BadParameter},
		{"w:10/ar:1/auto_rotate:true", base(map[string]string{"w": "10"}), ""},
		{"ar:0", nil, apierr.BadParameter},
		{"w:10/rot:-90", base(map[string]string{"w": "10", "rotate": "270"}), ""},
		{"w:10/rotate:450", base(map[string]string{"w": "10", "rotate": "90"}), ""},
		{"w:10/rot:360", base(map[string]string{"w": "10"}), ""},
		{"rot:45", nil, apierr.BadParameter},
		{"w:10/fl:1:0", base(map[string]string{"w": "10", "flip": "h"}), ""},
		{"w:10/flip:0:1", base(map[string]string{"w": "10", "flip": "v"}), ""},
		{"w:10/fl:t:t", base(map[string]string{"w": "10", "flip": "hv"}), ""},
		{"fl:x", nil, apierr.BadParameter},
		{"w:10/bg:255:0:10", base(map[string]string{"w": "10", "bg": "ff000a"}), ""},
		{"w:10/background:FFAA00", base(map[string]string{"w": "10", "bg": "ffaa00"}), ""},
		{"w:10/bg:ffaa00/bg:", base(map[string]string{"w": "10"}), ""},
		{"bg:256:0:0", nil, apierr.BadParameter},
		{"bg:fff", nil, apierr.BadParameter},
		{"bg:1:2", nil, apierr.BadParameter},
		{"w:10/bl:2", base(map[string]string{"w": "10", "blur": "2"}), ""},
		{"w:10/blur:0", base(map[string]string{"w": "10"}), ""},
		{"bl:0.1", nil, apierr.BadParameter},
		{"bl:-1", nil, apierr.BadParameter},
		{"w:10/sh:0.5", base(map[string]string{"w": "10", "sharpen": "0.5"}), ""},
		{"sharpen:11", nil, apierr.BadParameter},
		{"w:10/pix:8", base(map[string]string{"w": "10", "pixelate": "8"}), ""},
		{"w:10/pixelate:1", base(map[string]string{"w": "10"}), ""},
		{"pix:1000", nil, apierr.BadParameter},
		{"pix:x", nil, apierr.BadParameter},
		{"w:10/wm:0.5", base(map[string]string{"w": "10", "wm": "0.5,ce,0,0"}), ""},
		{"w:10/watermark:1:soea:10:5:0.25", base(map[string]string{"w": "10", "wm": "1,soea,10,5,0.25"}), ""},
		{"w:10/wm:0", base(map[string]string{"w": "10"}), ""},
		{"wm:2", nil, apierr.BadParameter},
		{"wm:0.5:ce:-5:0", nil, apierr.BadParameter},
		{"wm:0.5:ce:0:0:2", nil, apierr.BadParameter},
		{"w:10/sm:1/strip_metadata:t", base(map[string]string{"w": "10"}), ""},
		{"w:10/sm:0", base(map[string]string{"w": "10"}), ""},       // thumbd keeps at most the copyright
		{"w:10/sm:0/kcr:0", base(map[string]string{"w": "10"}), ""}, // the same
		{"w:10/kcr:0/keep_copyright:f", base(map[string]string{"w": "10", "copyright": "-"}), ""},
		{"w:10/kcr:0/kcr:1", base(map[string]string{"w": "10"}), ""},
		{"kcr:maybe", nil, apierr.BadParameter},
		// imgproxy Pro's video thumbnails: vts is t, vtk keyframe.
		{"w:10/vts:1.5", base(map[string]string{"w": "10", "t": "1.5"}), ""},
		{"w:10/video_thumbnail_second:2/vtk:1", base(map[string]string{"w": "10", "t": "2", "keyframe": "true"}), ""},
		{"w:10/vtk:1", base(map[string]string{"w": "10"}), ""}, // keyframe alone is the default poster's
		{"vts:abc", nil, apierr.BadParameter},
		{"vts:-1", nil, apierr.BadParameter},
		{"vts:1000001", nil, apierr.BadParameter},
		{"vts:1:2", nil, apierr.BadParameter},
		{"vtk:maybe", nil, apierr.BadParameter},
		{"sm:2:2", nil, apierr.BadParameter},
		{"w:10/scp:1/strip_color_profile:1", base(map[string]string{"w": "10"}), ""},
		{"scp:0", nil, apierr.BadParameter},
		{"w:10/f:webp/q:70", base(map[string]string{"w": "10", "format": "webp", "q": "70"}), ""},
		{"w:10/format:jpg/quality:0", base(map[string]string{"w": "10", "format": "jpeg"}), ""},
		{"w:10/ext:png", base(map[string]string{"w": "10", "format": "png"}), ""},
		{"q:101", nil, apierr.BadParameter},
		{"q:x", nil, apierr.BadParameter},
		{"f:best", nil, apierr.BadParameter},
		{"f:svg", nil, apierr.BadParameter},
		{"f:webp:avif", nil, apierr.BadParameter},
		{"w:10/f:avif/fq:avif:50:webp:60", base(map[string]string{"w": "10", "format": "avif", "q": "50"}), ""},
		{"w:10/f:avif/format_quality:webp:60", base(map[string]string{"w": "10", "format": "avif"}), ""},
		{"w:10/f:avif/q:30/fq:avif:50", base(map[string]string{"w": "10", "format": "avif", "q": "30"}), ""},
		{"fq:avif", nil, apierr.BadParameter},
		{"fq:avif:50", nil, apierr.BadParameter}, // no format named: the source's
		{"fq:nope:50", nil, apierr.BadParameter},
		{"w:10/skp:jpg", nil, ""}, // TestSourceSizedOptions
		{"skp:jpg:bmpx", nil, apierr.BadParameter},
		{"w:10/raw:0", base(map[string]string{"w": "10"}), ""},
		{"raw:yes", nil, apierr.BadParameter},
		{"wm:0.5/raw:1", nil, apierr.BadParameter},
		{"w:10/cb:abc/cachebuster:x", base(map[string]string{"w": "10"}), ""},
		{"cb:a:b", nil, apierr.BadParameter},
		{"w:10/exp:4102444800", base(map[string]string{"w": "10"}), ""},
		{"w:10/expires:0", base(map[string]string{"w": "10"}), ""},
		{"exp:1000", nil, apierr.SignatureExpired},
		{"exp:soon", nil, apierr.BadParameter},
		{"w:10/fn:cat/filename:dog", base(map[string]string{"w": "10"}), ""},
		{"fn:a\"b", nil, apierr.BadParameter},
		{"fn:!!:1", nil, apierr.BadParameter},
		{"w:10/att:1/return_attachment:0", base(map[string]string{"w": "10"}), ""},
		{"att:x", nil, apierr.BadParameter},
		{"pr:thumb", base(map[string]string{"w": "128", "h": "128", "fit": "cover", "q": "70"}), ""}, // in the source's format at q 70
		{"preset:thumb/w:64/f:webp", base(map[string]string{"w": "64", "h": "128", "fit": "cover", "q": "70", "format": "webp"}), ""},
		{"pr:loop", base(map[string]string{"w": "7"}), ""},
		{"pr:nope", nil, apierr.BadParameter},
		{"w:10/max_bytes:1000", nil, ""}, // TestSourceSizedOptions
		{"mb:-1", nil, apierr.BadParameter},
		{"wmt:hello", nil, apierr.BadParameter},
		{"ph:1", nil, apierr.BadParameter},
		{"eth:1", nil, apierr.BadParameter},
		{"widht:100", nil, apierr.BadParameter},
	} {
		cfg := config()
		cfg.Now = func() time.Time { return time.Unix(2000, 0) }
		var err error
		cfg.Presets, err = ParsePresets("thumb=rs:fill:128:128/q:70,loop=w:7/pr:loop")
		if err != nil {
			t.Fatal(err)
		}
		opts := c.opts
		if opts != "" {
			opts += "/"
		}
		path := "/_/" + opts + "plain/local:///a.jpg"
		if strings.Contains(c.opts, "f:") || strings.Contains(c.opts, "format:") || strings.Contains(c.opts, "ext:") {
			path = "/_/" + opts + "plain/local:///a.jpg"
		}
		r, err := cfg.Parse(path)
		if err == nil {
			_, err = params.Rules{MaxSide: 4096, Watermark: params.Watermark{Configured: true}}.Signed().Make(r.Asked) // the bounds
		}
		if codeOf(err) != c.code {
			t.Errorf("%s: %v, want %q", c.opts, err, c.code)
			continue
		}
		if err != nil {
			name, _, _ := strings.Cut(c.opts[strings.LastIndex(c.opts, "/")+1:], ":")
			if c.code == apierr.BadParameter && !strings.Contains(err.Error(), `"`+name+`"`) && !strings.Contains(err.Error(), `"`+aliases[name]+`"`) {
				t.Errorf("%s: %q does not name %q", c.opts, err, name)
			}
			continue
		}
		if c.want == nil {
			continue
		}
		got, want := made(t, r), job(t, c.want)
		if got.Normalised() != want.Normalised() {
			t.Errorf("%s:\n got %s\nwant %s (%v)", c.opts, got.Normalised(), want.Normalised(), c.want)
		}
	}
}

func TestPathShapes(t *testing.T) {
	cfg := config()
	for _, c := range []struct {
		path         string
		format       string
		sourceFormat bool
		quality      int
		filename     string
		attachment   bool
	}{
		// The Next.js example loader: /unsafe with width and quality.
		{"/unsafe/width:640/quality:75/plain/local:///a.jpg", "", true, 75, "a", false},
		// An extension on a plain source, and its option twin.
		{"/_/plain/local:///a.jpg@webp", "webp", false, 0, "a", false},
		{"/_/" + base64.RawURLEncoding.EncodeToString([]byte("local:///a.jpg")) + ".avif", "avif", false, 0, "a", false},
		// ActiveStorage: fn with a chunked base64 source, attachment.
		{"/_/fn:photo/att:1/" + "bG9jYWw6Ly8v/YS5qcGc", "", true, 0, "photo", true},
		{"/_/fn:" + base64.RawURLEncoding.EncodeToString([]byte("ünï")) + ":1/plain/local:///a.jpg", "", true, 0, "ünï", false},
		// %3A for ":" in the options (a CDN's escaping).
		{"/_/rs%3Afill%3A10%3A10/plain/local:///a.jpg", "", true, 0, "a", false},
	} {
		r, err := cfg.Parse(c.path)
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		o := r.Asked.Options
		if c.sourceFormat != (o.Format == imagefmt.Source) || !c.sourceFormat && string(o.Format) != c.format || o.Quality != c.quality || r.Filename != c.filename || r.Attachment != c.attachment || r.Asked.Src != "a.jpg" {
			t.Errorf("%s: %+v", c.path, r)
		}
	}
}

func TestPresets(t *testing.T) {
	cfg := config()
	p, err := ParsePresets("default=q:60/f:webp, small=s:64:64")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Presets = p
	r, err := cfg.Parse("/_/pr:small/plain/local:///a.jpg")
	if o := r.Asked.Options; err != nil || o.Quality != 60 || o.Format != imagefmt.WebP || o.Width != 64 {
		t.Errorf("default then small: %+v %v", o, err)
	}
	r, err = cfg.Parse("/_/q:90/plain/local:///a.jpg")
	if err != nil || r.Asked.Options.Quality != 90 {
		t.Errorf("the URL overrides the default preset: %+v %v", r.Asked.Options, err)
	}
	for _, bad := range []string{"x", "=w:1", "a=", "a=w", "a=w:1,a=h:1"} {
		if _, err := ParsePresets(bad); err == nil {
			t.Errorf("presets %q taken", bad)
		}
	}
	p, _ = ParsePresets("a=w:x")
	if err := p.Check(cfg); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("a preset with a bad value: %v", err)
	}
	p, _ = ParsePresets("default=w:1")
	if err := p.Check(cfg); err != nil {
		t.Errorf("a good preset: %v", err)
	}
}

// The grammar goes through params' rules as GET /thumbnail does
// (pipeline.Translated reads Request.Query with them): unsigned, the
// bounded mode refuses its transforms off THUMBD_ALLOWED_TRANSFORMS (bl:,
// pd: ...) and answers wider than THUMBD_ALLOWED_WIDTHS, takes what its
// presets and its own defaults give (Request.Operator), and binds nothing
// signed.
func TestUnsignedIsBounded(t *testing.T) {
	cfg := config()
	var err error
	if cfg.Presets, err = ParsePresets("soft=bl:5,framed=pd:10,small=rs:fill:640:384:1,q70=q:70"); err != nil {
		t.Fatal(err)
	}
	values, err := params.ParseAllowedTransforms("pad=8")
	if err != nil {
		t.Fatal(err)
	}
	rules := params.Rules{MaxSide: 4096, Watermark: params.Watermark{Configured: true},
		Allowed: params.Allowed{Sides: []int{16, 384, 640, 1080}, Qualities: []int{75}, Transforms: values}}
	for _, c := range []struct{ opts, want string }{
		{"w:640", ""},
		{"rs:fill:640:384", ""},
		{"w:640/bl:5", `imgproxy option "bl"`},
		{"w:640/sh:1", `imgproxy option "sh"`},
		{"w:640/pix:4", `imgproxy option "pix"`},
		{"w:640/bg:ff0000", `imgproxy option "bg"`},
		{"w:640/t:10", `imgproxy option "t"`},
		{"w:640/c:0.5:0.5", `imgproxy option "c"`},
		{"w:640/rot:90", `imgproxy option "rot"`},
		{"w:640/fl:1", `imgproxy option "fl"`},
		{"w:640/el:1", ""}, // thumbd's default; el:0 is imgproxy's
		{"w:640/el:0", ""},
		{"rs:fit:640:384:0:1", `imgproxy option "rs"`},
		{"rs:fill:640:384/g:fp:0.5:0.5", `imgproxy option "g"`},
		{"w:640/wm:0.5", `imgproxy option "wm"`},
		{"w:640/pd:10", `imgproxy option "pd"`},
		{"w:640/pd:8", "width 656"},
		{"w:624/pd:8", ""},
		{"w:640/pr:soft", ""},
		{"w:640/pr:soft/bl:6", `imgproxy option "bl"`},
		{"w:640/bl:6/pr:soft", ""}, // the preset, applied after, wins
		{"w:620/pr:framed", ""},
		{"w:640/pr:framed", "width 660"},
		{"pr:small", ""},
		{"w:640/f:webp/pr:q70", ""},
		{"w:640/f:webp/q:70", `imgproxy option "q"`},
		{"", `imgproxy option "width"`}, // no size: the source's own, up to the max side
	} {
		r, err := cfg.Parse("/_/" + c.opts + "/plain/local:///a.jpg")
		if err != nil {
			t.Fatalf("%s: %v", c.opts, err)
		}
		_, err = rules.Make(r.Asked)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.opts, err)
		case c.want != "" && (codeOf(err) != apierr.BadParameter || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a 400 naming %s", c.opts, err, c.want)
		}
		if _, err := rules.Signed().Make(r.Asked); err != nil {
			t.Errorf("%s signed: %v", c.opts, err)
		}
	}
}

// BenchmarkParse is the budget (at most 20 µs above the
// equivalent query's parse): a signed URL with a typical option set.
func BenchmarkParse(b *testing.B) {
	keys, _ := ParseKeys("943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881", "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5")
	cfg := Config{Keys: keys, MaxSide: 4096}
	path := "/rs:fill:300:200:0/g:sm/q:75/f:webp/" + base64.RawURLEncoding.EncodeToString([]byte("local:///photos/2024/cat.jpg"))
	url := "/" + sign("943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881", "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5", path, 32) + path
	if _, err := cfg.Parse(url); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = cfg.Parse(url)
	}
}

// imgproxy's options that need the source's size are made into options
// the plan reads (docs/imgproxy.md): rt:auto with both sides, crop at any
// gravity (its size as the box sees the image, its offsets), gravity
// offsets, min-width and min-height, extend_aspect_ratio, trim's
// equal_hor and equal_ver.
func TestSourceSizedOptions(t *testing.T) {
	anchor := func(g thumbjob.Gravity, x, y float64) *thumbjob.Anchor {
		return &thumbjob.Anchor{Gravity: g, Offset: thumbjob.Offset{X: x, Y: y}}
	}
	for _, c := range []struct {
		opts string
		want func(o thumbjob.Options) bool
	}{
		{"rs:auto:30:40", func(o thumbjob.Options) bool { return o.Fit == thumbjob.FitAuto && o.Width == 30 && o.Height == 40 }},
		{"rs:auto:30", func(o thumbjob.Options) bool { return o.Fit == thumbjob.FitInside }},
		{"w:10/c:100:50", func(o thumbjob.Options) bool {
			return cropIs(o, 100, 50, anchor(thumbjob.GravityCentre, 0, 0))
		}},
		{"w:10/c:100:50:soea:3:4", func(o thumbjob.Options) bool {
			return cropIs(o, 100, 50, anchor(thumbjob.GravitySouthEast, 3, 4))
		}},
		{"w:10/g:fp:0.2:0.7/c:0.5:0.5", func(o thumbjob.Options) bool {
			return cropIs(o, 0.5, 0.5, anchor(thumbjob.GravityFocal, 0.2, 0.7))
		}},
		{"rs:fill:10:10/g:no:10:20", func(o thumbjob.Options) bool {
			return o.Gravity == thumbjob.GravityNorth && o.Offset != nil && *o.Offset == thumbjob.Offset{X: 10, Y: 20}
		}},
		{"rs:fill:10:10/g:ce:0.1:0", func(o thumbjob.Options) bool { return *o.Offset == thumbjob.Offset{X: 0.1} }},
		{"w:10/h:10/ex:1:no:5:0", func(o thumbjob.Options) bool {
			return o.Extend && o.Gravity == thumbjob.GravityNorth && *o.Offset == thumbjob.Offset{X: 5}
		}},
		{"w:100/mw:200/mh:30", func(o thumbjob.Options) bool { return o.MinWidth == 200 && o.MinHeight == 30 }},
		{"w:100/h:50/exar:1:so", func(o thumbjob.Options) bool { return *o.ExtendAspect == *anchor(thumbjob.GravitySouth, 0, 0) }},
		{"w:100/h:50/exar:1", func(o thumbjob.Options) bool { return *o.ExtendAspect == *anchor(thumbjob.GravityCentre, 0, 0) }},
		{"w:10/t:10::1:0", func(o thumbjob.Options) bool { return o.Trim.EqualHor && !o.Trim.EqualVer }},
		{"w:10/t:10:ffffff:1:1", func(o thumbjob.Options) bool { return o.Trim.EqualHor && o.Trim.EqualVer && o.Trim.Colour != nil }},
		{"w:10/mb:5000", func(o thumbjob.Options) bool { return o.MaxBytes == 5000 }},
		{"w:10/skp:jpg:gif:svg:tif", func(o thumbjob.Options) bool { return o.AsIs == "jpeg,gif,tiff" && o.Format == imagefmt.Source }},
		{"skip_processing:png/f:png", func(o thumbjob.Options) bool { return o.AsIs == "png" && o.Format == imagefmt.PNG }},
		{"w:10/f:png/raw:1", func(o thumbjob.Options) bool {
			return o.AsIs == thumbjob.AsIsOf(imagefmt.Images()) && o.Format == imagefmt.Source
		}},
	} {
		r, err := config().Parse("/_/" + c.opts + "/plain/local:///a.jpg")
		if err != nil {
			t.Errorf("%s: %v", c.opts, err)
			continue
		}
		if !c.want(r.Asked.Options) {
			t.Errorf("%s: %+v", c.opts, r.Asked.Options)
		}
	}
}

// cropIs says whether o crops w x h placed by a.
func cropIs(o thumbjob.Options, w, h float64, a *thumbjob.Anchor) bool {
	c := o.Crop
	return c != nil && c.W == w && c.H == h && c.Anchor != nil && *c.Anchor == *a
}

// job is the job thumbd's own query q asks for (an answer in the source's
// format compared as JPEG): what the imgproxy URL must make.
func job(t *testing.T, q map[string]string) thumbjob.Options {
	t.Helper()
	q = maps.Clone(q)
	if _, ok := q["format"]; !ok {
		q["format"] = "jpeg"
	}
	req, err := params.Rules{MaxSide: 4096, Watermark: params.Watermark{Configured: true}}.Upload(q)
	if err != nil {
		t.Fatalf("%v: %v", q, err)
	}
	return req.Options
}

// made is the job an imgproxy request makes, as thumbd makes it (an
// answer in the source's format as JPEG, at its default quality when
// none is asked).
func made(t *testing.T, r Request) thumbjob.Options {
	t.Helper()
	req, err := params.Rules{MaxSide: 4096, Watermark: params.Watermark{Configured: true}}.Make(r.Asked)
	if err != nil {
		t.Fatalf("%+v: %v", r.Asked.Options, err)
	}
	o := req.Options
	if o.Format == imagefmt.Source {
		o = o.FromSource(imagefmt.JPEG)
		if o.Quality == 0 {
			o.Quality = 80
		}
	}
	return o
}

// BenchmarkParseToJob is the grammar's whole parse, the URL to the job
// params makes of it, signed and unsigned (where its presets are applied
// again to tell the operator's values from the client's).
func BenchmarkParseToJob(b *testing.B) {
	key, salt := "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881", "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"
	keys, _ := ParseKeys(key, salt)
	presets, _ := ParsePresets("default=q:80,thumb=rs:fill:128:128")
	path := "/rs:fill:300:200:0/g:sm/q:75/f:webp/" + base64.RawURLEncoding.EncodeToString([]byte("local:///photos/2024/cat.jpg"))
	rules := params.Rules{MaxSide: 4096, Allowed: params.Allowed{Sides: []int{128, 200, 300}}}
	for _, c := range []struct {
		name string
		cfg  Config
		url  string
	}{
		{"signed", Config{Keys: keys, MaxSide: 4096, Presets: presets}, "/" + sign(key, salt, path, 32) + path},
		{"unsigned", Config{MaxSide: 4096, Presets: presets}, "/_" + path},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := c.cfg.Parse(c.url)
				if err != nil {
					b.Fatal(err)
				}
				rules := rules
				if r.Signed {
					rules = rules.Signed()
				}
				if _, err := rules.Make(r.Asked); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// With THUMBD_IMGPROXY_AUTO_FORMAT, a URL without a format is format=auto,
// but not with skip_processing: a format negotiated before the source is
// read would never be the skipped one's (every browser takes WebP).
func TestSkipProcessingUnderAutoFormat(t *testing.T) {
	c := config()
	c.AutoFormat = true
	for opts, want := range map[string]imagefmt.Format{"w:10": imagefmt.Auto, "w:10/skp:gif": imagefmt.Source, "w:10/skp:gif/f:webp": imagefmt.WebP} {
		r, err := c.Parse("/_/" + opts + "/plain/local:///a.gif")
		if err != nil || r.Asked.Options.Format != want {
			t.Errorf("%s: format %q, %v; want %q", opts, r.Asked.Options.Format, err, want)
		}
	}
}

// TestSettersSetKnownFields: every thumbd option a setter says it sets
// has its place in fields (vts and vtk once set t and keyframe, which
// had none: every URL with vts panicked).
func TestSettersSetKnownFields(t *testing.T) {
	for name, st := range setters {
		for _, f := range st.sets {
			if field(f) < 0 {
				t.Errorf("%s sets %q, which fields lacks", name, f)
			}
		}
	}
}
