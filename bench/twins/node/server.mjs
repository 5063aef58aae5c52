// The Node.js twin of the thumbd HTTP contract (see docs/api.md): the JIT
// baseline the bench driver compares thumbd with. Plain node:http on purpose,
// so the figures measure Node itself rather than a framework.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';

// PNG encoder settings as close to thumbd's as sharp allows: zlib level 1,
// truecolour (no palette quantisation). thumbd uses the "up" row filter;
// sharp offers only every filter (adaptiveFiltering) or none, and every
// filter is the one whose files come nearest thumbd's (none makes them
// 2x larger). PNG encoding dominates small thumbnails: change these here,
// and only here, when thumbd's change.
export const PNG_OPTIONS = Object.freeze({ compressionLevel: 1, adaptiveFiltering: true, palette: false });

// thumbd's AVIF settings (libvips heifsave through aom): effort 4
// (THUMBD_AVIF_EFFORT's default), lossy, 8 bits, and libvips' automatic
// chroma subsampling, which is 4:2:0 below Q 90 and 4:4:4 from it (sharp's
// own default is 4:4:4 at every Q, so it is said here). Equal settings make
// the bench compare the engines at equal encoder effort.
export const AVIF_OPTIONS = Object.freeze({ effort: 4, bitdepth: 8, lossless: false });
export const avifChroma = (quality) => (quality >= 90 ? '4:4:4' : '4:2:0');

// The same settings names and defaults as the Go service (CONTRIBUTING.md), so
// a bench that sets them gets the same limits from both.
const LIMITS = Object.freeze({
  maxBodyBytes: envInt('THUMBD_MAX_BODY_BYTES', 20 * 1024 * 1024),
  maxPixels: envInt('THUMBD_MAX_PIXELS', 40_000_000),
  maxFrames: envInt('THUMBD_MAX_FRAMES', 256),
  maxSide: envInt('THUMBD_MAX_SIDE', 4096),
  maxAnimationPixels: envInt('THUMBD_MAX_ANIMATION_PIXELS', 16_777_216),
});

// thumbd's format table (service/internal/imagefmt) as `thumbd formats -json`
// prints it; a service test keeps this file equal to the table, so a new
// format there is one here too. OUTPUTS holds, per format thumbd writes, the
// media type, default q (null: the encoder takes none), whether alpha and
// frames are kept, format=auto's rank among equal q-values (higher wins) and
// listed: auto takes the format only when Accept names it exactly, since
// every browser sends a wildcard whatever it decodes.
const FORMAT_TABLE = JSON.parse(readFileSync(new URL('../../internal/formats/formats.json', import.meta.url), 'utf8'));
const SOURCE_FORMATS = new Set(FORMAT_TABLE.filter((f) => f.input).map((f) => f.format));
const SOURCE_LIST = [...SOURCE_FORMATS].join(', ');
export const OUTPUTS = Object.freeze(Object.fromEntries(FORMAT_TABLE.filter((f) => f.output).map((f) => [f.format,
  Object.freeze({ type: f.content_type, quality: f.quality || null, alpha: f.alpha, animated: f.animated, rank: f.auto, listed: f.listed })])));
// focal is no sharp position: render cuts its window itself (focalCut).
const GRAVITIES = { centre: 'centre', attention: sharp.strategy.attention, entropy: sharp.strategy.entropy, focal: null };
const FITS = new Set(['cover', 'contain', 'fill', 'inside']);
const DEFAULT_SIDE = 256;
const MAX_COMPUTE_N = 100_000_000;
const DEFAULT_HASH_PAYLOAD = Buffer.from('0123456789abcdef'.repeat(64));

// A thumbnail server gains nothing from libvips' operation cache (every
// request is a new source) and the Go service turns it off too.
sharp.cache(false);

let draining = false;

// An error that is part of the contract: its status and JSON body are sent as is.
class HttpError extends Error {
  constructor(status, code, message, headers = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

function envInt(name, fallback) {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value)) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

function sendJSON(res, status, body, headers = {}) {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': bytes.length, ...headers });
  res.end(bytes);
}

// Decodes one query component to bytes the way Go's url.QueryUnescape does:
// '+' is a space and %XX any byte. URLSearchParams would let a bad escape
// through unchanged and decodeURIComponent rejects %FF, so neither fits.
// Node's HTTP parser refuses raw non-ASCII bytes in the request line, so
// every other character is one ASCII byte.
function unescapeQuery(text) {
  const bytes = Buffer.alloc(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '%') {
      const hex = text.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) {
        throw new HttpError(400, 'bad_parameter', `The query has an invalid percent-escape near "${text.slice(i, i + 3)}".`);
      }
      bytes[n++] = parseInt(hex, 16);
      i += 2;
    } else {
      bytes[n++] = ch === '+' ? 0x20 : text.charCodeAt(i);
    }
  }
  return bytes.subarray(0, n);
}

