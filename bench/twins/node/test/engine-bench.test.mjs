// Runs engine-bench.mjs end to end on a tiny workload: checks its output
// shape, not its timings.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
    const { stdout } = await run(['--iterations', '3', '--formats', 'png,jpeg,webp', source, source]);
    const [versions, ...rows] = stdout.trim().split('\n').map((line) => JSON.parse(line));
    assert.equal(versions.sharp, '0.35.5');
    assert.match(versions.libvips, /^\d+\.\d+\.\d+$/);
    assert.equal(versions.concurrency, 1);
    assert.deepEqual(rows.map((row) => row.format), ['png', 'jpeg', 'webp', 'png', 'jpeg', 'webp']);
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

test('engine-bench prints only the versions with --versions', async () => {
  const { stdout } = await run(['--versions']);
  const lines = stdout.trim().split('\n');
  assert.equal(lines.length, 1);
  assert.equal(JSON.parse(lines[0]).engine, 'sharp');
});

test('engine-bench refuses a bad --iterations, an unknown format and no files', async () => {
  for (const args of [['--iterations', '0', 'x.jpg'], ['--formats', 'png,avif', 'x.jpg'], []]) {
    await assert.rejects(run(args), (err) => err.code === 2 && /usage:/.test(err.stderr));
  }
});
