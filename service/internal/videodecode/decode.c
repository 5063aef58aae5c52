// One libavcodec decoder, driven packet by packet from Go (decode.go).
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/pixdesc.h>

#include "decode.h"

struct vd_dec {
	AVCodecContext *ctx;
	AVPacket *pkt;
	AVFrame *frame;
};

void vd_close(vd_dec *d) {
	if (!d)
		return;
	avcodec_free_context(&d->ctx);
	av_packet_free(&d->pkt);
	av_frame_free(&d->frame);
	av_free(d);
}

int vd_open(vd_dec **out, int codec, const uint8_t *extra, int extra_size, int threads, int64_t max_pixels) {
	const AVCodec *c = NULL;
	vd_dec *d;
	int ret;

	*out = NULL;
	switch (codec) {
	case VD_H264: c = avcodec_find_decoder(AV_CODEC_ID_H264); break;
	case VD_HEVC: c = avcodec_find_decoder(AV_CODEC_ID_HEVC); break;
	case VD_VP8: c = avcodec_find_decoder(AV_CODEC_ID_VP8); break;
	case VD_VP9: c = avcodec_find_decoder(AV_CODEC_ID_VP9); break;
	// By name: FFmpeg's own "av1" decoder decodes only through a hardware
	// accelerator, and Debian's build has both.
	case VD_AV1: c = avcodec_find_decoder_by_name("libdav1d"); break;
	}
	if (!c)
		return AVERROR_DECODER_NOT_FOUND;
	d = av_mallocz(sizeof *d);
	if (!d)
		return AVERROR(ENOMEM);
	d->ctx = avcodec_alloc_context3(c);
	d->pkt = av_packet_alloc();
	d->frame = av_frame_alloc();
	if (!d->ctx || !d->pkt || !d->frame) {
		vd_close(d);
		return AVERROR(ENOMEM);
	}
	if (extra_size > 0) {
		// The decoders read extradata with the same padding as packets.
		d->ctx->extradata = av_mallocz(extra_size + AV_INPUT_BUFFER_PADDING_SIZE);
		if (!d->ctx->extradata) {
			vd_close(d);
			return AVERROR(ENOMEM);
		}
		memcpy(d->ctx->extradata, extra, extra_size);
		d->ctx->extradata_size = extra_size;
	}
	d->ctx->thread_count = threads;
	// Every buffer the decoder allocates is checked against max_pixels
	// (ff_set_dimensions, ff_get_buffer; dav1d's frame_size_limit): a
	// header inside the bitstream that declares a larger frame than the
	// container's fails before the allocation.
	d->ctx->max_pixels = max_pixels;
	// Every message of this context is pushed past AV_LOG_TRACE (within
	// the 8 bits av_log keeps of a level), so that a
	// hostile stream cannot write to the service's stderr; errors come
	// back as return values.
	d->ctx->log_level_offset = 100;
	ret = avcodec_open2(d->ctx, c, NULL);
	if (ret < 0) {
		vd_close(d);
		return ret;
	}
	*out = d;
	return 0;
}

int vd_send(vd_dec *d, const uint8_t *data, int size, int64_t pts, int64_t dts, int key, int skip_nonref) {
	int ret;

	// An empty packet is libavcodec's end of stream: only vd_flush sends one.
	if (size <= 0)
		return AVERROR(EINVAL);
	av_packet_unref(d->pkt);
	ret = av_new_packet(d->pkt, size); // zeroes the padding after the data
	if (ret < 0)
		return ret;
	memcpy(d->pkt->data, data, size);
	d->pkt->pts = pts;
	d->pkt->dts = dts;
	if (key)
		d->pkt->flags |= AV_PKT_FLAG_KEY;
	// Read per NAL unit by the H.264 and HEVC decoders and per frame by
	// VP8's: a frame no later frame refers to is not decoded at all.
	d->ctx->skip_frame = skip_nonref ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
	ret = avcodec_send_packet(d->ctx, d->pkt);
	av_packet_unref(d->pkt);
	if (ret == AVERROR(EAGAIN))
		return VD_AGAIN;
	return ret;
}

int vd_flush(vd_dec *d) {
	int ret = avcodec_send_packet(d->ctx, NULL);
	return ret == AVERROR_EOF ? 0 : ret;
}