// Returns a Map from name to the raw bytes of its value. Queries are strict,
// as in thumbd (design.md): every pair is decoded first, so a bad escape
// anywhere is a 400; then, in name order as thumbd reports them, a name the
// route does not know (known) or one given twice is a 400 naming it.
function parseQuery(search, known) {
  const values = new Map();
  for (const pair of search.split('&')) {
    if (pair === '') continue;
    // Go's url.ParseQuery refuses ';' (no longer a separator), and so does thumbd.
    if (pair.includes(';')) throw new HttpError(400, 'bad_parameter', 'The query has a ";", which is not a separator; escape it as %3B.');
    const eq = pair.indexOf('=');
    const name = unescapeQuery(eq < 0 ? pair : pair.slice(0, eq)).toString();
    const value = unescapeQuery(eq < 0 ? '' : pair.slice(eq + 1));
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  const query = new Map();
  for (const name of [...values.keys()].sort()) {
    if (!known.includes(name)) {
      const takes = known.length ? known.map((k) => JSON.stringify(k)).join(', ') : 'no parameters';
      throw new HttpError(400, 'bad_parameter', `Parameter ${JSON.stringify(name)} is not known here; this route takes ${takes}.`);
    }
    const given = values.get(name);
    if (given.length > 1) {
      throw new HttpError(400, 'bad_parameter', `Parameter ${JSON.stringify(name)} is given ${given.length} times; give it once.`);
    }
    query.set(name, given[0]);
  }
  return query;
}

// Reads an optional integer parameter; present but empty or not all digits is
// a 400, like any value outside min..max.
function intParam(query, name, min, max, fallback) {
  if (!query.has(name)) return fallback;
  const text = query.get(name).toString();
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max)) {
    throw new HttpError(400, 'bad_parameter', `The parameter ${name} must be an integer from ${min} to ${max}.`);
  }
  return value;
}

function choiceParam(query, name, choices, fallback) {
  if (!query.has(name)) return fallback;
  const text = query.get(name).toString();
  if (!choices.includes(text)) {
    throw new HttpError(400, 'bad_parameter', `The parameter ${name} must be one of ${choices.join(', ')}.`);
  }
  return text;
}

function bodyTooLarge() {
  return new HttpError(413, 'body_too_large', `The request body is larger than ${LIMITS.maxBodyBytes} bytes.`, { Connection: 'close' });
}

// How much of an oversized body is still read (and dropped) before the 413 is
// sent. Closing on a client that is still sending makes it see a connection
// reset instead of the answer; Go's server likewise reads up to 256 KB of an
// unread body.
const DRAIN_BYTES = 256 * 1024;

// Passes the body to onChunk as it arrives, refusing more than the limit.
// Past the drain allowance it stops reading rather than destroying the
// request, which would reset the socket before the 413 could be sent.
function readBody(req, onChunk) {
  return new Promise((resolve, reject) => {
    let size = 0;
    const stop = () => {
      req.off('data', onData);
      req.pause();
      reject(bodyTooLarge());
    };
    const onData = (chunk) => {
      size += chunk.length;
      if (size <= LIMITS.maxBodyBytes) onChunk(chunk);
      else if (size > LIMITS.maxBodyBytes + DRAIN_BYTES) stop();
    };
    if (Number(req.headers['content-length']) > LIMITS.maxBodyBytes + DRAIN_BYTES) return stop();
    req.on('data', onData);
    req.once('end', () => (size > LIMITS.maxBodyBytes ? reject(bodyTooLarge()) : resolve()));
    // A body that breaks off is the client's fault (400, as in thumbd); 'close'
    // also comes after a normal 'end', when rejecting is a no-op.
    const brokeOff = () => reject(new HttpError(400, 'bad_parameter', 'The request body could not be read to its end.'));
    req.once('error', brokeOff);
    req.once('close', brokeOff);
  });
}

