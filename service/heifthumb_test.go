package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/thumbd/thumbd/internal/heiftest"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumbhashtest"
)

// heifPair is a green 640x480 HEIC whose embedded thumbnail is a red
// tw x th one, or a broken one (its coded picture zeroed), or one whose
// ispe says th x tw (lying).
func heifPair(t *testing.T, tw, th int, broken, lying bool) []byte {
	t.Helper()
	solid := func(w, h int, c color.NRGBA) image.Image {
		img := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
		}
		return img
	}
	primary, err := heiftest.Encode(solid(640, 480, color.NRGBA{G: 200, A: 255}), "-q", "80")
	if err != nil {
		t.Fatal(err)
	}
	thumb, err := heiftest.Encode(solid(tw, th, color.NRGBA{R: 200, A: 255}), "-q", "80")
	if err != nil {
		t.Fatal(err)
	}
	if broken {
		clear(thumb[bytes.LastIndex(thumb, []byte("mdat"))+8:])
	}
	if at := bytes.Index(thumb, []byte("ispe")) + 8; lying && at >= 8 {
		binary.BigEndian.PutUint32(thumb[at:], uint32(th))
		binary.BigEndian.PutUint32(thumb[at+4:], uint32(tw))
	}
	out, err := heiftest.Transform(primary, heiftest.Options{Thumbnail: thumb})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHEIFEmbeddedThumbnailBothModes: a thumbnail is made from a HEIC's
// embedded thumbnail exactly when it needs no enlarging and has the
// primary's aspect ratio, in both engine modes; a broken one it would use
// is a 422; /info's ThumbHash comes from it when it is larger than the
// hash's box.
func TestHEIFEmbeddedThumbnailBothModes(t *testing.T) {
	honest, offAspect := heifPair(t, 320, 240, false, false), heifPair(t, 320, 256, false, false)
	broken, lying := heifPair(t, 320, 240, true, false), heifPair(t, 240, 320, false, true)
	inproc, _ := newTestServer(t, testConfig(t))
	cells := newCellsServer(t, cellsConfig(t), "")
	for mode, url := range map[string]string{"inprocess": inproc.URL, "cells": cells.URL} {
		for _, c := range []struct {
			name  string
			src   []byte
			query string
			w, h  int
			red   bool
		}{
			{"honest, 256", honest, "?w=256&h=256&fit=inside&format=png", 256, 192, true},
			{"honest, 400", honest, "?w=400&h=400&fit=inside&format=png", 400, 300, false},
			{"320x256 of 4:3, 256", offAspect, "?w=256&h=256&fit=inside&format=png", 256, 192, false},
			{"broken, 400", broken, "?w=400&h=400&fit=inside&format=png", 400, 300, false},
		} {
			s, _, b := postThumb(t, url, c.query, c.src)
			if s != 200 {
				t.Errorf("%s %s: %d %.200s", mode, c.name, s, b)
				continue
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			r, g, _, _ := img.At(c.w/2, c.h/2).RGBA()
			if img.Bounds().Dx() != c.w || img.Bounds().Dy() != c.h || (r > g) != c.red {
				t.Errorf("%s %s: %v, red %v; want %dx%d, red %v", mode, c.name, img.Bounds().Size(), r > g, c.w, c.h, c.red)
			}
		}
		for name, src := range map[string][]byte{"broken": broken, "240x320 declared 320x240": lying} {
			s, _, b := postThumb(t, url, "?w=256&h=256&fit=inside", src)
			var e errorBody
			if json.Unmarshal(b, &e) != nil || s != 422 || e.Code == string(apierr.EngineCrashed) {
				t.Errorf("%s %s, 256: %d %s, want a 422", mode, name, s, b)
			}
		}
		for name, want := range map[string]bool{"honest": true, "off-aspect": false} {
			src := map[string][]byte{"honest": honest, "off-aspect": offAspect}[name]
			s, _, b := postInfo(t, url, "", src)
			hash, err := base64.StdEncoding.DecodeString(readInfo(t, b).ThumbHash)
			if s != 200 || err != nil || len(hash) == 0 {
				t.Errorf("%s /info %s: %d %s", mode, name, s, b)
				continue
			}
			if avg := thumbhashtest.AverageRGBA(hash); (avg[0] > avg[1]) != want {
				t.Errorf("%s /info %s: ThumbHash average %v, from the embedded thumbnail: want %v", mode, name, avg, want)
			}
		}
	}
}
