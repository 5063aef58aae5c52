package thumb

// The few libvips calls govips does not expose: loader hardening and a
// header-only probe. They live here so that the rest of the package stays on
// govips' API.

/*
#cgo pkg-config: vips
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

typedef struct {
	int width, height, pages, orientation, alpha, bands, sample;
} thumbd_header;

// thumbd_harden blocks every operation libvips marks untrusted and every
// loader; thumbd_allow then unblocks the loaders of the formats thumbd
// accepts, one class (and its buffer and source subclasses) at a time, so
// that a crafted file cannot reach, say, the ImageMagick or PDF loaders
// even if a build has them, nor a loader whose format THUMBD_INPUTS left out.
static void thumbd_harden(void) {
	vips_block_untrusted_set(TRUE);
	vips_operation_block_set("VipsForeignLoad", TRUE);
}

// thumbd_heap_probe allocates n bytes and frees them, as a job does its
// buffers, and says whether malloc mapped them on their own (mallinfo2's
// hblks) and how many bytes its arenas hold after the free (arena): what
// tuneHeap's two thresholds decide.
static void thumbd_heap_probe(size_t n, int *mapped, size_t *held) {
	size_t before = mallinfo2().hblks;
	// volatile: without a use, the compiler may drop the malloc and free.
	char *volatile p = malloc(n);
	*mapped = mallinfo2().hblks > before;
	free(p);
	*held = mallinfo2().arena;
}

// thumbd_touched allocates n bytes and writes them, as a decoder fills its
// output: for the test of the huge pages (glibcmalloc.Tunables).
static void *thumbd_touched(size_t n) {
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}

static void thumbd_allow(const char *loader) {
	vips_operation_block_set(loader, FALSE);
}

// thumbd_has_class: whether this libvips was built with the class (a
// loader), so that formats it cannot read are not offered.
static int thumbd_has_class(const char *name) {
	return g_type_from_name(name) != 0;
}

static void thumbd_read_header(VipsImage *im, thumbd_header *h) {
	h->width = vips_image_get_width(im);
	h->height = vips_image_get_height(im);
	h->pages = vips_image_get_n_pages(im);
	h->alpha = vips_image_hasalpha(im);
	h->bands = vips_image_get_bands(im);
	h->sample = vips_format_sizeof(vips_image_get_format(im));
	h->orientation = 1;
	if (vips_image_get_typeof(im, VIPS_META_ORIENTATION)) {
		int o;
		if (vips_image_get_int(im, VIPS_META_ORIENTATION, &o) == 0) h->orientation = o;
	}
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
	thumbd_read_header(im, h);
	g_object_unref(im);
	return 0;
}

typedef struct {
	int interpretation_ok, icc, has_loop, loop, ndelays;
	char space[32];
	int *delays; // g_malloc'd copy; the caller frees it
} thumbd_details;

// thumbd_describe is the probe plus what /info tells beyond it, from the
// header alone: the interpretation's name, whether an ICC profile is
// embedded, and an animation's loop count and frame delays.
static int thumbd_describe(const void *buf, size_t len, thumbd_header *h, thumbd_details *d, char **err) {
	VipsImage *im = vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
	if (im == NULL) {
		*err = g_strdup(vips_error_buffer());
		vips_error_clear();
		return -1;
	}
	thumbd_read_header(im, h);
	const char *nick = vips_enum_nick(VIPS_TYPE_INTERPRETATION, vips_image_get_interpretation(im));
	g_strlcpy(d->space, nick ? nick : "", sizeof(d->space));
	d->icc = vips_image_get_typeof(im, VIPS_META_ICC_NAME) != 0;
	d->has_loop = vips_image_get_typeof(im, "loop") != 0 && vips_image_get_int(im, "loop", &d->loop) == 0;
	int *delays, n;
	if (vips_image_get_typeof(im, "delay") && vips_image_get_array_int(im, "delay", &delays, &n) == 0 && n > 0) {
		d->delays = g_memdup2(delays, n * sizeof(int));
		d->ndelays = n;
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

	"github.com/thumbd/thumbd/service/internal/glibcmalloc"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// harden blocks every loader and untrusted operation, then unblocks the
// given loader classes (loaderClasses).
func harden(loaders []string) {
	C.thumbd_harden()
	for _, l := range loaders {
		cs := C.CString(l)
		C.thumbd_allow(cs)
		C.free(unsafe.Pointer(cs))
	}
}

// hasClass reports whether libvips knows a class by this name.
func hasClass(name string) bool {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.thumbd_has_class(cs) != 0
}

// details is what describe learns from the header beyond the probe.
type details struct {
	space  string // libvips' interpretation: srgb, b-w, cmyk...
	icc    bool
	loop   *int // nil when the source says nothing
	delays []int
}

// describe is probe and details in one header read.
func describe(buf []byte) (header, details, error) {
	if len(buf) == 0 {
		return header{}, details{}, errors.New("empty image")
	}
	var h C.thumbd_header
	var d C.thumbd_details
	var cerr *C.char
	rc := C.thumbd_describe(unsafe.Pointer(&buf[0]), C.size_t(len(buf)), &h, &d, &cerr)
	runtime.KeepAlive(buf)
	if rc != 0 {
		return header{}, details{}, cError(cerr)
	}
	out := details{space: C.GoString(&d.space[0]), icc: d.icc != 0}
	if d.has_loop != 0 {
		loop := int(d.loop)
		out.loop = &loop
	}
	if d.delays != nil {
		for _, v := range unsafe.Slice(d.delays, int(d.ndelays)) {
			out.delays = append(out.delays, int(v))
		}
		C.g_free(C.gpointer(d.delays))
	}
	return headerOf(h), out, nil
}

// header is what the probe learns before any pixel is decoded.
type header struct {
	width, height int // as stored, before EXIF orientation
	pages         int
	orientation   int
	alpha         bool // the decoded image will have an alpha channel
	bands         int  // samples per pixel, as decoded
	sample        int  // bytes per sample, as decoded
	// format is the source's, sniffed once by checkSource ("" when the
	// header was read without it: load then sniffs).
	format imagefmt.Format
	// look is what the pipeline's one look read of the header
	// (memcost.Look): a HEIF's nclx colour (fromNCLX converts it) and
	// embedded thumbnail (heifSource). Zero when it could not read it.
	look thumbjob.Header
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
		return header{}, cError(cerr)
	}
	return headerOf(h), nil
}

func headerOf(h C.thumbd_header) header {
	return header{width: int(h.width), height: int(h.height), pages: int(h.pages), orientation: int(h.orientation), alpha: h.alpha != 0,
		bands: int(h.bands), sample: int(h.sample)}
}

// cError is a libvips message the C side copied, freed.
func cError(cerr *C.char) error {
	msg := C.GoString(cerr)
	C.g_free(C.gpointer(cerr))
	return errors.New(strings.TrimSpace(msg))
}

// TrimHeap gives the C heap's free memory back to the system (glibc's
// malloc_trim): libvips frees a job's pixels into malloc's arenas, which
// otherwise keep them, so a burst of large images would leave the process
// at its peak RSS.
func TrimHeap() { C.malloc_trim(0) }

// tuneHeap sets malloc's mmap and trim thresholds (glibcmalloc: fixed, so
// that a job's buffers under 32 MiB are kept for the next job instead of
// being faulted in again each time), each unless the environment (lookup:
// os.LookupEnv) sets it; glibc then applied the operator's at start.
func tuneHeap(lookup func(string) (string, bool)) {
	if !glibcmalloc.Given(lookup, "mmap_threshold") {
		C.mallopt(C.M_MMAP_THRESHOLD, glibcmalloc.MmapThreshold)
	}
	if !glibcmalloc.Given(lookup, "trim_threshold") {
		C.mallopt(C.M_TRIM_THRESHOLD, glibcmalloc.TrimThreshold)
	}
}

// touched allocates n bytes of the C heap and writes them; free frees
// them. For the test of the huge pages, which reads the process's
// AnonHugePages between the two.
func touched(n int) (free func()) {
	p := C.thumbd_touched(C.size_t(n))
	return func() { C.free(p) }
}

// heapProbe allocates n bytes of the C heap and frees them: it reports
// whether malloc mapped them on their own, and the bytes its arenas hold
// after the free. For tuneHeap's test.
func heapProbe(n int) (mapped bool, held int64) {
	var m C.int
	var h C.size_t
	C.thumbd_heap_probe(C.size_t(n), &m, &h)
	return m != 0, int64(h)
}
