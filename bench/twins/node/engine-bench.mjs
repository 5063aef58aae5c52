// The sharp side of the engine comparison (`go run ./bench engine`): times
// 256x256 cover thumbnails made in process from an in-memory source,
// single-threaded, in each output format asked for, each at the contract's
// default q (jpeg and webp 80, avif 58), with the twin's own pipeline and
// encoder settings (render, PNG_OPTIONS and AVIF_OPTIONS from server.mjs), so
// the figures are those of exactly what the twin serves.
//
// Usage: node engine-bench.mjs [--iterations N] [--formats png,jpeg,webp,avif] [--out DIR] FILE...
//        node engine-bench.mjs --versions
// Prints one JSON line with the versions, then one per file and format:
//   {"file","format","iterations","median_ms","p90_ms","min_ms","bytes"}
// With --out, it also writes DIR/NAME.FORMAT (NAME: the file's name without
// its extension), the thumbnail the figures are of, and DIR/NAME.reference.png,
// the same thumbnail lossless and untimed: what the bench scores the lossy
// ones against (SSIM), so that only the encoder's loss is scored.
// Run it under the bench lock (`bench lock -- node engine-bench.mjs ...`)
// like every timing on this machine.
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { AVIF_OPTIONS, OUTPUTS, PNG_OPTIONS, avifChroma, render } from './server.mjs';

const WARMUPS = 5;
const FORMATS = Object.keys(OUTPUTS);
const options = (format) => ({ width: 256, height: 256, fit: 'cover', gravity: 'centre', format, quality: OUTPUTS[format].quality });

function usage(message) {
  console.error(`engine-bench: ${message}\nusage: node engine-bench.mjs [--iterations N] [--formats ${FORMATS.join(',')}] [--out DIR] FILE...\n       node engine-bench.mjs --versions`);
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
        out: { type: 'string' },
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
  const out = parsed.values.out;
  if (out !== undefined && !(await stat(out).catch(() => null))?.isDirectory()) usage(`--out ${JSON.stringify(out)} is not a directory`);

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
    avif: { ...AVIF_OPTIONS, chromaSubsampling: avifChroma(OUTPUTS.avif.quality) },
    quality: Object.fromEntries(FORMATS.filter((f) => OUTPUTS[f].quality !== null).map((f) => [f, OUTPUTS[f].quality])),
  }));
  if (parsed.values.versions) return;

  for (const file of parsed.positionals) {
    const source = await readFile(file);
    const name = path.basename(file, path.extname(file));
    if (out) await writeFile(path.join(out, `${name}.reference.png`), await render(source, options('png')));
    for (const format of formats) {
      const opts = options(format);
      let image;
      for (let i = 0; i < WARMUPS; i++) image = await render(source, opts);
      const times = [];
      for (let i = 0; i < iterations; i++) {
        const start = process.hrtime.bigint();
        await render(source, opts);
        times.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      if (out) await writeFile(path.join(out, `${name}.${format}`), image);
      times.sort((a, b) => a - b);
      console.log(JSON.stringify({
        file,
        format,
        iterations,
        median_ms: round3(median(times)),
        p90_ms: round3(percentile(times, 90)),
        min_ms: round3(times[0]),
        bytes: image.length,
      }));
    }
  }
}

await main();
