package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

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
	signed, err := signing.SignURL(fs.Arg(0), *upload, *exp, cfg.rules().Signed(), cfg.SigningKeys, now, stderr)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, signed)
	return err
}
