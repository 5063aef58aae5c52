// What the twin's contract tests share: a real server process on a loopback
// port, requests to it, and test images made with sharp (no binary fixtures).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const serverFile = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'server.mjs');

// Starts server.mjs with PORT=0 and resolves once it has printed the port
// the OS chose, so parallel test runs never fight over a port.
export async function startServer(env) {
  const child = spawn(process.execPath, [serverFile], {
    env: { ...process.env, PORT: '0', THUMBD_SOURCE_DIR: '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening`)));
    lines.once('line', (line) => resolve(JSON.parse(line).port));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

export async function stopServer(server) {
  if (!server) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
}

export async function getJSON(base, urlPath, init) {
  const res = await fetch(base + urlPath, init);
  assert.match(res.headers.get('content-type'), /^application\/json/);
  return { status: res.status, headers: res.headers, body: await res.json() };
}

// Checks the contract's error shape as well as the status and code.
export async function expectError(base, urlPath, status, code, init) {
  const { status: got, headers, body } = await getJSON(base, urlPath, init);
  assert.equal(got, status, `${urlPath}: ${JSON.stringify(body)}`);
  assert.deepEqual(Object.keys(body), ['error', 'code']);
  assert.equal(body.code, code);
  assert.ok(body.error.length > 10, 'the error is a human sentence');
  return headers;
}

// A smooth colourful image (a gradient with a pattern), so JPEG behaves as for a photo.
export function photoPixels(width, height) {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      pixels[i] = (x * 255) / width;
      pixels[i + 1] = (y * 255) / height;
      pixels[i + 2] = 128 + 100 * Math.sin(x / 9) * Math.cos(y / 7);
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } });
}

export const jpegOf = (width, height) => photoPixels(width, height).jpeg({ quality: 85 }).toBuffer();

export async function pixelAt(image, x, y) {
  const { data, info } = await sharp(image).raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return [...data.subarray(i, i + info.channels)];
}

export async function postThumbnail(base, query, source) {
  return fetch(`${base}/thumbnail?${query}`, { method: 'POST', body: source });
}
