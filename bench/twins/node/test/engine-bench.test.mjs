// Runs engine-bench.mjs end to end on a tiny workload: checks its output
// shape, not its timings.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import sharp from 'sharp';

const script = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'engine-bench.mjs');
const run = (args) => promisify(execFile)(process.execPath, [script, ...args]);

test('engine-bench prints the versions, then one JSON line per file and format', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'twin-bench-'));
  try {
    const source = path.join(dir, 'noise.jpg');
    const noise = { type: 'gaussian', mean: 128, sigma: 40 };
    await writeFile(source, await sharp({ create: { width: 400, height: 300, channels: 3, noise } }).jpeg().toBuffer());
    const { stdout } = await run(['--iterations', '3', '--formats', 'png,jpeg,webp,avif', source, source]);
    const [versions, ...rows] = stdout.trim().split('\n').map((line) => JSON.parse(line));
    assert.equal(versions.sharp, '0.35.5');
    assert.match(versions.libvips, /^\d+\.\d+\.\d+$/);
    assert.equal(versions.concurrency, 1);
    assert.deepEqual(versions.avif, { effort: 4, bitdepth: 8, lossless: false, chromaSubsampling: '4:2:0' });
    assert.deepEqual(versions.quality, { jpeg: 80, webp: 80, avif: 58 });
    assert.deepEqual(rows.map((row) => row.format), ['png', 'jpeg', 'webp', 'avif', 'png', 'jpeg', 'webp', 'avif']);
    assert.notEqual(rows[0].bytes, rows[1].bytes);
    for (const row of rows) {
      assert.deepEqual(Object.keys(row), ['file', 'format', 'iterations', 'median_ms', 'p90_ms', 'min_ms', 'bytes']);
      assert.equal(row.file, source);
      assert.equal(row.iterations, 3);
      assert.ok(row.min_ms > 0 && row.min_ms <= row.median_ms && row.median_ms <= row.p90_ms, JSON.stringify(row));
      assert.ok(row.bytes > 1000);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('engine-bench --out writes each thumbnail timed and a lossless reference', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'twin-bench-'));
  try {
    const source = path.join(dir, 'photo.source.jpg');
    await writeFile(source, await sharp({ create: { width: 400, height: 300, channels: 3, background: '#468' } }).jpeg().toBuffer());
    const out = path.join(dir, 'out');
    await mkdir(out);
    const { stdout } = await run(['--iterations', '1', '--formats', 'webp,avif', '--out', out, source]);
    const rows = stdout.trim().split('\n').slice(1).map((line) => JSON.parse(line));
    assert.deepEqual((await readdir(out)).sort(), ['photo.source.avif', 'photo.source.reference.png', 'photo.source.webp']);
    for (const [file, format] of [['photo.source.reference.png', 'png'], ['photo.source.webp', 'webp'], ['photo.source.avif', 'heif']]) {
      const image = await readFile(path.join(out, file));
      const meta = await sharp(image).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], [format, 256, 256], file);
      const row = rows.find((r) => file.endsWith('.' + r.format));
      if (row) assert.equal(row.bytes, image.length, `${file}: the bytes the figures are of`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('engine-bench prints only the versions with --versions', async () => {
  const { stdout } = await run(['--versions']);
  const lines = stdout.trim().split('\n');
  assert.equal(lines.length, 1);
  assert.equal(JSON.parse(lines[0]).engine, 'sharp');
});

test('engine-bench refuses a bad --iterations, an unknown format, no files and an --out that is no directory', async () => {
  const missing = path.join(tmpdir(), 'twin-bench-no-such-dir');
  for (const args of [['--iterations', '0', 'x.jpg'], ['--formats', 'png,gif', 'x.jpg'], [], ['--out', missing, 'x.jpg'], ['--out', script, 'x.jpg']]) {
    await assert.rejects(run(args), (err) => err.code === 2 && /usage:/.test(err.stderr));
  }
});
