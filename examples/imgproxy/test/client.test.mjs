// imgproxy's official Node client (@imgproxy/imgproxy-node, with
// @imgproxy/imgproxy-js-core under it) builds URLs; a thumbd with
// THUMBD_IMGPROXY=true at $THUMBD_URL answers them. Sizes and formats are
// what imgproxy's documentation says these options give for the bench's
// small.jpg (400x300). Run by scripts/test-imgproxy.sh, twice: unsigned,
// then signed with $IMGPROXY_KEY/$IMGPROXY_SALT (the client reads them).
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { generateImageUrl } from '@imgproxy/imgproxy-node';

const endpoint = process.env.THUMBD_URL;
const key = process.env.IMGPROXY_KEY;
const salt = process.env.IMGPROXY_SALT;
const signed = Boolean(key);

// dims reads an answer's size from its header: PNG, JPEG or WebP.
function dims(b) {
  if (b.subarray(1, 4).toString() === 'PNG') return [b.readUInt32BE(16), b.readUInt32BE(20)];
  if (b.subarray(8, 12).toString() === 'WEBP') {
    const chunk = b.subarray(12, 16).toString();
    if (chunk === 'VP8X') return [b.readUIntLE(24, 3) + 1, b.readUIntLE(27, 3) + 1];
    if (chunk === 'VP8L') {
      const bits = b.readUInt32LE(21);
      return [(bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1];
    }
    return [b.readUInt16LE(26) & 0x3fff, b.readUInt16LE(28) & 0x3fff];
  }
  for (let i = 2; i < b.length;) { // JPEG: the first SOFn
    const marker = b[i + 1];
    const len = b.readUInt16BE(i + 2);
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) return [b.readUInt16BE(i + 7), b.readUInt16BE(i + 5)];
    i += 2 + len;
  }
  throw new Error('no size in the answer');
}

async function get(url) {
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, type: res.headers.get('content-type'), headers: res.headers, body };
}

async function expectImage(url, type, w, h) {
  const a = await get(url);
  assert.equal(a.status, 200, `${url}: ${a.body}`);
  assert.equal(a.type, type, url);
  assert.deepEqual(dims(a.body), [w, h], url);
  return a;
}

async function expectError(url, status, code) {
  const a = await get(url);
  assert.equal(a.status, status, `${url}: ${a.body}`);
  assert.equal(JSON.parse(a.body).code, code, url);
}

// sign is imgproxy's signature of a path, for the shapes the client does
// not build (a chunked base64 source, hand-written options).
function sign(path) {
  if (!signed) return `${endpoint}/unsafe${path}`;
  const mac = createHmac('sha256', Buffer.from(key, 'hex')).update(Buffer.from(salt, 'hex')).update(path).digest('base64url');
  return `${endpoint}/${mac}${path}`;
}

const url = (source, options, displayAs = 'base64') => generateImageUrl({ endpoint, url: { value: source, displayAs }, options });

test('sizes and formats from the client, plain and base64 sources', async () => {
  for (const displayAs of ['plain', 'base64']) {
    await expectImage(url('local:///small.jpg', {}, displayAs), 'image/jpeg', 400, 300); // no size: the source's
    await expectImage(url('local:///small.jpg', { width: 100 }, displayAs), 'image/jpeg', 100, 75);
    await expectImage(url('local:///small.jpg', { resizing_type: 'fill', width: 100, height: 80 }, displayAs), 'image/jpeg', 100, 80);
    await expectImage(url('local:///small.jpg', { resize: { resizing_type: 'fit', width: 1000, height: 1000 } }, displayAs), 'image/jpeg', 400, 300);
    await expectImage(url('local:///small.jpg', { resize: { resizing_type: 'fit', width: 1000, height: 1000, enlarge: 1 } }, displayAs), 'image/jpeg', 1000, 750);
    await expectImage(url('local:///small.jpg', { resize: { resizing_type: 'force', width: 50, height: 50 } }, displayAs), 'image/jpeg', 50, 50);
    await expectImage(url('local:///small.jpg', { size: { width: 64, height: 64 }, format: 'webp' }, displayAs), 'image/webp', 64, 48);
    await expectImage(url('local:///small.jpg', { width: 60, format: 'png', padding: { top: 5 } }, displayAs), 'image/png', 70, 55);
    await expectImage(url('local:///small.jpg', { width: 60, rotate: 90, dpr: 2 }, displayAs), 'image/jpeg', 120, 160);
  }
});

test('the integrations\' URL shapes', async () => {
  // The Next.js example loader: width and quality, under /unsafe (an
  // unsigned server only).
  if (!signed) await expectImage(`${endpoint}/unsafe/width:256/quality:75/plain/local:///small.jpg`, 'image/jpeg', 256, 192);
  // The WordPress plugin: size:W:H, signed when keys are set.
  await expectImage(sign('/size:300:200/plain/local:///small.jpg'), 'image/jpeg', 267, 200);
  // ActiveStorage (imgproxy-rails): fn with a base64 source in chunks.
  const b64 = Buffer.from('local:///small.jpg').toString('base64url');
  const a = await expectImage(sign(`/rs:fit:80:80/fn:avatar/${b64.slice(0, 8)}/${b64.slice(8)}.png`), 'image/png', 80, 60);
  assert.equal(a.headers.get('content-disposition'), 'inline; filename=avatar.png');
});

test('presets', async () => {
  await expectImage(url('local:///small.jpg', { preset: ['thumb'] }), 'image/png', 128, 128);
  await expectError(url('local:///small.jpg', { preset: ['nope'] }), 400, 'bad_parameter');
});

test('errors: bad values, unknown options, a climb out, expiry, signatures', async () => {
  // The client refuses rot:45 itself: written by hand.
  await expectError(sign('/rot:45/plain/local:///small.jpg'), 400, 'bad_parameter');
  // Served since the plan issue (46): min-width and max_bytes, as the
  // client writes them; imgproxy's security options stay refused.
  await expectImage(url('local:///small.jpg', { width: 20, min_width: 10 }), 'image/jpeg', 20, 15);
  await expectImage(url('local:///small.jpg', { width: 20, max_bytes: 1000 }), 'image/jpeg', 20, 15);
  await expectError(sign('/msr:1/plain/local:///small.jpg'), 400, 'bad_parameter');
  await expectError(sign('/widht:100/plain/local:///small.jpg'), 400, 'bad_parameter');
  await expectError(url('local:///../small.jpg', { width: 10 }), 400, 'bad_source_name');
  await expectError(url('gs://bucket/small.jpg', { width: 10 }), 400, 'url_scheme_not_allowed');
  await expectError(url('local:///small.jpg', { expires: 1000 }), 403, 'signature_expired');
  if (signed) {
    const good = url('local:///small.jpg', { width: 20 });
    await expectImage(good, 'image/jpeg', 20, 15);
    await expectError(good.replace('w:20', 'w:21'), 403, 'bad_signature');
    await expectError(generateImageUrl({ endpoint, url: 'local:///small.jpg', options: { width: 10 }, key: '00ff', salt: salt }), 403, 'bad_signature');
    await expectError(`${endpoint}/unsafe/w:10/plain/local:///small.jpg`, 403, 'bad_signature');
  }
});