// Built as a data structure and serialised on every request: serialisation is
// what GET /json measures. Key order is the fixture's
// (service/testdata/json-document.json), which the tests compare byte for byte.
function jsonDocument() {
  return {
    service: 'thumbd',
    version: 1,
    description: 'A fixed document served by GET /json to measure JSON serialisation on every request',
    owner: { team: 'platform-imaging', contact: 'imaging-oncall', oncall: { primary: 'ana', secondary: 'bram', rotation_days: 7 } },
    limits: { max_body_bytes: 20971520, max_pixels: 40000000, max_side: 4096, max_frames: 256 },
    formats: ['png', 'jpeg', 'webp'],
    fits: ['cover', 'contain', 'fill', 'inside'],
    gravities: ['centre', 'attention', 'entropy'],
    sizes: [
      { name: 'small', width: 64, height: 64 },
      { name: 'medium', width: 256, height: 256 },
      { name: 'large', width: 1024, height: 768 },
    ],
    regions: [
      { id: 1, name: 'north', zones: ['n1', 'n2', 'n3'], weight: 40, active: true },
      { id: 2, name: 'south', zones: ['s1', 's2'], weight: 35, active: true },
      { id: 3, name: 'west', zones: ['w1'], weight: 25, active: false },
    ],
    counters: [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5],
    tags: { tier: 'gold', cost_centre: 'cc-1042', environment: 'benchmark', note: 'keys keep this order; no HTML-escaped characters appear' },
  };
}

function handleJSON(req, res) {
  const bytes = Buffer.from(JSON.stringify(jsonDocument()));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': bytes.length });
  res.end(bytes);
}

function handleCompute(req, res, query) {
  const n = intParam(query, 'n', 0, MAX_COMPUTE_N, 100_000);
  // Integer arithmetic on doubles is exact here: result < 1e9+7 and
  // i*31 < 3.1e9, so every intermediate stays far below 2^53.
  let result = 0;
  for (let i = 0; i < n; i++) result = (result + i * 31) % 1_000_000_007;
  sendJSON(res, 200, { n, result });
}

async function handleHash(req, res, query) {
  const hash = createHash('sha256');
  if (req.method === 'POST') {
    // Streamed: the body is hashed chunk by chunk, never held whole.
    await readBody(req, (chunk) => hash.update(chunk));
  } else {
    hash.update(query.has('data') ? query.get('data') : DEFAULT_HASH_PAYLOAD);
  }
  sendJSON(res, 200, { algorithm: 'sha256', hex: hash.digest('hex') });
}

// Validates and normalises the thumbnail options, in thumbd's order (w, h,
// fit, gravity, format, dpr, q, animated), so that a query with several bad
// parameters names the same one. Parameters that do not apply (gravity unless
// cover, q for png, animated for formats that cannot animate) are still
// validated but normalised away, so they do not change the ETag. format=auto
// is resolved later (negotiate), against the request's Accept header.
function thumbnailOptions(query) {
  const side = (name) => intParam(query, name, 1, LIMITS.maxSide, null);
  let width = side('w');
  let height = side('h');
  if (width === null && height === null) width = height = DEFAULT_SIDE;
  const fit = choiceParam(query, 'fit', [...FITS], 'cover');
  const gravity = choiceParam(query, 'gravity', Object.keys(GRAVITIES), 'centre');
  const focal = focalParams(query, gravity);
  const format = choiceParam(query, 'format', [...Object.keys(OUTPUTS), 'auto'], 'png');
  const dpr = dprParam(query);
  // An absent side stays absent: it follows the source's aspect ratio.
  const times = (v) => (v === null ? null : Math.min(Math.round(v * dpr), LIMITS.maxSide));
  width = times(width);
  height = times(height);
  // auto without q leaves it to the chosen format's default.
  const quality = intParam(query, 'q', 1, 100, format === 'auto' ? null : OUTPUTS[format].quality);
  const animated = choiceParam(query, 'animated', ['false', 'true'], 'false') === 'true';
  if (animated && format !== 'auto' && !OUTPUTS[format].animated) {
    const animating = Object.keys(OUTPUTS).filter((f) => OUTPUTS[f].animated);
    throw new HttpError(400, 'bad_parameter', `The parameter animated needs an output format that animates: ${animating.join(', ')} or auto.`);
  }
  return {
    width, height, fit, animated,
    gravity: fit === 'cover' ? gravity : 'centre', // contain would place the image by it
    focal: fit === 'cover' ? focal : null,
    format, // auto until negotiated
    alphaFormat: format, // what a source with transparency gets: auto may choose another
    quality: format === 'png' ? null : quality,
  };
}

