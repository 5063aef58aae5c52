// The C side of videodecode: one libavcodec decoder fed packets by the Go
// side, which keeps the loop (and so every limit) in Go, and the
// conversion of the frame it keeps into 8-bit RGB. Only API present in
// both FFmpeg 5.1 (Debian bookworm's, for `go test`) and 7.1 (the recipe's).
#ifndef THUMBD_VIDEODECODE_H
#define THUMBD_VIDEODECODE_H

#include <stdint.h>

enum { VD_H264 = 1, VD_HEVC, VD_VP8, VD_VP9, VD_AV1 };

// vd_receive's answers besides a negative AVERROR.
enum { VD_FRAME = 0, VD_AGAIN = 1, VD_END = 2 };

typedef struct vd_dec vd_dec;

// vd_frame is what the Go side checks of a decoded frame and decides its
// conversion from. The colour fields are FFmpeg's enums, which are the
// ISO/IEC 23091-2 code points.
typedef struct {
	int width, height;
	int64_t pts;
	int corrupt; // AV_FRAME_FLAG_CORRUPT or any decode_error_flags
	int matrix, range, primaries, transfer, chroma_loc;
	// The pixel format: planar, native-endian, no alpha, one depth for
	// every component, else supported is 0 and name says which.
	int supported, depth, log2_cw, log2_ch, components, rgb;
	const char *name;
	// HDR metadata the bitstream carries (cd/m2; 0 when unsaid).
	double max_cll, max_luminance;
	// The pixel aspect ratio the bitstream says (H.264's and HEVC's VUI,
	// dav1d's render size); sar_num 0 when unsaid.
	int sar_num, sar_den;
} vd_frame;

// vd_conv is the conversion the Go side decided (conv.go). The three
// planes are read as A, B, C: Y, Cb, Cr for YUV; G, B, R for planar RGB.
typedef struct {
	// k: out = k[c][0]*A + k[c][1]*B + k[c][2]*C + k[c][3], for c = R, G, B;
	// 8-bit values when !linear, else the signal 0..1.
	float k[3][4];
	int hcosited, vcosited; // chroma siting of subsampled planes
	int linear;
	// The linear path: the signal to light through eotf (vd_convert's
	// argument: 4097 entries over 0..eotf_max, interpolated; 1.0 = 100
	// cd/m2, or SDR white), the HLG OOTF (light *= hlg_gain * Ys^hlg_exp, Ys from ys)
	// when hlg, the gamut matrix, Hable's curve on the largest component
	// with peak when tonemap, then oetf (16384 entries over 0..1) to 8-bit
	// sRGB. (The tables are arguments: a Go value passed to C holds no
	// Go pointer.)
	float eotf_max;
	int hlg;
	float hlg_gain, hlg_exp, ys[3];
	float gamut[3][3];
	int tonemap;
	float peak;
} vd_conv;

int vd_open(vd_dec **d, int codec, const uint8_t *extra, int extra_size, int threads, int64_t max_pixels);
int vd_send(vd_dec *d, const uint8_t *data, int size, int64_t pts, int64_t dts, int key, int skip_nonref);
int vd_flush(vd_dec *d);
int vd_receive(vd_dec *d, vd_frame *f);
int vd_convert(vd_dec *d, const vd_conv *c, const float *eotf, const uint8_t *oetf, uint8_t *out, int stride);
int vd_plane(vd_dec *d, int plane, uint8_t *out, int row_bytes, int rows);
void vd_close(vd_dec *d);
struct AVFrame;
int vd_convert_frame(const struct AVFrame *f, const vd_conv *c, const float *eotf, const uint8_t *oetf,
	uint8_t *out, int stride); // convert.c
void vd_strerror(int err, char *buf, int size);

#endif