static int planar(const AVPixFmtDescriptor *desc, int *depth) {
	int i, bad = AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM |
		AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_FLOAT | AV_PIX_FMT_FLAG_BAYER |
		AV_PIX_FMT_FLAG_ALPHA; // (XYZ has a flag only from 7.0 on, and is packed)

	if (!(desc->flags & AV_PIX_FMT_FLAG_PLANAR) || (desc->flags & bad))
		return 0;
	if (desc->nb_components != 1 && desc->nb_components != 3)
		return 0;
	*depth = desc->comp[0].depth;
	if (*depth < 8 || *depth > 16)
		return 0;
	for (i = 0; i < desc->nb_components; i++) {
		const AVComponentDescriptor *c = &desc->comp[i];
		if (c->depth != *depth || c->shift || c->offset || c->step != (*depth > 8 ? 2 : 1))
			return 0;
		if (c->plane != i && !(desc->flags & AV_PIX_FMT_FLAG_RGB))
			return 0;
	}
	return 1;
}

int vd_receive(vd_dec *d, vd_frame *f) {
	const AVPixFmtDescriptor *desc;
	AVFrameSideData *sd;
	AVFrame *fr = d->frame;
	int ret;

	av_frame_unref(fr);
	ret = avcodec_receive_frame(d->ctx, fr);
	if (ret == AVERROR(EAGAIN))
		return VD_AGAIN;
	if (ret == AVERROR_EOF)
		return VD_END;
	if (ret < 0)
		return ret;
	memset(f, 0, sizeof *f);
	f->width = fr->width;
	f->height = fr->height;
	f->pts = fr->pts;
	f->corrupt = (fr->flags & AV_FRAME_FLAG_CORRUPT) || fr->decode_error_flags;
	f->matrix = fr->colorspace;
	f->range = fr->color_range;
	f->primaries = fr->color_primaries;
	f->transfer = fr->color_trc;
	f->chroma_loc = fr->chroma_location;
	f->sar_num = fr->sample_aspect_ratio.num;
	f->sar_den = fr->sample_aspect_ratio.den;
	desc = av_pix_fmt_desc_get(fr->format);
	f->name = desc ? desc->name : "none";
	if (desc && planar(desc, &f->depth)) {
		f->supported = 1;
		f->log2_cw = desc->log2_chroma_w;
		f->log2_ch = desc->log2_chroma_h;
		f->components = desc->nb_components;
		f->rgb = !!(desc->flags & AV_PIX_FMT_FLAG_RGB);
		// FFmpeg 5.1's decoders give full-range H.264 and HEVC as the
		// deprecated yuvj formats, which say their range by name.
		if (!strncmp(desc->name, "yuvj", 4))
			f->range = AVCOL_RANGE_JPEG;
	}
	sd = av_frame_get_side_data(fr, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL);
	if (sd)
		f->max_cll = ((const AVContentLightMetadata *)sd->data)->MaxCLL;
	sd = av_frame_get_side_data(fr, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA);
	if (sd) {
		const AVMasteringDisplayMetadata *m = (const AVMasteringDisplayMetadata *)sd->data;
		if (m->has_luminance && m->max_luminance.den > 0)
			f->max_luminance = av_q2d(m->max_luminance);
	}
	return VD_FRAME;
}

int vd_convert(vd_dec *d, const vd_conv *c, const float *eotf, const uint8_t *oetf, uint8_t *out, int stride) {
	return vd_convert_frame(d->frame, c, eotf, oetf, out, stride);
}

// vd_plane copies rows of the kept frame's plane (for the tests, which
// hold the decode to FFmpeg's bit for bit).
int vd_plane(vd_dec *d, int plane, uint8_t *out, int row_bytes, int rows) {
	AVFrame *fr = d->frame;
	int y;

	if (plane < 0 || plane >= AV_NUM_DATA_POINTERS || !fr->data[plane] || row_bytes > fr->linesize[plane])
		return AVERROR(EINVAL);
	for (y = 0; y < rows; y++)
		memcpy(out + (size_t)y * row_bytes, fr->data[plane] + (ptrdiff_t)y * fr->linesize[plane], row_bytes);
	return 0;
}

void vd_strerror(int err, char *buf, int size) {
	av_strerror(err, buf, size);
}
