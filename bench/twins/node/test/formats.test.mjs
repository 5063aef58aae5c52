// The twin's share of thumbd's newer contract: AVIF output, format=auto
// (negotiated on Accept, with Vary), dpr and animated WebP. Each expectation
// is thumbd's (service/modern_test.go, service/internal/imagefmt,
// service/internal/params), so the bench compares like with like.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { negotiate } from '../server.mjs';
import { expectError, jpegOf, pixelAt, postThumbnail, startServer, stopServer } from './harness.mjs';

// Distinct frame colours, so a test can tell each frame of a thumbnail apart.
const COLOURS = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [0, 255, 255]];
// GIF delays are in hundredths of a second; libvips' WebP writer turns 10 ms
// or less into 100 ms, as browsers do, so these are longer.
const DELAYS = [40, 80, 120, 160, 200];

// An animated GIF of frames width x height, frame i flat COLOURS[i].
function animatedGIF(width, height, frames = COLOURS.length) {
  const raw = Buffer.alloc(width * height * frames * 3);
  for (let f = 0; f < frames; f++) {
    for (let i = 0; i < width * height; i++) raw.set(COLOURS[f], (f * width * height + i) * 3);
  }
  return sharp(raw, { raw: { width, height: height * frames, channels: 3, pageHeight: height } })
    .gif({ delay: DELAYS.slice(0, frames), loop: 3 })
    .toBuffer();
}

