// The sharp side of the engine comparison (`go run ./bench engine`): times
// 256x256 cover thumbnails made in process from an in-memory source,
// single-threaded, in each output format asked for (jpeg and webp at quality
// 80), with the twin's own pipeline and encoder settings (render and
// PNG_OPTIONS from server.mjs), so the figures are those of exactly what the
// twin serves.
//
// Usage: node engine-bench.mjs [--iterations N] [--formats png,jpeg,webp] FILE...
//        node engine-bench.mjs --versions
// Prints one JSON line with the versions, then one per file and format:
//   {"file","format","iterations","median_ms","p90_ms","min_ms","bytes"}
// Run it under the bench lock (`bench lock -- node engine-bench.mjs ...`)
// like every timing on this machine.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { PNG_OPTIONS, render } from './server.mjs';

const WARMUPS = 5;
const FORMATS = ['png', 'jpeg', 'webp'];
const options = (format) => ({ width: 256, height: 256, fit: 'cover', gravity: 'centre', format, quality: format === 'png' ? null : 80 });

function usage(message) {
  console.error(`engine-bench: ${message}\nusage: node engine-bench.mjs [--iterations N] [--formats png,jpeg,webp] FILE...\n       node engine-bench.mjs --versions`);
  process.exit(2);
}

// Nearest-rank percentile of sorted values: the smallest value with at least p% of them at or below it.
function percentile(sorted, p) {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

function median(sorted) {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const round3 = (ms) => Math.round(ms * 1000) / 1000;

async function main() {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        iterations: { type: 'string', default: '50' },
        formats: { type: 'string', default: 'png' },
        versions: { type: 'boolean', default: false },
      },
      allowPositionals: true,
    });
  } catch (err) {
    usage(err.message);
  }
  const iterations = Number(parsed.values.iterations);
  if (!Number.isInteger(iterations) || iterations < 1) usage('--iterations must be a positive integer');
  const formats = parsed.values.formats.split(',');
  for (const f of formats) if (!FORMATS.includes(f)) usage(`unknown format ${JSON.stringify(f)} (known: ${FORMATS.join(', ')})`);
  if (parsed.positionals.length === 0 && !parsed.values.versions) usage('no source files given');

  // One libvips thread and no operation cache: the same conditions as the
  // Go engine benchmark, and no cached result can stand in for real work.
  sharp.concurrency(1);
  sharp.cache(false);
  console.log(JSON.stringify({
    engine: 'sharp',
    sharp: sharp.versions.sharp,
    libvips: sharp.versions.vips,
    node: process.versions.node,
    concurrency: sharp.concurrency(),
    png: PNG_OPTIONS,
  }));
  if (parsed.values.versions) return;

  for (const file of parsed.positionals) {
    const source = await readFile(file);
    for (const format of formats) {
      const opts = options(format);
      let bytes = 0;
      for (let i = 0; i < WARMUPS; i++) bytes = (await render(source, opts)).length;
      const times = [];
      for (let i = 0; i < iterations; i++) {
        const start = process.hrtime.bigint();
        await render(source, opts);
        times.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      times.sort((a, b) => a - b);
      console.log(JSON.stringify({
        file,
        format,
        iterations,
        median_ms: round3(median(times)),
        p90_ms: round3(percentile(times, 90)),
        min_ms: round3(times[0]),
        bytes,
      }));
    }
  }
}

await main();
