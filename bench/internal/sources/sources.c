#include <vips/vips.h>

#include "sources.h"

/* channel sums terms[0..n) into *out, left to right. */
static int
channel(VipsObject *scope, int width, int height, const thumbd_term *terms, int n, VipsImage **out)
{
	VipsImage **t = (VipsImage **) vips_object_local_array(scope, 3 * n);
	VipsImage *sum = NULL;
	int i;

	for (i = 0; i < n; i++) {
		const thumbd_term *x = &terms[i];
		int ok = x->worley ?
			vips_worley(&t[3 * i], width, height, "cell_size", x->cell, "seed", x->seed, NULL) :
			vips_perlin(&t[3 * i], width, height, "cell_size", x->cell, "seed", x->seed, NULL);
		if (ok ||
			vips_linear(t[3 * i], &t[3 * i + 1], &x->a, &x->b, 1, NULL))
			return -1;
		if (sum == NULL)
			sum = t[3 * i + 1];
		else if (vips_add(sum, t[3 * i + 1], &t[3 * i + 2], NULL))
			return -1;
		else
			sum = t[3 * i + 2];
	}
	if (sum == NULL) {
		vips_error("thumbd", "a channel without terms");
		return -1;
	}
	g_object_ref(sum);
	*out = sum;
	return 0;
}

int
thumbd_make_source(int width, int height, const thumbd_term *terms, int nl, int na, int nb,
	double grain, int grain_seed, int quality, void **buf, size_t *len, char **err)
{
	VipsObject *scope;
	VipsImage **t;
	VipsImage *lab[3];
	VipsImage *noise[3];
	int i, status = -1;

	if (vips_init("thumbd-bench")) {
		*err = g_strdup(vips_error_buffer());
		vips_error_clear();
		return -1;
	}
	vips_cache_set_max(0);
	scope = VIPS_OBJECT(vips_image_new());
	t = (VipsImage **) vips_object_local_array(scope, 16);
	if (channel(scope, width, height, terms, nl, &t[0]) ||
		channel(scope, width, height, terms + nl, na, &t[1]) ||
		channel(scope, width, height, terms + nl + na, nb, &t[2]))
		goto out;
	lab[0] = t[0], lab[1] = t[1], lab[2] = t[2];
	if (vips_bandjoin(lab, &t[3], 3, NULL) ||
		vips_copy(t[3], &t[4], "interpretation", VIPS_INTERPRETATION_LAB, NULL) ||
		vips_colourspace(t[4], &t[5], VIPS_INTERPRETATION_sRGB, NULL))
		goto out;
	for (i = 0; i < 3; i++)
		if (vips_gaussnoise(&t[6 + i], width, height,
				"sigma", grain, "mean", 0.0, "seed", grain_seed + i, NULL))
			goto out;
	noise[0] = t[6], noise[1] = t[7], noise[2] = t[8];
	if (vips_bandjoin(noise, &t[9], 3, NULL) ||
		vips_add(t[5], t[9], &t[10], NULL) ||
		vips_cast(t[10], &t[11], VIPS_FORMAT_UCHAR, NULL) ||
		vips_copy(t[11], &t[12], "interpretation", VIPS_INTERPRETATION_sRGB, NULL) ||
		vips_jpegsave_buffer(t[12], buf, len, "Q", quality, "strip", TRUE, NULL))
		goto out;
	status = 0;
out:
	if (status) {
		*err = g_strdup(vips_error_buffer());
		vips_error_clear();
	}
	g_object_unref(scope);
	return status;
}