// gravity=focal's point, fx and fy: plain decimals from 0 to 1 (fractions
// of the displayed source), both given with focal and neither without it,
// as thumbd's params.focal.
function focalParams(query, gravity) {
  const given = ['fx', 'fy'].filter((n) => query.has(n));
  if (gravity !== 'focal') {
    if (given.length) throw new HttpError(400, 'bad_parameter', `Parameter "${given[0]}" is gravity=focal's point: give it with gravity=focal.`);
    return null;
  }
  if (given.length < 2) {
    throw new HttpError(400, 'bad_parameter', 'Parameter "gravity" is focal: give its point as fx and fy, fractions 0 to 1 of the source\'s width and height.');
  }
  const fraction = (name) => {
    const text = query.get(name).toString();
    const f = /^(\d+\.?\d*|\.\d+)$/.test(text) ? Number(text) : NaN;
    if (!(f >= 0 && f <= 1)) throw new HttpError(400, 'bad_parameter', `Parameter "${name}" must be a number from 0 to 1, such as 0.3.`);
    return f;
  };
  return { x: fraction('fx'), y: fraction('fy') };
}

// focalCut is thumbd's coverAndCut: the size the source is scaled to
// cover the box (w x h), and the window's corner, as near centred on the
// focal point as that image allows. dw x dh is the displayed source.
export function focalCut(w, h, dw, dh, focal) {
  const scale = Math.max(w / dw, h / dh);
  const cw = Math.max(Math.ceil(dw * scale), w);
  const ch = Math.max(Math.ceil(dh * scale), h);
  const at = (f, total, n) => Math.min(Math.max(Math.round(f * total - n / 2), 0), total - n);
  return { cw, ch, left: at(focal.x, cw, w), top: at(focal.y, ch, h) };
}

// dpr, the device pixel ratio, as CSS writes it ("2", "1.5"): a plain
// decimal from 1 to 4. thumbd refuses other number syntaxes ("1e0", "0x2"),
// and so does this.
function dprParam(query) {
  if (!query.has('dpr')) return 1;
  const text = query.get('dpr').toString();
  const dpr = /^(\d+\.?\d*|\.\d+)$/.test(text) ? Number(text) : NaN;
  if (!(dpr >= 1 && dpr <= 4)) {
    throw new HttpError(400, 'bad_parameter', 'The parameter dpr must be a number from 1 to 4, such as 2 or 1.5.');
  }
  return dpr;
}

// The elements of an Accept header, as thumbd's imagefmt.parseAccept reads
// them: an empty header accepts everything; an element that does not parse
// (no type/subtype, "*/x", a q that is no number in 0..1) is skipped.
// thumbd's Go ParseFloat would also take a hex float (q=0x1p-1); no client
// sends one, and here it is skipped.
function parseAccept(header) {
  if (header.trim() === '') return [{ type: '*', sub: '*', q: 1 }];
  const ranges = [];
  for (const part of header.split(',')) {
    const semi = part.indexOf(';');
    const media = (semi < 0 ? part : part.slice(0, semi)).trim().toLowerCase();
    const slash = media.indexOf('/');
    const [type, sub] = slash < 0 ? ['', ''] : [media.slice(0, slash), media.slice(slash + 1)];
    if (type === '' || sub === '' || (type === '*' && sub !== '*')) continue;
    let q = 1;
    for (const param of semi < 0 ? [] : part.slice(semi + 1).split(';')) {
      const p = param.trim();
      const eq = p.indexOf('=');
      const [key, value] = eq < 0 ? [p, ''] : [p.slice(0, eq), p.slice(eq + 1).trim()];
      if (key.toLowerCase() !== 'q') continue;
      const f = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(value) ? Number(value) : NaN;
      q = f >= 0 && f <= 1 ? f : -1; // not a qvalue: the element is skipped
    }
    if (q >= 0) ranges.push({ type, sub, q });
  }
  return ranges;
}

