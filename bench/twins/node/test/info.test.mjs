// The twin's /info (sharp's metadata(), no ThumbHash) and focal crops
// (scale to cover, then extract), against a real server process.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { focalCut } from '../server.mjs';
import { expectError, getJSON, jpegOf, postThumbnail, startServer, stopServer } from './harness.mjs';

// A w x h grey PNG with a red square of side s centred at (cx, cy).
async function marked(w, h, cx, cy, s) {
  const px = Buffer.alloc(w * h * 3, 120);
  for (let y = cy - s / 2; y < cy + s / 2; y++) {
    for (let x = cx - s / 2; x < cx + s / 2; x++) px.set([230, 20, 20], (y * w + x) * 3);
  }
  return sharp(px, { raw: { width: w, height: h, channels: 3 } }).png().toBuffer();
}

// The centre of the red pixels of an image, and their count.
async function redCentroid(image) {
  const { data, info } = await sharp(image).raw().toBuffer({ resolveWithObject: true });
  let [sx, sy, n] = [0, 0, 0];
  for (let y = 0; y < info.height; y++) {
    for (let x = 0; x < info.width; x++) {
      const i = (y * info.width + x) * info.channels;
      if (data[i] > 180 && data[i + 1] < 80) [sx, sy, n] = [sx + x + 0.5, sy + y + 0.5, n + 1];
    }
  }
  return { x: sx / n, y: sy / n, n };
}

describe('/info and focal crops', () => {
  let server;
  before(async () => {
    server = await startServer({});
  });
  after(() => stopServer(server));

  it('POST /info answers the header fields, without a ThumbHash', async () => {
    const photo = await jpegOf(400, 300);
    const { status, body } = await getJSON(server.base, '/info', { method: 'POST', body: photo });
    assert.equal(status, 200);
    assert.deepEqual(body, {
      format: 'jpeg', width: 400, height: 300, stored_width: 400, stored_height: 300,
      orientation: 1, frames: 1, alpha: false, space: 'srgb', icc: false, bytes: photo.length,
    });
  });

  it('an EXIF-rotated source gives its displayed and stored sizes', async () => {
    const rotated = await sharp(await jpegOf(300, 200)).rotate(270).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    const { body } = await getJSON(server.base, '/info?thumbhash=false', { method: 'POST', body: rotated });
    assert.deepEqual([body.width, body.height, body.stored_width, body.stored_height, body.orientation], [300, 200, 200, 300, 6]);
  });

  it('an animation gives its frames, delays and loop; a still image neither', async () => {
    const frame = (c) => sharp({ create: { width: 20, height: 10, channels: 3, background: c } }).png().toBuffer();
    const frames = await Promise.all(['#0a0', '#a00', '#00a'].map(frame));
    const gif = await sharp(frames, { join: { animated: true } }).gif({ loop: 2, delay: [100, 200, 300] }).toBuffer();
    const { body } = await getJSON(server.base, '/info', { method: 'POST', body: gif });
    assert.deepEqual([body.format, body.width, body.height, body.frames, body.delays_ms, body.loop], ['gif', 20, 10, 3, [100, 200, 300], 2]);
    const { body: still } = await getJSON(server.base, '/info', { method: 'POST', body: frames[0] });
    assert.equal(still.frames, 1);
    assert.ok(!('loop' in still) && !('delays_ms' in still));
  });

  for (const [query, why] of [['w=10', 'a thumbnail option'], ['thumbhash=1', 'thumbhash not a boolean'], ['thumbhash=true&thumbhash=true', 'thumbhash twice']]) {
    it(`${why} is a 400`, () => expectError(server.base, `/info?${query}`, 400, 'bad_parameter', { method: 'POST', body: Buffer.from('x') }));
  }

  it('not an image is a 415', () => expectError(server.base, '/info', 415, 'unsupported_format', { method: 'POST', body: Buffer.from('not an image') }));

  it('GET /info without a source directory is a 404', () => expectError(server.base, '/info?src=a.jpg', 404, 'sources_disabled'));

  it('focalCut centres the point as far as the scaled source allows', () => {
    assert.deepEqual(focalCut(100, 100, 600, 200, { x: 0.6, y: 0.5 }), { cw: 300, ch: 100, left: 130, top: 0 });
    assert.deepEqual(focalCut(100, 100, 600, 200, { x: 0.01, y: 0.5 }), { cw: 300, ch: 100, left: 0, top: 0 });
    assert.deepEqual(focalCut(100, 100, 600, 200, { x: 1, y: 0.5 }), { cw: 300, ch: 100, left: 200, top: 0 });
  });

  for (const [name, src, query, want] of [
    ['room to centre', [600, 200, 360, 100, 40], 'fx=0.6&fy=0.5', [50, 50]],
    ['clamped left', [600, 200, 30, 100, 40], 'fx=0.05&fy=0.5', [15, 50]],
    ['vertical', [200, 600, 100, 420, 40], 'fx=0.5&fy=0.7', [50, 50]],
  ]) {
    it(`a focal crop keeps the marked region: ${name}`, async () => {
      const res = await postThumbnail(server.base, `w=100&h=100&gravity=focal&${query}`, await marked(...src));
      assert.equal(res.status, 200);
      const { x, y, n } = await redCentroid(Buffer.from(await res.arrayBuffer()));
      assert.ok(n >= 300 && n <= 500, `${n} red pixels`);
      assert.ok(Math.abs(x - want[0]) <= 1.5 && Math.abs(y - want[1]) <= 1.5, `centred at ${x}, ${y}`);
    });
  }

  for (const query of ['gravity=focal', 'gravity=focal&fx=0.5', 'fx=0.5&fy=0.5', 'gravity=focal&fx=2&fy=0.5', 'gravity=focal&fx=0.5&fy=1e-1']) {
    it(`${query} is a 400`, async () => {
      const res = await postThumbnail(server.base, query, await jpegOf(40, 30));
      assert.equal(res.status, 400);
      assert.equal((await res.json()).code, 'bad_parameter');
    });
  }
});
