#include <stddef.h>

/* One term of a channel: a*noise + b, where noise is vips_perlin (worley 0)
 * or vips_worley (worley 1) of the given cell size and seed. */
typedef struct {
	int worley;
	int cell;
	int seed;
	double a;
	double b;
} thumbd_term;

/* Sums the terms of L, a and b (nl, na, nb of them, in that order in terms),
 * makes the CIELAB image sRGB, adds Gaussian grain of sigma grain to each
 * band (seeds grain_seed, +1, +2), casts to 8 bits and encodes a JPEG of
 * the given quality with no metadata into *buf (free it with g_free).
 * Returns 0, or -1 with the libvips error in *err (free it with g_free). */
int thumbd_make_source(int width, int height, const thumbd_term *terms, int nl, int na, int nb,
	double grain, int grain_seed, int quality, void **buf, size_t *len, char **err);
