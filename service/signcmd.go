package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/signing"
)

const signUsage = "usage: thumbd sign [-exp DURATION] [-upload] '/thumbnail?url=...&w=...' (or '/info?url=...')"

// signCommand is `thumbd sign`: it prints the path with its query in
// canonical order and a sig= made with the first key of
// THUMBD_SIGNING_KEYS. The query is checked as GET /thumbnail or /info
// (or, with -upload, their POST) checks it, with the same environment, so
// a typo is caught here rather than signed.
func signCommand(args []string, lookupEnv func(string) (string, bool), now time.Time, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("thumbd sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exp := fs.Duration("exp", 0, "the URL expires this long from now (adds exp=, Unix seconds); without it (or exp=) the URL never expires, and a warning says so")
	upload := fs.Bool("upload", false, "sign the query of a POST /thumbnail (the options of an upload, no src or url)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, signUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New(signUsage)
	}
	cfg, err := loadConfig(nil, lookupEnv, stderr)
	if err != nil {
		return err
	}
	if len(cfg.SigningKeys) == 0 {
		return errors.New("THUMBD_SIGNING_KEYS is not set: there is no key to sign with")
	}
	method := http.MethodGet
	if *upload {
		method = http.MethodPost
	}
	u, err := url.Parse(fs.Arg(0))
	route, known := params.Route{}, false
	if err == nil {
		route, known = params.RouteOf(method, u.Path)
	}
	if !known || u.Scheme != "" || u.Host != "" {
		return fmt.Errorf("%q: want the path and query of a GET /thumbnail or /info, such as /thumbnail?src=a.jpg&w=200", fs.Arg(0))
	}
	q, err := route.Query(u.RawQuery)
	if err != nil {
		return err
	}
	if _, ok := q["sig"]; ok {
		return errors.New("the URL already has a sig=")
	}
	switch {
	case *exp < 0:
		return errors.New("-exp: want a duration from now, such as 24h")
	case *exp > 0:
		if _, ok := q["exp"]; ok {
			return errors.New("give exp= in the URL or -exp, not both")
		}
		q["exp"] = strconv.FormatInt(now.Add(*exp).Unix(), 10)
	}
	if _, err := route.Read(cfg.rules().Signed(), q); err != nil {
		return err
	}
	// The URL made is checked as the service will check it: an exp= that
	// is not a time, or already past, is caught here.
	signed := signing.SignedPath(cfg.SigningKeys[0], u.Path, q)
	q["sig"] = signing.Sign(cfg.SigningKeys[0], u.Path, q)
	if err := signing.NewVerifier(cfg.SigningKeys, func() time.Time { return now }).Check(u.Path, q); err != nil {
		return err
	}
	// Warnings go to stderr, so that $(thumbd sign ...) still gives the URL.
	if _, ok := q["exp"]; !ok {
		fmt.Fprintln(stderr, "thumbd sign: warning: this URL never expires: whoever holds it may have it made until its key is retired; give -exp (such as -exp 720h) for one that ends")
	}
	if q["format"] == string(imagefmt.Auto) {
		fmt.Fprintln(stderr, "thumbd sign: note: format=auto follows the request's Accept header, which is not signed: the URL's holder may choose AVIF, the dearest encode (docs/signing.md, \"Signed URLs\"); sign a format such as format=webp to bound it")
	}
	_, err = fmt.Fprintln(stdout, signed)
	return err
}