// The q-value Accept gives a format: that of the most specific range that
// matches its media type (exact, then type/*, then */*), 0 when none does. A
// listed format counts only an exact match.
function acceptQ(ranges, spec) {
  const [type, sub] = spec.type.split('/');
  let best = 0;
  let specificity = -1;
  for (const r of ranges) {
    let sp;
    if (r.type === type && r.sub === sub) sp = 2;
    else if (r.type === type && r.sub === '*' && !spec.listed) sp = 1;
    else if (r.type === '*' && !spec.listed) sp = 0;
    else continue;
    if (sp > specificity || (sp === specificity && r.q > best)) [best, specificity] = [r.q, sp];
  }
  return best;
}

// negotiateAmong picks, among the output formats keep allows, the best
// for an opaque thumbnail and for one with transparency: the highest q, ties
// to the higher rank; ok is false when Accept allows none of them.
function negotiateAmong(ranges, keep) {
  const choice = { opaque: 'jpeg', alpha: 'png' };
  let bestOpaque = [0, 0];
  let bestAlpha = [0, 0];
  const better = (a, b) => a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
  for (const [format, spec] of Object.entries(OUTPUTS)) {
    if (!keep(spec)) continue;
    const q = acceptQ(ranges, spec);
    if (q <= 0) continue;
    const score = [q, spec.rank];
    if (better(score, bestOpaque)) [bestOpaque, choice.opaque] = [score, format];
    if (spec.alpha && better(score, bestAlpha)) [bestAlpha, choice.alpha] = [score, format];
  }
  // Accept allows no format that keeps alpha: such a thumbnail is flattened.
  if (bestAlpha[0] === 0 && bestOpaque[0] > 0) choice.alpha = choice.opaque;
  return { choice, ok: bestOpaque[0] > 0 };
}

// negotiate is format=auto, thumbd's imagefmt.Negotiate: the formats the
// Accept header allows best. A header that allows nothing gets JPEG (PNG
// with transparency) rather than a 406. With animated, formats that animate
// come first, so an animated source keeps its frames whenever Accept allows
// a format that holds them.
export function negotiate(accept, animated) {
  const ranges = parseAccept(accept);
  if (animated) {
    const { choice, ok } = negotiateAmong(ranges, (spec) => spec.animated);
    if (ok) return choice;
  }
  return negotiateAmong(ranges, () => true).choice;
}

// The ETag's view of the options: what changes the bytes. q counts only
// where an encoder takes one, animated only where a format animates.
function normalised(o) {
  const [opaque, alpha] = [OUTPUTS[o.format], OUTPUTS[o.alphaFormat]];
  return {
    width: o.width, height: o.height, fit: o.fit, gravity: o.gravity, focal: o.focal,
    formats: [o.format, o.alphaFormat],
    quality: opaque.quality === null && alpha.quality === null ? null : o.quality,
    animated: o.animated && (opaque.animated || alpha.animated),
  };
}

// box is the thumbnail's size before fit: an absent side follows the
// source's displayed aspect ratio, bounded by the max side (thumbd's
// resolveBox), what the animation limit is checked on.
function box({ width, height }, meta) {
  const { width: dw, height: dh } = meta.autoOrient ?? meta;
  const bound = (v) => Math.min(Math.max(Math.round(v), 1), LIMITS.maxSide);
  if (width === null) return [bound((height * dw) / dh), height];
  if (height === null) return [width, bound((width * dh) / dw)];
  return [width, height];
}

// Reads the source's header to decide its format from its bytes and check
// the limits before any decoding.
export async function probe(source) {
  if (source.length === 0) throw new HttpError(415, 'unsupported_format', 'The source is empty; send the image bytes.');
  let meta;
  try {
    meta = await sharp(source).metadata();
  } catch (err) {
    // libvips found no loader whose signature matches: not an image at all.
    if (/unsupported image format/.test(err.message)) {
      throw new HttpError(415, 'unsupported_format', `The source is not an image in a supported format (${SOURCE_LIST}).`);
    }
    throw new HttpError(422, 'unprocessable_image', `The source image cannot be read: ${err.message.trim()}.`);
  }
  // sharp names HEIF's two codecs one format: the contract's names are
  // AVIF (AV1) and HEIC (HEVC). sharp's prebuilt libvips has no HEVC
  // decoder, so a HEIC fails above; sharp reads AVIF and TIFF.
  if (meta.format === 'heif') meta.format = meta.compression === 'av1' ? 'avif' : 'heic';
  if (!SOURCE_FORMATS.has(meta.format)) {
    throw new HttpError(415, 'unsupported_format', `The source format ${meta.format} is not supported; send ${SOURCE_LIST}.`);
  }
  if (meta.width * meta.height > LIMITS.maxPixels) {
    throw new HttpError(422, 'too_many_pixels', `The source has ${meta.width}x${meta.height} pixels, more than the limit of ${LIMITS.maxPixels}.`);
  }
  if ((meta.pages ?? 1) > LIMITS.maxFrames) {
    throw new HttpError(422, 'too_many_frames', `The source has ${meta.pages} frames, more than the limit of ${LIMITS.maxFrames}.`);
  }
  return meta;
}

