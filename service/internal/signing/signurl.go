package signing

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/params"
)

// SignURL is `thumbd sign`'s work: raw, the path and query of a GET
// /thumbnail or /info (upload: their POST), checked as the route checks
// it with rules, exp= added exp from now when exp is set, then signed with
// keys' first and verified as the service verifies it. Warnings and notes
// for the one who signs go to warn.
func SignURL(raw string, upload bool, exp time.Duration, rules params.Rules, keys [][]byte, now time.Time, warn io.Writer) (string, error) {
	method := http.MethodGet
	if upload {
		method = http.MethodPost
	}
	u, err := url.Parse(raw)
	route, known := params.Route{}, false
	if err == nil {
		route, known = params.RouteOf(method, u.Path)
	}
	if !known || u.Scheme != "" || u.Host != "" {
		return "", fmt.Errorf("%q: want the path and query of a GET /thumbnail or /info, such as /thumbnail?src=a.jpg&w=200", raw)
	}
	q, err := route.Query(u.RawQuery)
	if err != nil {
		return "", err
	}
	if _, ok := q["sig"]; ok {
		return "", errors.New("the URL already has a sig=")
	}
	switch {
	case exp < 0:
		return "", errors.New("-exp: want a duration from now, such as 24h")
	case exp > 0:
		if _, ok := q["exp"]; ok {
			return "", errors.New("give exp= in the URL or -exp, not both")
		}
		q["exp"] = strconv.FormatInt(now.Add(exp).Unix(), 10)
	}
	if _, err := route.Read(rules, q); err != nil {
		return "", err
	}
	// The URL made is checked as the service will check it: an exp= that
	// is not a time, or already past, is caught here.
	signed := SignedPath(keys[0], u.Path, q)
	q["sig"] = Sign(keys[0], u.Path, q)
	if err := NewVerifier(keys, func() time.Time { return now }).Check(u.Path, q); err != nil {
		return "", err
	}
	// Warnings go to warn (stderr), so that $(thumbd sign ...) still gives the URL.
	if _, ok := q["exp"]; !ok {
		fmt.Fprintln(warn, "thumbd sign: warning: this URL never expires: whoever holds it may have it made until its key is retired; give -exp (such as -exp 720h) for one that ends")
	}
	if q["format"] == string(imagefmt.Auto) {
		fmt.Fprintln(warn, "thumbd sign: note: format=auto follows the request's Accept header, which is not signed: the URL's holder may choose AVIF, the dearest encode (docs/signing.md, \"Signed URLs\"); sign a format such as format=webp to bound it")
	}
	return signed, nil
}
