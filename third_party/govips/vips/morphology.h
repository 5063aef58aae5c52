// https://libvips.github.io/libvips/API/current/libvips-morphology.html

#include <stdlib.h>
#include <vips/vips.h>

int rank(VipsImage *in, VipsImage **out, int width, int height, int index);