// The sharp pipeline, shared with engine-bench.mjs so the engine figures are
// those of exactly what the twin serves. format is the output format (auto
// resolved), quality its q; animated keeps every frame of an animated source,
// each resized, with its delays and loop count (sharp keeps them unless told
// otherwise), else the first frame is used.
// focal, with gravity=focal, is the point and cut its focalCut (the box
// resolved against the source).
export function render(source, { width, height, fit, gravity, format, quality, animated = false, cut = null }) {
  const opaque = !OUTPUTS[format].alpha;
  let image = sharp(source, {
    autoOrient: true, // apply EXIF orientation (the tag goes with the metadata)
    pages: animated ? -1 : 1, // every frame, or an animation gives its first
    failOn: 'error', // truncated or corrupt pixel data is a 422, not a grey half image
    limitInputPixels: LIMITS.maxPixels,
  });
  if (cut) {
    // sharp has no focal position: scale to cover, then cut the window
    // (extract after resize applies to the resized image, every frame).
    image = image.resize({ width: cut.cw, height: cut.ch, fit: 'fill' }).extract({ left: cut.left, top: cut.top, width, height });
  } else {
    image = image.resize({
      width: width ?? undefined,
      height: height ?? undefined,
      fit,
      // Smart crops would pick another window per frame (sharp refuses them on
      // animations): an animation keeps one, centred, as in thumbd.
      position: animated ? 'centre' : GRAVITIES[gravity],
      // contain pads with transparency where the output keeps alpha, white where it cannot
      background: opaque ? { r: 255, g: 255, b: 255, alpha: 1 } : { r: 0, g: 0, b: 0, alpha: 0 },
    });
  }
  if (opaque) image = image.flatten({ background: { r: 255, g: 255, b: 255 } });
  // 8-bit sRGB whatever the source (16-bit, greyscale, CMYK). sharp does this
  // by default already; saying it keeps the contract visible and survives a
  // change of default. Metadata is stripped because sharp keeps none unless asked.
  image = image.toColourspace('srgb');
  // PNG and AVIF have settings of their own (above); any other format is
  // sharp's encoder of that name at the table's q.
  if (format === 'png') image = image.png(PNG_OPTIONS);
  else if (format === 'avif') image = image.avif({ ...AVIF_OPTIONS, quality, chromaSubsampling: avifChroma(quality) });
  else image = image.toFormat(format, { quality });
  return image.toBuffer();
}

// Finds the source for GET /thumbnail?src= inside THUMBD_SOURCE_DIR.
async function readSource(query) {
  const dir = process.env.THUMBD_SOURCE_DIR;
  if (!dir) throw new HttpError(404, 'sources_disabled', 'GET /thumbnail is off: no source directory is configured (THUMBD_SOURCE_DIR).');
  const name = query.has('src') ? query.get('src').toString() : '';
  const badName = (why) => new HttpError(400, 'bad_source_name', `The source name ${JSON.stringify(name)} ${why}.`);
  if (name === '') throw badName('is empty');
  if (path.isAbsolute(name) || /\.\.|\\|\0/.test(name)) throw badName('must be a relative name without ".." or "\\"');
  let root;
  let file;
  try {
    root = await realpath(dir);
    file = await realpath(path.join(root, name));
  } catch (err) {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw new HttpError(404, 'source_not_found', `No source named ${JSON.stringify(name)}.`);
    throw err;
  }
  // realpath resolved every symlink, so this also catches links that leave the directory.
  const inside = path.relative(root, file);
  if (inside === '' || inside === '..' || inside.startsWith('..' + path.sep) || path.isAbsolute(inside)) {
    throw badName('resolves outside the source directory');
  }
  const info = await stat(file);
  if (!info.isFile()) throw new HttpError(404, 'source_not_found', `No source file named ${JSON.stringify(name)}.`);
  if (info.size > LIMITS.maxBodyBytes) {
    throw new HttpError(422, 'source_too_large', `The source ${JSON.stringify(name)} is larger than the ${LIMITS.maxBodyBytes} bytes allowed.`);
  }
  return readFile(file);
}

