// The Node.js twin of the thumbd HTTP contract (see README.md): the JIT
// baseline the bench driver compares thumbd with. Plain node:http on purpose,
// so the figures measure Node itself rather than a framework.
import { createHash } from 'node:crypto';
import { readFile, realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';

// thumbd's PNG encoder settings: zlib level 1, every row filter, truecolour (no
// palette quantisation). PNG encoding dominates small thumbnails, so the bench
// only compares like with like while these match the Go service: change them
// here, and only here, when thumbd's change.
export const PNG_OPTIONS = Object.freeze({ compressionLevel: 1, adaptiveFiltering: true, palette: false });

// The same settings names and defaults as the Go service (CONTRIBUTING.md), so
// a bench that sets them gets the same limits from both.
const LIMITS = Object.freeze({
  maxBodyBytes: envInt('THUMBD_MAX_BODY_BYTES', 20 * 1024 * 1024),
  maxPixels: envInt('THUMBD_MAX_PIXELS', 40_000_000),
  maxFrames: envInt('THUMBD_MAX_FRAMES', 256),
  maxSide: envInt('THUMBD_MAX_SIDE', 4096),
});

const SOURCE_FORMATS = new Set(['jpeg', 'png', 'webp', 'gif']);
const CONTENT_TYPES = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };
const GRAVITIES = { centre: 'centre', attention: sharp.strategy.attention, entropy: sharp.strategy.entropy };
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

// Validates and normalises the thumbnail options. Parameters that do not
// apply (gravity unless cover, q for png) are still validated but normalised
// away, so they do not change the ETag.
function thumbnailOptions(query) {
  const side = (name) => intParam(query, name, 1, LIMITS.maxSide, null);
  let width = side('w');
  let height = side('h');
  if (width === null && height === null) width = height = DEFAULT_SIDE;
  const fit = choiceParam(query, 'fit', [...FITS], 'cover');
  const gravity = choiceParam(query, 'gravity', Object.keys(GRAVITIES), 'centre');
  const format = choiceParam(query, 'format', Object.keys(CONTENT_TYPES), 'png');
  const quality = intParam(query, 'q', 1, 100, 80);
  return {
    width, height, fit, format,
    gravity: fit === 'cover' ? gravity : 'centre',
    quality: format === 'png' ? null : quality,
  };
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
      throw new HttpError(415, 'unsupported_format', 'The source is not an image in a supported format (jpeg, png, webp, gif).');
    }
    throw new HttpError(422, 'unprocessable_image', `The source image cannot be read: ${err.message.trim()}.`);
  }
  if (!SOURCE_FORMATS.has(meta.format)) {
    throw new HttpError(415, 'unsupported_format', `The source format ${meta.format} is not supported; send jpeg, png, webp or gif.`);
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
// those of exactly what the twin serves.
export function render(source, { width, height, fit, gravity, format, quality }) {
  const opaque = format === 'jpeg';
  let image = sharp(source, {
    autoOrient: true, // apply EXIF orientation (the tag goes with the metadata)
    pages: 1, // an animation gives its first frame
    failOn: 'error', // truncated or corrupt pixel data is a 422, not a grey half image
    limitInputPixels: LIMITS.maxPixels,
  }).resize({
    width: width ?? undefined,
    height: height ?? undefined,
    fit,
    position: GRAVITIES[gravity],
    // contain pads with transparency where the output keeps alpha, white where it cannot
    background: opaque ? { r: 255, g: 255, b: 255, alpha: 1 } : { r: 0, g: 0, b: 0, alpha: 0 },
  });
  if (opaque) image = image.flatten({ background: { r: 255, g: 255, b: 255 } });
  // 8-bit sRGB whatever the source (16-bit, greyscale, CMYK). sharp does this
  // by default already; saying it keeps the contract visible and survives a
  // change of default. Metadata is stripped because sharp keeps none unless asked.
  image = image.toColourspace('srgb');
  if (format === 'png') image = image.png(PNG_OPTIONS);
  else if (format === 'jpeg') image = image.jpeg({ quality });
  else image = image.webp({ quality });
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

async function handleThumbnail(req, res, query) {
  const options = thumbnailOptions(query);
  let source;
  if (req.method === 'POST') {
    const chunks = [];
    await readBody(req, (chunk) => chunks.push(chunk));
    source = Buffer.concat(chunks);
  } else {
    source = await readSource(query);
  }
  // Strong ETag: the same source bytes and normalised options always give the same image.
  const etag = '"' + createHash('sha256').update(source).update(JSON.stringify(options)).digest('hex').slice(0, 32) + '"';
  const cacheHeaders = { ETag: etag, 'Cache-Control': 'public, max-age=31536000, immutable' };
  if (req.method === 'GET' && ifNoneMatch(req.headers['if-none-match'], etag)) {
    res.writeHead(304, cacheHeaders);
    res.end();
    return;
  }
  await probe(source);
  let image;
  try {
    image = await render(source, options);
  } catch (err) {
    throw new HttpError(422, 'unprocessable_image', `The source image cannot be processed: ${err.message.split('\n')[0].trim()}.`);
  }
  res.writeHead(200, { 'Content-Type': CONTENT_TYPES[options.format], 'Content-Length': image.length, ...cacheHeaders });
  res.end(image);
}

function ifNoneMatch(header, etag) {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === 'W/' + etag;
  });
}

// The thumbnail options every /thumbnail request may give.
const THUMBNAIL_PARAMS = ['w', 'h', 'fit', 'gravity', 'format', 'q'];

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
