package thumb

// The few libvips calls govips does not expose: loader hardening and a
// header-only probe. They live here so that the rest of the package stays on
// govips' API.

/*
#cgo pkg-config: vips
#include <malloc.h>
#include <stdlib.h>
#include <vips/vips.h>

typedef struct {
	int width, height, pages, orientation, alpha;
} thumbd_header;

// thumbd_harden blocks every operation libvips marks untrusted and every
// loader except the four formats thumbd serves, so that a crafted file
// cannot reach, say, the ImageMagick or PDF loaders even if a build has them.
static void thumbd_harden(void) {
	vips_block_untrusted_set(TRUE);
	vips_operation_block_set("VipsForeignLoad", TRUE);
	vips_operation_block_set("VipsForeignLoadJpeg", FALSE);
	vips_operation_block_set("VipsForeignLoadPng", FALSE);
	vips_operation_block_set("VipsForeignLoadSpng", FALSE);
	vips_operation_block_set("VipsForeignLoadWebp", FALSE);
	vips_operation_block_set("VipsForeignLoadNsgif", FALSE);
	vips_operation_block_set("VipsForeignLoadGif", FALSE);
}

// thumbd_probe reads only the header: libvips loads lazily, so no pixel is
// decoded here. Returns -1 with the libvips error in *err (caller frees).
static int thumbd_probe(const void *buf, size_t len, thumbd_header *h, char **err) {
	VipsImage *im = vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
	if (im == NULL) {
		*err = g_strdup(vips_error_buffer());
		vips_error_clear();
		return -1;
	}
	h->width = vips_image_get_width(im);
	h->height = vips_image_get_height(im);
	h->pages = vips_image_get_n_pages(im);
	h->alpha = vips_image_hasalpha(im);
	h->orientation = 1;
	if (vips_image_get_typeof(im, VIPS_META_ORIENTATION)) {
		int o;
		if (vips_image_get_int(im, VIPS_META_ORIENTATION, &o) == 0) h->orientation = o;
	}
	g_object_unref(im);
	return 0;
}
*/
import "C"

import (
	"errors"
	"runtime"
	"strings"
	"unsafe"
)

func harden() { C.thumbd_harden() }

// header is what the probe learns before any pixel is decoded.
type header struct {
	width, height int // as stored, before EXIF orientation
	pages         int
	orientation   int
	alpha         bool // the decoded image will have an alpha channel
}

// displayed returns the size after EXIF orientation is applied: values 5-8
// rotate by 90 or 270 degrees and so swap the sides.
func (h header) displayed() (w, ht int) {
	if h.orientation >= 5 && h.orientation <= 8 {
		return h.height, h.width
	}
	return h.width, h.height
}

func probe(buf []byte) (header, error) {
	if len(buf) == 0 {
		return header{}, errors.New("empty image")
	}
	var h C.thumbd_header
	var cerr *C.char
	rc := C.thumbd_probe(unsafe.Pointer(&buf[0]), C.size_t(len(buf)), &h, &cerr)
	runtime.KeepAlive(buf)
	if rc != 0 {
		msg := C.GoString(cerr)
		C.g_free(C.gpointer(cerr))
		return header{}, errors.New(strings.TrimSpace(msg))
	}
	return header{width: int(h.width), height: int(h.height), pages: int(h.pages), orientation: int(h.orientation), alpha: h.alpha != 0}, nil
}

// TrimHeap gives the C heap's free memory back to the system (glibc's
// malloc_trim): libvips frees a job's pixels into malloc's arenas, which
// otherwise keep them, so a burst of large images would leave the process
// at its peak RSS.
func TrimHeap() { C.malloc_trim(0) }