// The source of an image route: the POST body, or GET's src file.
async function requestSource(req, query) {
  if (req.method !== 'POST') return readSource(query);
  const chunks = [];
  await readBody(req, (chunk) => chunks.push(chunk));
  return Buffer.concat(chunks);
}

async function handleThumbnail(req, res, query) {
  const options = thumbnailOptions(query);
  if (options.format === 'auto') {
    // Go's Header.Get, which thumbd reads Accept with, sees the first header
    // line only; headersDistinct keeps them apart.
    const choice = negotiate(req.headersDistinct.accept?.[0] ?? '', options.animated);
    [options.format, options.alphaFormat] = [choice.opaque, choice.alpha];
    // Every answer from here on, errors and 304s included, depends on Accept.
    res.setHeader('Vary', 'Accept');
  }
  const source = await requestSource(req, query);
  // Strong ETag: the same source bytes and normalised options always give the
  // same image; for format=auto it follows the formats Accept chose.
  const etag = '"' + createHash('sha256').update(source).update(JSON.stringify(normalised(options))).digest('hex').slice(0, 32) + '"';
  const cacheHeaders = { ETag: etag, 'Cache-Control': 'public, max-age=31536000, immutable' };
  if (req.method === 'GET' && ifNoneMatch(req.headers['if-none-match'], etag)) {
    res.writeHead(304, cacheHeaders);
    res.end();
    return;
  }
  const meta = await probe(source);
  // A source with transparency takes the format that keeps it (auto may
  // have chosen another for opaque ones).
  const format = meta.hasAlpha ? options.alphaFormat : options.format;
  const animated = options.animated && OUTPUTS[format].animated && (meta.pages ?? 1) > 1;
  if (animated) checkAnimation(options, meta);
  let cut = null;
  if (options.gravity === 'focal' && options.fit === 'cover') {
    const [w, h] = box(options, meta);
    const { width: dw, height: dh } = meta.autoOrient ?? meta;
    cut = focalCut(w, h, dw, meta.pages > 1 && animated ? meta.pageHeight ?? dh : dh, options.focal);
    options.width = w;
    options.height = h;
  }
  let image;
  try {
    image = await render(source, { ...options, format, quality: options.quality ?? OUTPUTS[format].quality, animated, cut });
  } catch (err) {
    throw new HttpError(422, 'unprocessable_image', `The source image cannot be processed: ${err.message.split('\n')[0].trim()}.`);
  }
  res.writeHead(200, { 'Content-Type': OUTPUTS[format].type, 'Content-Length': image.length, ...cacheHeaders });
  res.end(image);
}

// The limits on an animated thumbnail, thumbd's: every frame is decoded, so
// the pixel limit holds for all of them; and the frames of the box together
// are bounded (THUMBD_MAX_ANIMATION_PIXELS), which a small source enlarged
// to a large box would otherwise pass.
function checkAnimation(options, meta) {
  const frames = meta.pages;
  const decoded = frames * meta.width * meta.height;
  if (decoded > LIMITS.maxPixels) {
    throw new HttpError(422, 'too_many_pixels',
      `The source's ${frames} frames of ${meta.width}x${meta.height} are ${decoded} pixels to decode, more than the limit of ${LIMITS.maxPixels}.`);
  }
  const [w, h] = box(options, meta);
  if (frames * w * h > LIMITS.maxAnimationPixels) {
    throw new HttpError(422, 'animation_too_large',
      `${frames} frames of ${w}x${h} are ${frames * w * h} pixels, more than the ${LIMITS.maxAnimationPixels} allowed for an animation.`);
  }
}

function ifNoneMatch(header, etag) {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === 'W/' + etag;
  });
}

