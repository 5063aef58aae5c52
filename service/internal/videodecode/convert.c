// The decoded frame into 8-bit RGB rows, as conv.go decided: chroma
// interpolated bilinearly at its siting, the matrix and range, and for HDR
// or another gamut the light itself (docs/adr/0008-video-decoders.md).
#include <math.h>
#include <stdlib.h>

#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>

#include "decode.h"

static inline float sample(const uint8_t *row, int x, int wide) {
	return wide ? (float)((const uint16_t *)row)[x] : (float)row[x];
}

static inline float clamp01(float v) {
	return v < 0 ? 0 : v > 1 ? 1 : v;
}

static inline uint8_t byte(float v) {
	return v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)(v + 0.5f);
}

// lut: v in -max..max through 4097 samples over 0..max (scale:
// 4096/max), interpolated; a signal below 0 (limited range's footroom:
// colours outside the primaries' gamut) mirrored, as zimg reads it.
static inline float lut(const float *t, float v, float scale) {
	float i = fabsf(v) * scale, o;
	int n;
	if (i > 4096)
		i = 4096;
	n = (int)i;
	if (n > 4095)
		n = 4095;
	o = t[n] + (i - n) * (t[n + 1] - t[n]);
	return v < 0 ? -o : o;
}

// hable is John Hable's filmic curve, as FFmpeg's tonemap filter has it.
static inline float hable(float x) {
	const float a = 0.15f, b = 0.50f, c = 0.10f, d = 0.20f, e = 0.02f, f = 0.30f;
	return (x * (x * a + b * c) + d * e) / (x * (x * a + b) + d * f) - e / f;
}

// taps: for each of n output positions, the two source samples (of m) and
// the second's weight, for a plane subsampled by 2^s; cosited: the first
// sample lies on the first output position, else midway between the 2^s.
static void taps(int n, int m, int s, int cosited, int *i0, int *i1, float *w) {
	int x;
	for (x = 0; x < n; x++) {
		float c = cosited ? (float)x / (1 << s) : (x + 0.5f) / (1 << s) - 0.5f;
		int a = (int)floorf(c);
		w[x] = c - a;
		i0[x] = a < 0 ? 0 : a >= m ? m - 1 : a;
		i1[x] = a + 1 < 0 ? 0 : a + 1 >= m ? m - 1 : a + 1;
	}
}