// Every frame's metadata and pixels, as one tall image.
async function frames(image) {
  const meta = await sharp(image, { pages: -1 }).metadata();
  const { data, info } = await sharp(image, { pages: -1 }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (frame, x, y) => {
    const i = ((frame * (meta.pageHeight ?? meta.height) + y) * info.width + x) * 4;
    return [...data.subarray(i, i + 4)];
  };
  return { meta, at };
}

const near = (got, want) => got.every((v, i) => Math.abs(v - want[i]) < 40);

// chroma subsampling of an AVIF, from its av1C box: the byte after
// seq_profile/level holds tier, bit depth, monochrome, then subsampling x, y.
function avifChroma(avif) {
  const i = avif.indexOf('av1C');
  assert.ok(i > 0, 'an av1C box');
  const b = avif[i + 4 + 2];
  return { x: (b >> 3) & 1, y: (b >> 2) & 1, highBitdepth: (b >> 6) & 1 };
}

async function post(base, query, source, accept) {
  const headers = accept === undefined ? {} : { Accept: accept };
  const res = await fetch(`${base}/thumbnail?${query}`, { method: 'POST', body: source, headers });
  return { res, body: Buffer.from(await res.arrayBuffer()) };
}

describe('format negotiation (thumbd imagefmt.Negotiate)', () => {
  // TestNegotiate's and TestNegotiateAnimated's tables
  // (service/internal/imagefmt/negotiate_test.go), then the twin's own.
  const still = [
    ['', 'jpeg', 'png'],
    ['*/*', 'jpeg', 'png'],
    ['image/*', 'jpeg', 'png'],
    ['image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8', 'avif', 'avif'],
    ['image/avif,image/webp,*/*', 'avif', 'avif'],
    ['image/webp,image/avif,image/jxl,image/heic,image/heic-sequence,video/*;q=0.8,image/png,image/svg+xml,image/*;q=0.8,*/*;q=0.5', 'avif', 'avif'],
    ['image/webp,image/apng,image/*,*/*;q=0.8', 'webp', 'webp'],
    ['IMAGE/WEBP', 'webp', 'webp'],
    ['image/avif;q=0.5,image/webp', 'webp', 'webp'],
    ['image/avif;q=0,*/*', 'jpeg', 'png'],
    ['image/webp;q=0.1, image/jpeg', 'jpeg', 'webp'],
    ['image/webp;q=0, */*', 'jpeg', 'png'],
    ['image/jpeg;q=0, */*', 'png', 'png'],
    ['image/png;q=0, image/jpeg', 'jpeg', 'jpeg'],
    ['image/*;q=0', 'jpeg', 'png'],
    ['text/html', 'jpeg', 'png'],
    ['image/webp;q=abc, */*', 'jpeg', 'png'],
    ['image/webp;level=1;q=0.5', 'webp', 'webp'],
    ['*/webp', 'jpeg', 'png'],
    ['image/webp;Q=0.9,image/png;q=1', 'png', 'png'],
    // The twin's own.
    ['  ', 'jpeg', 'png'],
    ['image/avif;q=0.5,image/webp;q=0.5,image/jpeg;q=0.5', 'avif', 'avif'],
    ['image/*;q=0.1,image/png', 'png', 'png'],
    [' image/webp ; q=0.7 , text/html', 'webp', 'webp'],
    ['image/avif;q=2,image/webp', 'webp', 'webp'],
    ['image/avif;q=-0.5,image/webp', 'webp', 'webp'],
    ['image/avif;q=,*/*', 'jpeg', 'png'],
    ['image/avif;q=1e-1,image/webp;q=0.05', 'avif', 'avif'],
    ['image,/webp,image/,image/avif', 'avif', 'avif'],
  ];
  const animated = [
    ['image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8', 'webp', 'webp'],
    ['image/avif,image/jpeg', 'avif', 'avif'],
    ['*/*', 'jpeg', 'png'],
    ['', 'jpeg', 'png'],
    ['image/webp;q=0.1,image/jpeg', 'webp', 'webp'],
  ];
  for (const [rows, isAnimated] of [[still, false], [animated, true]]) {
    for (const [accept, opaque, alpha] of rows) {
      it(`${JSON.stringify(accept)}${isAnimated ? ', animated' : ''}: ${opaque}, with alpha ${alpha}`, () => {
        assert.deepEqual(negotiate(accept, isAnimated), { opaque, alpha });
      });
    }
  }
});

describe('AVIF, format=auto, dpr, animated', () => {
  let server;
  let small; // tiny limits
  let photo; // 400x300 JPEG
  let alphaPNG; // 120x80, left half opaque red, right half transparent
  let animation; // 60x40, 5 frames
  let sourceDir;

  before(async () => {
    photo = await jpegOf(400, 300);
    const rgba = Buffer.alloc(120 * 80 * 4);
    for (let i = 0; i < 120 * 80; i++) if (i % 120 < 60) rgba.set([255, 0, 0, 255], i * 4);
    alphaPNG = await sharp(rgba, { raw: { width: 120, height: 80, channels: 4 } }).png().toBuffer();
    animation = await animatedGIF(60, 40);
    sourceDir = await mkdtemp(path.join(tmpdir(), 'twin-formats-'));
    await writeFile(path.join(sourceDir, 'photo.jpg'), photo);
    [server, small] = await Promise.all([
      startServer({ THUMBD_SOURCE_DIR: sourceDir }),
      startServer({ THUMBD_MAX_PIXELS: '10000', THUMBD_MAX_ANIMATION_PIXELS: String(5 * 32 * 32) }),
    ]);
  });

  after(async () => {
    await Promise.all([stopServer(server), stopServer(small)]);
    await rm(sourceDir, { recursive: true, force: true });
  });

  describe('format=avif', () => {
    it('is an 8-bit 4:2:0 AVIF at q 58 (thumbd\'s default) by default, without metadata', async () => {
      const { res, body } = await post(server.base, 'w=200&h=120&format=avif', photo);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/avif');
      assert.equal(res.headers.get('vary'), null, 'a fixed format does not vary');
      assert.equal(body.subarray(4, 12).toString(), 'ftypavif');
      const meta = await sharp(body).metadata();
      assert.deepEqual([meta.compression, meta.width, meta.height, meta.exif, meta.icc], ['av1', 200, 120, undefined, undefined]);
      assert.deepEqual(avifChroma(body), { x: 1, y: 1, highBitdepth: 0 });
      const q58 = await post(server.base, 'w=200&h=120&format=avif&q=58', photo);
      assert.equal(q58.res.headers.get('etag'), res.headers.get('etag'), 'q 58 is the default');
      assert.ok(q58.body.equals(body));
      const q50 = await post(server.base, 'w=200&h=120&format=avif&q=50', photo);
      assert.notEqual(q50.res.headers.get('etag'), res.headers.get('etag'));
      assert.ok(q50.body.length < body.length, 'q 50 is coarser');
    });

    it('is 4:4:4 from q 90, as libvips chooses for thumbd', async () => {
      const { body } = await post(server.base, 'w=200&h=120&format=avif&q=90', photo);
      assert.deepEqual(avifChroma(body), { x: 0, y: 0, highBitdepth: 0 });
    });

    it('q changes its size', async () => {
      const [low, high] = await Promise.all([10, 90].map((q) => post(server.base, `format=avif&q=${q}`, photo)));
      assert.ok(low.body.length < high.body.length, `q=10 gave ${low.body.length} bytes, q=90 ${high.body.length}`);
    });

    it('contain pads with transparency', async () => {
      const { body } = await post(server.base, 'w=200&h=200&fit=contain&format=avif', photo);
      assert.equal((await pixelAt(body, 100, 2))[3], 0, 'the padding is transparent');
      assert.equal((await pixelAt(body, 100, 100))[3], 255, 'the image itself is opaque');
    });

    it('q out of range is a 400', () =>
      expectError(server.base, '/thumbnail?format=avif&q=0', 400, 'bad_parameter', { method: 'POST', body: photo }));
  });

  describe('format=auto', () => {
    const chrome = 'image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8';
    for (const [name, accept, source, want] of [
      ['curl', '*/*', 'opaque', 'image/jpeg'],
      ['no Accept', undefined, 'opaque', 'image/jpeg'],
      ['chrome', chrome, 'opaque', 'image/avif'],
      ['chrome, alpha', chrome, 'alpha', 'image/avif'],
      ['older browser', 'image/webp,image/apng,image/*,*/*;q=0.8', 'opaque', 'image/webp'],
      ['webp refused', 'image/webp;q=0,*/*', 'opaque', 'image/jpeg'],
      ['alpha, old browser', 'image/png,image/jpeg,*/*;q=0.5', 'alpha', 'image/png'],
      ['alpha, webp', 'image/webp,*/*', 'alpha', 'image/webp'],
      ['jpeg only: alpha flattened', 'image/jpeg', 'alpha', 'image/jpeg'],
    ]) {
      it(`${name}: ${want}, Vary: Accept`, async () => {
        const { res, body } = await post(server.base, 'format=auto&w=40&h=30', source === 'alpha' ? alphaPNG : photo, accept);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), want);
        assert.equal(res.headers.get('vary'), 'Accept');
        const meta = await sharp(body).metadata();
        assert.equal(meta.mediaType, want);
        assert.deepEqual([meta.width, meta.height], [40, 30]);
      });
    }

    it('q applies to the chosen format; without it, the format default', async () => {
      const webp = (query) => post(server.base, `w=64&${query}`, photo, 'image/webp');
      const [auto, auto80, fixed, auto20] = await Promise.all([webp('format=auto'), webp('format=auto&q=80'), webp('format=webp'), webp('format=auto&q=20')]);
      assert.ok(auto.body.equals(fixed.body), 'auto without q is webp at its default 80');
      assert.ok(auto80.body.equals(fixed.body));
      assert.ok(auto20.body.length < auto.body.length);
    });

    it('the ETag follows the chosen format, and so does a 304', async () => {
      const url = `${server.base}/thumbnail?src=photo.jpg&format=auto&w=32`;
      const webp = await fetch(url, { headers: { Accept: 'image/webp' } });
      const jpeg = await fetch(url, { headers: { Accept: 'image/jpeg' } });
      const tag = webp.headers.get('etag');
      assert.notEqual(tag, jpeg.headers.get('etag'));
      const again = await fetch(url, { headers: { Accept: 'image/webp', 'If-None-Match': tag } });
      assert.equal(again.status, 304);
      assert.equal(again.headers.get('vary'), 'Accept');
      const other = await fetch(url, { headers: { Accept: 'image/jpeg', 'If-None-Match': tag } });
      assert.equal(other.status, 200);
      assert.equal(other.headers.get('content-type'), 'image/jpeg');
    });

    it('reads the first Accept line only, as thumbd (Go) does', async () => {
      // fetch joins repeated headers into one, so this goes through node:http
      // (an array of headers is sent as it is, one line each, Host included).
      const url = new URL(`${server.base}/thumbnail?src=photo.jpg&format=auto&w=32`);
      const type = await new Promise((resolve, reject) => {
        const req = request(url, { headers: ['Host', url.host, 'Accept', 'image/jpeg', 'Accept', 'image/webp'] }, (res) => {
          res.resume();
          resolve(`${res.statusCode} ${res.headers['content-type']}`);
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(type, '200 image/jpeg');
    });
  });

  describe('dpr', () => {
    for (const [query, width, height] of [
      ['w=100&h=50&dpr=2', 200, 100],
      ['w=100&dpr=1.5', 150, 113],
      ['dpr=3', 768, 768],
      ['w=3000&dpr=2&fit=inside', 4096, 3072],
      ['w=100&h=100&dpr=1.', 100, 100],
      ['h=10&dpr=4.0', 53, 40],
    ]) {
      it(`${query} gives ${width}x${height}`, async () => {
        const { res, body } = await post(server.base, query, photo);
        assert.equal(res.status, 200);
        const meta = await sharp(body).metadata();
        assert.deepEqual([meta.width, meta.height], [width, height]);
      });
    }

    for (const dpr of ['0.5', '5', '4.01', '', '1e0', '0x2', '+2', '2x', '.', '1..5', 'NaN']) {
      it(`dpr=${JSON.stringify(dpr)} is a 400`, () =>
        expectError(server.base, `/thumbnail?dpr=${encodeURIComponent(dpr)}`, 400, 'bad_parameter', { method: 'POST', body: photo }));
    }
  });

  describe('animated=true', () => {
    it('keeps every frame, cropped each, with its delay and the loop count', async () => {
      const { res, body } = await post(server.base, 'w=32&h=32&format=webp&animated=true', animation);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/webp');
      const { meta, at } = await frames(body);
      assert.deepEqual([meta.width, meta.pageHeight, meta.pages, meta.loop], [32, 32, COLOURS.length, 3]);
      assert.deepEqual(meta.delay, DELAYS);
      COLOURS.forEach((colour, f) => assert.ok(near(at(f, 16, 16), [...colour, 255]), `frame ${f}: ${at(f, 16, 16)}`));
    });

    it('contain pads each frame', async () => {
      const { body } = await post(server.base, 'w=32&h=32&fit=contain&format=webp&animated=true', animation);
      const { meta, at } = await frames(body);
      assert.deepEqual([meta.width, meta.pageHeight, meta.pages], [32, 32, COLOURS.length]);
      COLOURS.forEach((colour, f) => {
        assert.equal(at(f, 16, 1)[3], 0, `frame ${f}: the padding is transparent`);
        assert.ok(near(at(f, 16, 16), [...colour, 255]), `frame ${f}: ${at(f, 16, 16)}`);
      });
    });

    it('a smart crop is a centred one on an animation', async () => {
      const { res, body } = await post(server.base, 'w=32&h=32&gravity=entropy&format=webp&animated=true', animation);
      assert.equal(res.status, 200);
      assert.equal((await frames(body)).meta.pages, COLOURS.length);
    });

    it('format=auto animates when Accept allows webp, even over avif', async () => {
      const { res, body } = await post(server.base, 'w=32&h=32&format=auto&animated=true', animation, 'image/avif,image/webp,*/*');
      assert.equal(res.headers.get('content-type'), 'image/webp');
      assert.equal((await frames(body)).meta.pages, COLOURS.length);
    });

    it('format=auto without webp in Accept gives the first frame', async () => {
      const { res, body } = await post(server.base, 'w=32&h=32&format=auto&animated=true', animation, '*/*');
      assert.equal(res.headers.get('content-type'), 'image/png', 'a GIF decodes with alpha');
      assert.equal(res.headers.get('vary'), 'Accept');
      const { meta, at } = await frames(body);
      assert.equal(meta.pages ?? 1, 1);
      assert.ok(near(at(0, 16, 16), [...COLOURS[0], 255]));
    });

    it('without animated, an animation gives its first frame', async () => {
      const { body } = await post(server.base, 'w=32&h=32&format=webp', animation);
      assert.equal((await frames(body)).meta.pages ?? 1, 1);
    });

    it('a still source gives a still WebP', async () => {
      const { res, body } = await post(server.base, 'w=32&h=32&format=webp&animated=true', photo);
      assert.equal(res.status, 200);
      assert.equal((await frames(body)).meta.pages ?? 1, 1);
    });

    it('changes the ETag only where a format animates', async () => {
      const etag = async (query, accept) => (await post(server.base, `w=32&h=32&${query}`, animation, accept)).res.headers.get('etag');
      assert.notEqual(await etag('format=webp&animated=true'), await etag('format=webp'));
      assert.equal(await etag('format=auto&animated=true', '*/*'), await etag('format=auto', '*/*'));
    });

    for (const [query, why] of [
      ['format=png&animated=true', 'a format that cannot animate'],
      ['format=avif&animated=true', 'AVIF, written one frame only'],
      ['animated=true', 'the default format, png'],
      ['format=webp&animated=yes', 'not true or false'],
      ['format=webp&animated=', 'empty'],
    ]) {
      it(`${why} (${query}) is a 400`, () =>
        expectError(server.base, `/thumbnail?${query}`, 400, 'bad_parameter', { method: 'POST', body: animation }));
    }

    it('frames x box over THUMBD_MAX_ANIMATION_PIXELS is a 422', async () => {
      const source = await animatedGIF(40, 40); // 5 x 1600 pixels: within THUMBD_MAX_PIXELS
      const ok = await post(small.base, 'w=32&h=32&format=webp&animated=true', source);
      assert.equal(ok.res.status, 200, '5 x 32 x 32 is the limit itself');
      await expectError(small.base, '/thumbnail?w=33&h=32&format=webp&animated=true', 422, 'animation_too_large', { method: 'POST', body: source });
      await expectError(small.base, '/thumbnail?w=33&format=webp&animated=true', 422, 'animation_too_large', { method: 'POST', body: source });
    });

    it('every frame counts against THUMBD_MAX_PIXELS', async () => {
      const source = await animatedGIF(50, 50); // 2500 pixels a frame, 12500 in all
      const still = await post(small.base, 'w=16&h=16&format=webp', source);
      assert.equal(still.res.status, 200, 'one frame is within the limit');
      await expectError(small.base, '/thumbnail?w=16&h=16&format=webp&animated=true', 422, 'too_many_pixels', { method: 'POST', body: source });
    });
  });
});
