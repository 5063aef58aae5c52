// Contract tests for the Node twin: each test talks HTTP to a real server
// process on a loopback port, as the bench driver does. Test images are made
// with sharp here, so no binary fixtures are needed.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { expectError, getJSON, jpegOf, photoPixels, pixelAt, postThumbnail, startServer, stopServer } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtureFile = path.join(here, '..', '..', '..', '..', 'service', 'testdata', 'json-document.json');

const SHA256_EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const SHA256_ABC = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
// "0123456789abcdef" x 64, the payload when data is absent (from sha256sum).
const SHA256_DEFAULT_PAYLOAD = '4613a38a7f79ada3fc343ea4de1488f8828f0fe602d8cb7bdce958040b204b8b';
// "héllo wörld/ä+€" in UTF-8 (from sha256sum).
const SHA256_UTF8 = 'd23b434f3bca0efbcc2cc8c6931d4a6aaad9257a20ced9ef6590e94443b25cbd';
const SHA256_A_SPACE_B = 'c8687a08aa5d6ed2044328fa6a697ab8e96dc34291e8c2034ae8c38e6fcc6d65';
const SHA256_BYTE_FF = 'a8100ae6aa1940d0b663bb31cd466142ebbdbd5187131b92d93818987832eb89';

// The reference /compute, in BigInt so it cannot share a double-precision slip with the server.
function computeReference(n) {
  let result = 0n;
  for (let i = 0n; i < BigInt(n); i++) result = (result + i * 31n) % 1000000007n;
  return Number(result);
}

function pseudoRandomBytes(length) {
  const chunks = [];
  for (let i = 0; chunks.length * 32 < length; i++) chunks.push(createHash('sha256').update(String(i)).digest());
  return Buffer.concat(chunks).subarray(0, length);
}