// handleInfo is /info as far as sharp's metadata() goes: every field of
// thumbd's answer but the ThumbHash, which sharp cannot make (thumbd's is
// the published ThumbHash encoder; the twin answers without the field,
// and the bench report says so). thumbhash is taken, as thumbd takes it,
// and changes nothing here.
async function handleInfo(req, res, query) {
  choiceParam(query, 'thumbhash', ['false', 'true'], 'true');
  const source = await requestSource(req, query);
  const meta = await probe(source);
  const displayed = meta.autoOrient ?? meta;
  const frames = meta.pages ?? 1;
  const info = {
    format: meta.format,
    width: displayed.width,
    height: frames > 1 ? meta.pageHeight ?? displayed.height : displayed.height,
    stored_width: meta.width,
    stored_height: frames > 1 ? meta.pageHeight ?? meta.height : meta.height,
    orientation: meta.orientation ?? 1,
    frames,
  };
  if (frames > 1) {
    info.delays_ms = meta.delay ?? [];
    info.loop = meta.loop ?? 0;
  }
  Object.assign(info, { alpha: Boolean(meta.hasAlpha), space: meta.space, icc: Boolean(meta.icc), bytes: source.length });
  sendJSON(res, 200, info);
}

// The thumbnail options every /thumbnail request may give.
const THUMBNAIL_PARAMS = ['w', 'h', 'fit', 'gravity', 'fx', 'fy', 'format', 'q', 'dpr', 'animated'];

// Each route's handler per method, with the query parameters it knows
// (null: the query is ignored, as POST /hash does).
const ROUTES = {
  '/health': { GET: [[], (req, res) => sendJSON(res, 200, { status: 'ok' })] },
  '/ready': {
    GET: [[], (req, res) => (draining ? sendJSON(res, 503, { status: 'draining' }) : sendJSON(res, 200, { status: 'ready' }))],
  },
  '/json': { GET: [[], handleJSON] },
  '/compute': { GET: [['n'], handleCompute] },
  '/hash': { GET: [['data'], handleHash], POST: [null, handleHash] },
  '/thumbnail': { GET: [[...THUMBNAIL_PARAMS, 'src'], handleThumbnail], POST: [THUMBNAIL_PARAMS, handleThumbnail] },
  '/info': { GET: [['src', 'thumbhash'], handleInfo], POST: [['thumbhash'], handleInfo] },
};

export async function handle(req, res) {
  try {
    const q = req.url.indexOf('?');
    const pathname = q < 0 ? req.url : req.url.slice(0, q);
    const methods = Object.hasOwn(ROUTES, pathname) ? ROUTES[pathname] : null;
    if (!methods) throw new HttpError(404, 'not_found', `There is no route ${pathname}.`);
    if (!Object.hasOwn(methods, req.method)) {
      const allowed = Object.keys(methods).join(', ');
      throw new HttpError(405, 'method_not_allowed', `${pathname} accepts ${allowed}, not ${req.method}.`, { Allow: allowed });
    }
    const [known, handler] = methods[req.method];
    // A route that ignores its query (POST /hash) must not fail on it, even on a bad escape.
    const query = known === null ? new Map() : parseQuery(q < 0 ? '' : req.url.slice(q + 1), known);
    await handler(req, res, query);
  } catch (err) {
    if (res.headersSent) {
      res.destroy(err);
    } else if (err instanceof HttpError) {
      sendJSON(res, err.status, { error: err.message, code: err.code }, err.headers);
    } else {
      console.error(JSON.stringify({ level: 'error', msg: 'request failed', url: req.url, err: String(err?.stack ?? err) }));
      sendJSON(res, 500, { error: 'The server failed to answer this request.', code: 'internal_error' });
    }
  }
}

function main() {
  const port = envInt('PORT', 8080);
  const server = createServer(handle);
  // The Go service keeps idle keep-alive connections for 120 s (THUMBD_IDLE_TIMEOUT);
  // Node's 5 s default would make load runs reconnect more than thumbd's clients do.
  server.keepAliveTimeout = 120_000;
  server.listen(port, () => {
    // One line a launcher can wait for; with PORT=0 it carries the port the OS chose.
    console.log(JSON.stringify({ level: 'info', msg: 'listening', port: server.address().port, sharp: sharp.versions.sharp, libvips: sharp.versions.vips }));
  });
  // On SIGTERM finish the requests in flight, then exit; a client that keeps
  // a connection busy cannot hold the process past 30 s (THUMBD_SHUTDOWN_TIMEOUT's default).
  const stop = () => {
    draining = true;
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 30_000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