int vd_convert_frame(const struct AVFrame *f, const vd_conv *c, const float *eotf, const uint8_t *oetf,
	uint8_t *out, int stride) {
	const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(f->format);
	int w = f->width, h = f->height, x, y, wide, sw, sh, cw, ch, chroma, pa, pb, pc;
	int *hi0, *hi1, *vi0, *vi1;
	float *hw, *vw, *rb, *rc, hp = 1, scale = c->eotf_max > 0 ? 4096 / c->eotf_max : 4096;
	void *mem;

	if (!desc || w <= 0 || h <= 0 || (c->linear && (!eotf || !oetf)))
		return AVERROR(EINVAL);
	wide = desc->comp[0].depth > 8;
	sw = desc->log2_chroma_w;
	sh = desc->log2_chroma_h;
	cw = AV_CEIL_RSHIFT(w, sw);
	ch = AV_CEIL_RSHIFT(h, sh);
	chroma = desc->nb_components == 3;
	if (desc->flags & AV_PIX_FMT_FLAG_RGB) { // A, B, C: G, B, R
		pa = desc->comp[1].plane;
		pb = desc->comp[2].plane;
		pc = desc->comp[0].plane;
	} else {
		pa = 0;
		pb = 1;
		pc = 2;
	}
	mem = malloc((size_t)(w + h) * (2 * sizeof(int) + sizeof(float)) + (size_t)cw * 2 * sizeof(float));
	if (!mem)
		return AVERROR(ENOMEM);
	hi0 = mem;
	hi1 = hi0 + w;
	vi0 = hi1 + w;
	vi1 = vi0 + h;
	hw = (float *)(vi1 + h);
	vw = hw + w;
	rb = vw + h;
	rc = rb + cw;
	taps(w, cw, sw, c->hcosited, hi0, hi1, hw);
	taps(h, ch, sh, c->vcosited, vi0, vi1, vw);
	if (c->tonemap)
		hp = 1 / hable(c->peak);

	for (y = 0; y < h; y++) {
		const uint8_t *ra = f->data[pa] + (ptrdiff_t)y * f->linesize[pa];
		uint8_t *o = out + (ptrdiff_t)y * stride;
		if (chroma) {
			// This row's chroma, interpolated between two chroma rows.
			const uint8_t *b0 = f->data[pb] + (ptrdiff_t)vi0[y] * f->linesize[pb];
			const uint8_t *b1 = f->data[pb] + (ptrdiff_t)vi1[y] * f->linesize[pb];
			const uint8_t *c0 = f->data[pc] + (ptrdiff_t)vi0[y] * f->linesize[pc];
			const uint8_t *c1 = f->data[pc] + (ptrdiff_t)vi1[y] * f->linesize[pc];
			float v = vw[y];
			for (x = 0; x < cw; x++) {
				float s0 = sample(b0, x, wide), s1 = sample(b1, x, wide);
				rb[x] = s0 + v * (s1 - s0);
				s0 = sample(c0, x, wide);
				s1 = sample(c1, x, wide);
				rc[x] = s0 + v * (s1 - s0);
			}
		}
		for (x = 0; x < w; x++) {
			float A = sample(ra, x, wide), B = 0, C = 0, r, g, b;
			if (chroma) {
				float u = hw[x];
				B = rb[hi0[x]] + u * (rb[hi1[x]] - rb[hi0[x]]);
				C = rc[hi0[x]] + u * (rc[hi1[x]] - rc[hi0[x]]);
			}
			r = c->k[0][0] * A + c->k[0][1] * B + c->k[0][2] * C + c->k[0][3];
			g = c->k[1][0] * A + c->k[1][1] * B + c->k[1][2] * C + c->k[1][3];
			b = c->k[2][0] * A + c->k[2][1] * B + c->k[2][2] * C + c->k[2][3];
			if (c->linear) {
				float lr = lut(eotf, r, scale), lg = lut(eotf, g, scale), lb = lut(eotf, b, scale);
				if (c->hlg) {
					float ys = c->ys[0] * lr + c->ys[1] * lg + c->ys[2] * lb;
					float s = ys > 0 ? c->hlg_gain * powf(ys, c->hlg_exp) : 0;
					lr *= s;
					lg *= s;
					lb *= s;
				}
				r = c->gamut[0][0] * lr + c->gamut[0][1] * lg + c->gamut[0][2] * lb;
				g = c->gamut[1][0] * lr + c->gamut[1][1] * lg + c->gamut[1][2] * lb;
				b = c->gamut[2][0] * lr + c->gamut[2][1] * lg + c->gamut[2][2] * lb;
				if (c->tonemap) {
					// On the largest component, scaling all three alike:
					// the hue is kept (FFmpeg's tonemap, desat=0).
					float sig = fmaxf(fmaxf(r, g), fmaxf(b, 1e-6f));
					float s = hable(sig) * hp / sig;
					r *= s;
					g *= s;
					b *= s;
				}
				o[3 * x] = oetf[(int)(clamp01(r) * 16383 + 0.5f)];
				o[3 * x + 1] = oetf[(int)(clamp01(g) * 16383 + 0.5f)];
				o[3 * x + 2] = oetf[(int)(clamp01(b) * 16383 + 0.5f)];
			} else {
				o[3 * x] = byte(r);
				o[3 * x + 1] = byte(g);
				o[3 * x + 2] = byte(b);
			}
		}
	}
	free(mem);
	return 0;
}