describe('node twin', () => {
  let server; // THUMBD_SOURCE_DIR set, default limits
  let small; // the same source directory, tiny limits
  let sourceDir;
  let outsideDir;
  let photo; // 400x300 JPEG

  before(async () => {
    photo = await jpegOf(400, 300);
    sourceDir = await mkdtemp(path.join(tmpdir(), 'twin-src-'));
    outsideDir = await mkdtemp(path.join(tmpdir(), 'twin-out-'));
    await writeFile(path.join(sourceDir, 'photo.jpg'), photo);
    await mkdir(path.join(sourceDir, 'sub'));
    await writeFile(path.join(sourceDir, 'sub', 'nested.jpg'), photo);
    await writeFile(path.join(outsideDir, 'secret.jpg'), photo);
    await symlink(path.join(outsideDir, 'secret.jpg'), path.join(sourceDir, 'escape.jpg'));
    await symlink(path.join(sourceDir, 'photo.jpg'), path.join(sourceDir, 'alias.jpg'));
    [server, small] = await Promise.all([
      startServer({ THUMBD_SOURCE_DIR: sourceDir }),
      startServer({ THUMBD_SOURCE_DIR: sourceDir, THUMBD_MAX_BODY_BYTES: '1000', THUMBD_MAX_PIXELS: '10000' }),
    ]);
  });

  after(async () => {
    await Promise.all([stopServer(server), stopServer(small)]);
    await rm(sourceDir, { recursive: true, force: true });
    await rm(outsideDir, { recursive: true, force: true });
  });

  describe('health, ready, json', () => {
    it('GET /health answers ok', async () => {
      const { status, body } = await getJSON(server.base, '/health');
      assert.equal(status, 200);
      assert.deepEqual(body, { status: 'ok' });
    });

    it('GET /ready answers ready', async () => {
      const { status, body } = await getJSON(server.base, '/ready');
      assert.equal(status, 200);
      assert.deepEqual(body, { status: 'ready' });
    });

    it('GET /json returns exactly the fixture bytes', async () => {
      const fixture = await readFile(fixtureFile);
      for (let i = 0; i < 2; i++) {
        const res = await fetch(server.base + '/json');
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), 'application/json');
        const body = Buffer.from(await res.arrayBuffer());
        assert.equal(Number(res.headers.get('content-length')), fixture.length);
        assert.ok(body.equals(fixture), `body differs from the fixture:\n${body}`);
      }
    });
  });

  describe('compute', () => {
    for (const n of [0, 1, 2, 1000, 100000]) {
      it(`n=${n} matches the BigInt reference`, async () => {
        const { status, body } = await getJSON(server.base, `/compute?n=${n}`);
        assert.equal(status, 200);
        assert.deepEqual(body, { n, result: computeReference(n) });
      });
    }

    it('defaults to n=100000', async () => {
      const { body } = await getJSON(server.base, '/compute');
      assert.deepEqual(body, { n: 100000, result: computeReference(100000) });
    });

    it('stays exact where i*31 + result passes 2^32 (n=3000000)', async () => {
      const { body } = await getJSON(server.base, '/compute?n=3000000');
      assert.deepEqual(body, { n: 3000000, result: computeReference(3000000) });
    });

    for (const bad of ['-1', '1.5', 'abc', '100000001', '', '1e3', '0x10']) {
      it(`n=${JSON.stringify(bad)} is a 400`, () => expectError(server.base, `/compute?n=${bad}`, 400, 'bad_parameter'));
    }
  });

  describe('hash', () => {
    const cases = [
      ['data absent: the default payload', '/hash', SHA256_DEFAULT_PAYLOAD],
      ['data present but empty', '/hash?data=', SHA256_EMPTY],
      ['abc', '/hash?data=abc', SHA256_ABC],
      ['UTF-8 through percent-escapes', '/hash?data=h%C3%A9llo%20w%C3%B6rld%2F%C3%A4%2B%E2%82%AC', SHA256_UTF8],
      ['+ is a space', '/hash?data=a+b', SHA256_A_SPACE_B],
      ['an escape for a byte that is not UTF-8', '/hash?data=%ff', SHA256_BYTE_FF],
    ];
    for (const [name, urlPath, hex] of cases) {
      it(`GET ${name}`, async () => {
        const { status, body } = await getJSON(server.base, urlPath);
        assert.equal(status, 200);
        assert.deepEqual(body, { algorithm: 'sha256', hex });
      });
    }

    for (const bad of ['%zz', '%4', 'abc%', '%%41']) {
      it(`GET data=${bad} (invalid escape) is a 400`, () => expectError(server.base, `/hash?data=${bad}`, 400, 'bad_parameter'));
    }

    it('GET with a ";" in the query is a 400, as in Go', () => expectError(server.base, '/hash?data=a;b', 400, 'bad_parameter'));

    it('GET with an invalid escape in another parameter is a 400', () =>
      expectError(server.base, '/hash?x=%G1&data=abc', 400, 'bad_parameter'));

    it('POST ignores even a repeated or unknown parameter', async () => {
      const { status } = await getJSON(server.base, '/hash?data=a&data=b&x=1', { method: 'POST', body: 'abc' });
      assert.equal(status, 200);
    });

    it('POST hashes the body and ignores the query', async () => {
      const { body } = await getJSON(server.base, '/hash?data=zzz&bad=%zz', { method: 'POST', body: 'abc' });
      assert.deepEqual(body, { algorithm: 'sha256', hex: SHA256_ABC });
      const empty = await getJSON(server.base, '/hash', { method: 'POST' });
      assert.equal(empty.body.hex, SHA256_EMPTY);
    });

    it('POST streams a large chunked body', async () => {
      const payload = pseudoRandomBytes(3 * 1024 * 1024);
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < payload.length; i += 65536) controller.enqueue(payload.subarray(i, i + 65536));
          controller.close();
        },
      });
      const { body } = await getJSON(server.base, '/hash', { method: 'POST', body: stream, duplex: 'half' });
      assert.equal(body.hex, createHash('sha256').update(payload).digest('hex'));
    });

    it('POST over the body limit is a 413', () =>
      expectError(small.base, '/hash', 413, 'body_too_large', { method: 'POST', body: Buffer.alloc(1001) }));

    it('POST over the body limit without a Content-Length (chunked) is a 413', async () => {
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < 4; i++) controller.enqueue(Buffer.alloc(400));
          controller.close();
        },
      });
      await expectError(small.base, '/hash', 413, 'body_too_large', { method: 'POST', body: stream, duplex: 'half' });
    });

    it('POST exactly at the body limit is fine', async () => {
      const { status } = await getJSON(small.base, '/hash', { method: 'POST', body: Buffer.alloc(1000) });
      assert.equal(status, 200);
    });
  });

  // design.md: queries are strict on every route; a typo such as widht=100
  // must not silently give the default size.
  describe('strict queries', () => {
    for (const [method, urlPath, name, why] of [
      ['GET', '/health?verbose=1', 'verbose', 'not known'],
      ['GET', '/ready?x', 'x', 'not known'],
      ['GET', '/json?pretty=true', 'pretty', 'not known'],
      ['GET', '/compute?n=5&m=6', 'm', 'not known'],
      ['GET', '/compute?n=5&n=6', 'n', 'given 2 times'],
      ['GET', '/hash?data=a&data=b', 'data', 'given 2 times'],
      ['GET', '/hash?x=1&data=abc', 'x', 'not known'],
      ['POST', '/thumbnail?widht=100', 'widht', 'not known'],
      ['POST', '/thumbnail?w=100&w=200', 'w', 'given 2 times'],
      ['POST', '/thumbnail?src=photo.jpg', 'src', 'not known'],
      ['GET', '/thumbnail?src=photo.jpg&src=photo.jpg', 'src', 'given 2 times'],
      ['GET', '/thumbnail?src=photo.jpg&quality=80', 'quality', 'not known'],
      ['GET', '/health?=1', '', 'not known'],
    ]) {
      it(`${method} ${urlPath} is a 400 naming ${JSON.stringify(name)}`, async () => {
        const init = method === 'POST' ? { method, body: photo } : undefined;
        await expectError(server.base, urlPath, 400, 'bad_parameter', init);
        const { body } = await getJSON(server.base, urlPath, init);
        assert.ok(body.error.startsWith(`Parameter ${JSON.stringify(name)} is ${why}`), body.error);
      });
    }

    it('names the first offending parameter in name order, as thumbd does', async () => {
      const { body } = await getJSON(server.base, '/thumbnail?zoom=2&alpha=1', { method: 'POST', body: photo });
      assert.equal(body.error, 'Parameter "alpha" is not known here; this route takes "w", "h", "fit", "gravity", "fx", "fy", "format", "q", "dpr", "animated".');
    });

    it('a route without parameters says so', async () => {
      const { body } = await getJSON(server.base, '/json?x=1');
      assert.equal(body.error, 'Parameter "x" is not known here; this route takes no parameters.');
    });

    it('every known parameter, each once, is fine', async () => {
      const res = await postThumbnail(server.base, 'w=64&h=48&fit=cover&gravity=entropy&format=webp&q=70', photo);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/webp');
    });
  });

  describe('routing errors', () => {
    for (const urlPath of ['/', '/nope', '/health/', '/HEALTH', '/metrics/x']) {
      it(`GET ${urlPath} is a 404`, () => expectError(server.base, urlPath, 404, 'not_found'));
    }

    for (const [method, urlPath, allow] of [
      ['POST', '/health', 'GET'],
      ['DELETE', '/ready', 'GET'],
      ['POST', '/json', 'GET'],
      ['PUT', '/compute', 'GET'],
      ['PUT', '/hash', 'GET, POST'],
      ['DELETE', '/thumbnail', 'GET, POST'],
    ]) {
      it(`${method} ${urlPath} is a 405 with Allow`, async () => {
        const headers = await expectError(server.base, urlPath, 405, 'method_not_allowed', { method });
        assert.equal(headers.get('allow'), allow);
      });
    }
  });

  describe('POST /thumbnail', () => {
    const expectedSize = { cover: [200, 120], contain: [200, 120], fill: [200, 120], inside: [160, 120] };
    for (const fit of ['cover', 'contain', 'fill', 'inside']) {
      for (const format of ['png', 'jpeg', 'webp', 'avif']) {
        it(`fit=${fit} format=${format} gives a decodable ${format} of the asked size`, async () => {
          const res = await postThumbnail(server.base, `w=200&h=120&fit=${fit}&format=${format}`, photo);
          assert.equal(res.status, 200);
          assert.equal(res.headers.get('content-type'), `image/${format}`);
          assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
          assert.match(res.headers.get('etag'), /^"[^"]+"$/, 'a strong ETag');
          const image = Buffer.from(await res.arrayBuffer());
          assert.equal(Number(res.headers.get('content-length')), image.length);
          const meta = await sharp(image).metadata();
          assert.equal(meta.format, format === 'avif' ? 'heif' : format);
          assert.deepEqual([meta.width, meta.height], expectedSize[fit]);
          assert.equal(meta.depth, 'uchar');
          assert.equal(meta.space, 'srgb');
        });
      }
    }

    for (const [query, width, height] of [
      ['', 256, 256],
      ['w=100', 100, 75],
      ['h=60', 80, 60],
      ['w=800&h=800', 800, 800], // enlarging is allowed
      ['w=100&h=50&fit=cover&gravity=attention', 100, 50],
      ['w=100&h=50&fit=cover&gravity=entropy', 100, 50],
    ]) {
      it(`${query || 'no size'} gives ${width}x${height}`, async () => {
        const res = await postThumbnail(server.base, query, photo);
        assert.equal(res.status, 200);
        const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
        assert.deepEqual([meta.format, meta.width, meta.height], ['png', width, height]);
      });
    }

    it('q changes the size of jpeg output', async () => {
      const sizes = [];
      for (const q of [10, 95]) {
        const res = await postThumbnail(server.base, `format=jpeg&q=${q}`, photo);
        sizes.push((await res.arrayBuffer()).byteLength);
      }
      assert.ok(sizes[0] < sizes[1], `q=10 gave ${sizes[0]} bytes, q=95 ${sizes[1]}`);
    });

    it('the ETag follows the source and the normalised options', async () => {
      const etag = async (query, source = photo) => (await postThumbnail(server.base, query, source)).headers.get('etag');
      const base = await etag('w=100&h=100');
      assert.equal(await etag('w=100&h=100'), base);
      assert.equal(await etag('h=100&w=100&fit=cover&gravity=centre&format=png&q=20'), base, 'defaults and q for png do not count');
      assert.notEqual(await etag('w=100&h=101'), base);
      assert.notEqual(await etag('w=100&h=100&format=webp'), base);
      assert.notEqual(await etag('w=100&h=100', await jpegOf(400, 301)), base);
    });

    it('keeps alpha for png, webp and avif and flattens onto white for jpeg', async () => {
      // Left half opaque red, right half fully transparent.
      const rgba = Buffer.alloc(100 * 100 * 4);
      for (let i = 0; i < 100 * 100; i++) if (i % 100 < 50) rgba.set([255, 0, 0, 255], i * 4);
      const source = await sharp(rgba, { raw: { width: 100, height: 100, channels: 4 } }).png().toBuffer();
      for (const format of ['png', 'webp', 'avif']) {
        const image = Buffer.from(await (await postThumbnail(server.base, `w=100&h=100&format=${format}`, source)).arrayBuffer());
        assert.equal((await sharp(image).metadata()).hasAlpha, true, format);
        assert.equal((await pixelAt(image, 90, 50))[3], 0, `${format}: the right half stays transparent`);
      }
      const jpeg = Buffer.from(await (await postThumbnail(server.base, 'w=100&h=100&format=jpeg', source)).arrayBuffer());
      assert.equal((await sharp(jpeg).metadata()).channels, 3);
      for (const v of await pixelAt(jpeg, 90, 50)) assert.ok(v > 245, 'the transparent half is white in jpeg');
    });

    it('contain pads with transparency for png and with white for jpeg', async () => {
      const png = Buffer.from(await (await postThumbnail(server.base, 'w=200&h=200&fit=contain', photo)).arrayBuffer());
      assert.equal((await pixelAt(png, 100, 2))[3], 0, 'the padding is transparent');
      assert.equal((await pixelAt(png, 100, 100))[3], 255, 'the image itself is opaque');
      const jpeg = Buffer.from(await (await postThumbnail(server.base, 'w=200&h=200&fit=contain&format=jpeg', photo)).arrayBuffer());
      for (const v of await pixelAt(jpeg, 100, 2)) assert.ok(v > 245, 'the padding is white');
    });

    it('applies the EXIF orientation and strips metadata', async () => {
      // 300x200 stored, orientation 6 (rotate 90° clockwise): 200x300 as seen.
      const source = await photoPixels(300, 200).jpeg().withMetadata({ orientation: 6 }).toBuffer();
      assert.ok((await sharp(source).metadata()).exif, 'the source carries EXIF');
      const image = Buffer.from(await (await postThumbnail(server.base, 'w=100', source)).arrayBuffer());
      const meta = await sharp(image).metadata();
      assert.deepEqual([meta.width, meta.height], [100, 150]);
      assert.equal(meta.exif, undefined);
      assert.equal(meta.icc, undefined);
    });

    it('makes 16-bit, greyscale and CMYK sources 8-bit sRGB', async () => {
      const sources = {
        rgb16: await photoPixels(120, 80).toColourspace('rgb16').png().toBuffer(),
        grey16: await photoPixels(120, 80).toColourspace('grey16').png().toBuffer(),
        cmyk: await photoPixels(120, 80).toColourspace('cmyk').jpeg().toBuffer(),
      };
      for (const [space, source] of Object.entries(sources)) {
        assert.equal((await sharp(source).metadata()).space, space);
        const image = Buffer.from(await (await postThumbnail(server.base, 'w=60', source)).arrayBuffer());
        const meta = await sharp(image).metadata();
        assert.deepEqual([meta.depth, meta.space, meta.channels], ['uchar', 'srgb', 3], space);
      }
    });

    it('takes the first frame of an animated GIF', async () => {
      // Two 50x50 frames: red, then blue.
      const frames = Buffer.alloc(50 * 100 * 3);
      for (let i = 0; i < 50 * 100; i++) frames[i * 3 + (i < 50 * 50 ? 0 : 2)] = 255;
      const gif = await sharp(frames, { raw: { width: 50, height: 100, channels: 3, pageHeight: 50 } }).gif().toBuffer();
      assert.equal((await sharp(gif).metadata()).pages, 2);
      const image = Buffer.from(await (await postThumbnail(server.base, 'w=50', gif)).arrayBuffer());
      const meta = await sharp(image).metadata();
      assert.deepEqual([meta.width, meta.height], [50, 50]);
      const [r, g, b] = await pixelAt(image, 25, 25);
      assert.ok(r > 200 && g < 50 && b < 50, `the first (red) frame, got ${[r, g, b]}`);
    });

    it('accepts webp and gif sources', async () => {
      for (const source of [await photoPixels(80, 60).webp().toBuffer(), await photoPixels(80, 60).gif().toBuffer()]) {
        const res = await postThumbnail(server.base, 'w=40&h=40', source);
        assert.equal(res.status, 200);
      }
    });

    for (const [query, why] of [
      ['w=0', 'w below 1'],
      ['w=4097', 'w above the max side'],
      ['h=abc', 'h not a number'],
      ['w=', 'w empty'],
      ['w=10.5', 'w not an integer'],
      ['fit=outside', 'unknown fit'],
      ['gravity=north', 'unknown gravity'],
      ['format=gif', 'unsupported output format'],
      ['format=jpeg&q=0', 'q below 1'],
      ['format=webp&q=101', 'q above 100'],
      ['w=%zz', 'invalid escape'],
    ]) {
      it(`${why} (${query}) is a 400`, () =>
        expectError(server.base, `/thumbnail?${query}`, 400, 'bad_parameter', { method: 'POST', body: photo }));
    }

    it('random bytes are a 415', () =>
      expectError(server.base, '/thumbnail', 415, 'unsupported_format', { method: 'POST', body: pseudoRandomBytes(4096) }));

    it('an empty body is a 415', () => expectError(server.base, '/thumbnail', 415, 'unsupported_format', { method: 'POST' }));

    it('images in formats the contract does not accept (SVG) are a 415', async () => {
      const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40"/></svg>');
      await expectError(server.base, '/thumbnail', 415, 'unsupported_format', { method: 'POST', body: svg });
    });

    it('TIFF and AVIF sources are read (the formats sharp reads of the contract\'s)', async () => {
      for (const [name, body] of [['tiff', await photoPixels(40, 40).tiff().toBuffer()], ['avif', await photoPixels(40, 40).avif().toBuffer()]]) {
        const res = await fetch(`${server.base}/thumbnail?w=20&h=20&format=png`, { method: 'POST', body });
        assert.equal(res.status, 200, `${name}: ${res.status} ${await res.text()}`);
        assert.equal(res.headers.get('content-type'), 'image/png');
      }
    });

    it('a truncated JPEG is a 422', () =>
      expectError(server.base, '/thumbnail', 422, 'unprocessable_image', { method: 'POST', body: photo.subarray(0, photo.length / 2) }));

    it('a PNG signature followed by junk is a 422', () =>
      expectError(server.base, '/thumbnail', 422, 'unprocessable_image', {
        method: 'POST',
        body: Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pseudoRandomBytes(200)]),
      }));

    it('a source with more pixels than the limit is a 422', async () => {
      // 101x100 = 10100 pixels against THUMBD_MAX_PIXELS=10000; a flat colour keeps it under the 1000-byte body limit.
      const tiny = await sharp({ create: { width: 101, height: 100, channels: 3, background: 'red' } }).png().toBuffer();
      assert.ok(tiny.length <= 1000, `the source fits the small body limit (${tiny.length} bytes)`);
      await expectError(small.base, '/thumbnail', 422, 'too_many_pixels', { method: 'POST', body: tiny });
    });

    it('a body over the limit is a 413', () =>
      expectError(small.base, '/thumbnail', 413, 'body_too_large', { method: 'POST', body: pseudoRandomBytes(5000) }));
  });

  describe('GET /thumbnail?src=', () => {
    it('reads the source from the directory, with caching headers', async () => {
      const res = await fetch(`${server.base}/thumbnail?src=photo.jpg&w=64&format=webp`);
      assert.equal(res.status, 200);
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 64, 48]);
      assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      // The same source and options as a POST give the same ETag.
      const posted = await postThumbnail(server.base, 'w=64&format=webp', photo);
      assert.equal(res.headers.get('etag'), posted.headers.get('etag'));
    });

    it('answers If-None-Match with the current ETag with a 304', async () => {
      const first = await fetch(`${server.base}/thumbnail?src=photo.jpg`);
      const etag = first.headers.get('etag');
      const again = await fetch(`${server.base}/thumbnail?src=photo.jpg`, { headers: { 'If-None-Match': etag } });
      assert.equal(again.status, 304);
      assert.equal(again.headers.get('etag'), etag);
      const stale = await fetch(`${server.base}/thumbnail?src=photo.jpg`, { headers: { 'If-None-Match': '"other"' } });
      assert.equal(stale.status, 200);
    });

    it('follows symlinks and subdirectories that stay inside', async () => {
      for (const src of ['alias.jpg', 'sub/nested.jpg', 'sub%2Fnested.jpg']) {
        assert.equal((await fetch(`${server.base}/thumbnail?src=${src}`)).status, 200, src);
      }
    });

    it('a missing source is a 404', () => expectError(server.base, '/thumbnail?src=missing.jpg', 404, 'source_not_found'));

    it('a directory is a 404', () => expectError(server.base, '/thumbnail?src=sub', 404, 'source_not_found'));

    for (const [src, why] of [
      ['../outside.jpg', 'a parent reference'],
      ['sub/../photo.jpg', '.. inside the name'],
      [encodeURIComponent('/etc/passwd'), 'an absolute name'],
      [encodeURIComponent('sub\\nested.jpg'), 'a backslash'],
      ['escape.jpg', 'a symlink that leaves the directory'],
      ['', 'an empty name'],
    ]) {
      it(`${why} is a 400`, () => expectError(server.base, `/thumbnail?src=${src}`, 400, 'bad_source_name'));
    }

    it('a source file over the body limit is a 422', () =>
      expectError(small.base, '/thumbnail?src=photo.jpg', 422, 'source_too_large'));

    it('without a source directory the route is off (404)', async () => {
      const off = await startServer({});
      try {
        await expectError(off.base, '/thumbnail?src=photo.jpg', 404, 'sources_disabled');
      } finally {
        await stopServer(off);
      }
    });

    it('a bad option is a 400 before the source is read', () =>
      expectError(server.base, '/thumbnail?src=missing.jpg&fit=bogus', 400, 'bad_parameter'));
  });
});
