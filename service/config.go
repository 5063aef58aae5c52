package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/buildinfo"
	"github.com/thumbd/thumbd/service/internal/flagenv"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/imgproxyendpoint"
	"github.com/thumbd/thumbd/service/internal/memlimit"
	"github.com/thumbd/thumbd/service/internal/memplan"
	"github.com/thumbd/thumbd/service/internal/origin"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/resultstore"
	"github.com/thumbd/thumbd/service/internal/signing"
	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/tracing"
)

// config is every setting, read once from flags and environment and passed
// down typed. Each flag has an environment twin; a flag wins over its twin.
type config struct {
	Port               int
	AdminPort          adminPort
	MaxConnections     int    // 0 until loadConfig computes its default
	PastConnectionCap  string // "backlog" or "refuse"
	MaxBodyBytes       int64
	MaxPixels          int64
	MaxFrames          int
	MaxAnimationPixels int64
	MaxSide            int
	FilterSpan         int
	Concurrency        int
	Queue              int
	SourceBudget       int64 // 0 until loadConfig computes its default
	MemoryLimit        int64 // 0: read from the cgroup, else MemTotal
	MemoryBudget       int64 // 0 until loadConfig computes its default
	CacheSize          int64 // result cache bound; 0: off
	CacheUploads       bool
	ResultStore        resultstore.Location // off when zero
	ResultStoreTimeout time.Duration
	ResultStoreQueue   int64
	ResultStoreKeys    [][]byte
	ResultStoreNS      string
	ClientHints        bool
	Merge              bool
	// TracePublicEndpoint: a caller's trace is linked, not continued
	// (thumbd exposed to the public rather than behind a traced ingress).
	TracePublicEndpoint bool
	memory              memplan.Plan
	gcPercent           int // the collector's GOGC to set; 0: GOGC was given (the runtime applied it)
	Deadline            time.Duration
	SourceDir           string
	// Source is THUMBD_SOURCE: a directory (then SourceDir holds it) or a
	// bucket (SourceBucket, reached through S3).
	Source       string
	SourceBucket *bucket.Location
	SourceMaxAge time.Duration
	// TTL is THUMBD_TTL and THUMBD_STALE_WHILE_REVALIDATE: the answers'
	// Cache-Control lifetimes.
	TTL            source.TTL
	SourceTimeout  time.Duration
	SourceMaxConns int
	S3Addressing   string
	// S3 is how buckets are reached and signed for: the AWS SDKs'
	// variables, read once at start-up (only when a bucket is configured).
	S3             bucket.Conn
	Origins        []origin.Pattern
	AllowLoopback  bool
	FetchTimeout   time.Duration
	OriginMaxConns int
	SigningKeys    [][]byte
	Presets        params.Presets
	PresetsOnly    bool
	// Watermark is THUMBD_WATERMARK's file; WatermarkBytes its bytes,
	// read and checked at start (loadWatermark).
	Watermark         string
	WatermarkBytes    []byte
	WatermarkRequired bool
	WatermarkOptions  string
	// Fallback is THUMBD_FALLBACK_IMAGE_*: its image read at start.
	Fallback     pipeline.Fallback
	FallbackPath string
	Allowed      params.Allowed
	// Imgproxy is the imgproxy endpoint's settings (THUMBD_IMGPROXY_*).
	Imgproxy          imgproxyendpoint.Settings
	Uploads           bool
	UnsignedUploads   bool
	BenchRoutes       bool
	ShutdownDelay     time.Duration
	ShutdownTimeout   time.Duration
	LogLevel          slog.Level
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	JPEGShrink        thumbjob.JPEGShrink
	AVIFEffort        int
	Inputs            []imagefmt.Format
	Engine            string // engineInProcess or engineCells
	CellJobs          int
	CellMaxRSS        int64
	CellSpares        int
	CellIdleRecycle   time.Duration
	SandboxRequired   bool

	// The connection cap's other rules: one client address's share (0:
	// none), and how slow a request's body or answer may be at the cap.
	MaxConnectionsPerAddress int
	ClientStallTimeout       time.Duration // 0: off
	ClientMinRate            int64         // bytes a second; 0: only the stall

	// Tracing: the sampler and the resource, given to the SDK explicitly.
	Tracing tracing.Config
	// getenv is run's: tracing reads the exporter's OTEL_EXPORTER_OTLP_*
	// variables (the SDK's standard ones, no flag twins) through it, not
	// from the process.
	getenv func(string) string
	// build is the binary's own build (`thumbd version`), for the
	// metrics, the origin client's User-Agent and the traces' resource.
	build buildinfo.Info
}

// Engine modes (THUMBD_ENGINE); the names are fixed.
const (
	engineInProcess = "inprocess" // libvips in the HTTP process
	engineCells     = "cells"     // libvips in sandboxed worker processes
)

// setting is one row of the settings table: the single source of truth for
// names, defaults and meanings. Flags, environment variables, `thumbd
// -help` and `thumbd settings` (docs/configuration.md's table, which a test
// compares; links in meanings are relative to docs/) all come from it.
type setting flagenv.Setting

// settings binds every setting to its field of c. defaultConcurrency is
// computed (GOMAXPROCS reads the cgroup limit).
func settings(c *config, defaultConcurrency int) []flagenv.Setting {
	rows := table([]setting{
		{"PORT", "port", "8080", "", "TCP port (all interfaces)", flagenv.Int(&c.Port)},
		{"THUMBD_ADMIN_PORT", "admin-port", "", "off: `/health`, `/ready` and `/metrics` on `PORT`", "TCP port (all interfaces) of the admin listener: `/health`, `/ready` and `/metrics` on a server of their own, with tight timeouts, so that probes and scrapes never wait behind `PORT`'s connections; `/metrics` then leaves `PORT` (`/health` and `/ready` stay there too); `0`: a free port, logged ([hardening.md](hardening.md#connections-the-cap-and-the-admin-port))", adminPortValue(&c.AdminPort)},
		{"THUMBD_MAX_CONNECTIONS", "max-connections", "0", "derived: `THUMBD_CONCURRENCY` + `THUMBD_QUEUE`", "connections open at once on `PORT`; past it new connections wait, unread, for one to close (held by thumbd, 4096 at most, then in the kernel's backlog), except probes (`GET /health`, `/ready`, and `/metrics` without `THUMBD_ADMIN_PORT`), served at once in a reserve of 8 places of their own; while connections wait, connections without a request in the works for over 1 s (keep-alive ones between requests, new ones still sending their head) are closed first, then those too slow with a body or an answer (`THUMBD_CLIENT_STALL_TIMEOUT`); and answers end their connection (`Connection: close`), so that places pass to the connections in line ([hardening.md](hardening.md#connections-the-cap-and-the-admin-port))", flagenv.Int(&c.MaxConnections)},
		{"THUMBD_PAST_CONNECTION_CAP", "past-connection-cap", "backlog", "", "what a connection past `THUMBD_MAX_CONNECTIONS` meets: `backlog` waits unread until a place frees (held by thumbd, then in the kernel's listen backlog); `refuse` is accepted, sent a 503 `queue_full` with `Retry-After: 1` and closed unread (a client still sending its body may see the connection reset instead) ([hardening.md](hardening.md#connections-the-cap-and-the-admin-port))", flagenv.Enum(&c.PastConnectionCap, "backlog", "refuse")},
		{"THUMBD_MAX_CONNECTIONS_PER_ADDRESS", "max-connections-per-address", "0", "off", "connections one client address (an IPv6 address's /64) may have open on `PORT`; past it a new one is sent a 503 `queue_full` with `Retry-After: 1` and closed, unless one of the address's own has been without a request in the works for over 1 s: that one is closed instead. Behind a load balancer or an ingress that does not keep the client's address, thumbd sees only the proxies' few addresses: leave it off there and cap per client at the proxy ([hardening.md](hardening.md#slow-clients-and-the-per-address-cap))", flagenv.Int(&c.MaxConnectionsPerAddress)},
		{"THUMBD_CLIENT_STALL_TIMEOUT", "client-stall-timeout", "5s", "", "at the connection cap, a connection whose client has sent no byte of its request's body, or taken no byte of the answer, for this long is closed to let a waiting one in (nginx's `client_body_timeout` and `send_timeout`, applied only at the cap); `0s`: off, and `THUMBD_CLIENT_MIN_RATE` with it ([hardening.md](hardening.md#slow-clients-and-the-per-address-cap))", flagenv.Duration(&c.ClientStallTimeout)},
		{"THUMBD_CLIENT_MIN_RATE", "client-min-rate", "8192", "8 KiB/s", "at the connection cap, a client slower than this many bytes a second with its request's body or in taking the answer is closed too: each byte earns 1/rate s of waiting, at most `THUMBD_CLIENT_STALL_TIMEOUT` of it in hand; an answer's progress is seen 16 KiB at a time, so keep rate x stall timeout at 16 KiB or more; `0`: only the stall timeout", flagenv.Int64(&c.ClientMinRate)},
		{"THUMBD_MAX_BODY_BYTES", "max-body-bytes", "20971520", "20 MiB", "largest request body (`POST /thumbnail`, `POST /hash`), source file and origin image; a video read by range (from the source directory, the bucket, or an origin that serves ranges) may be longer: this bounds the bytes a job reads of it (its index and the packets of the frames it decodes)", flagenv.Int64(&c.MaxBodyBytes)},
		{"THUMBD_MAX_PIXELS", "max-pixels", "40000000", "", "largest source width x height (first frame)", flagenv.Int64(&c.MaxPixels)},
		{"THUMBD_MAX_FRAMES", "max-frames", "256", "", "most frames of an animated source", flagenv.Int(&c.MaxFrames)},
		{"THUMBD_MAX_ANIMATION_PIXELS", "max-animation-pixels", "16777216", "256 frames of 256x256", "largest animated thumbnail (`animated=true`): frames x output width x height; 422 above", flagenv.Int64(&c.MaxAnimationPixels)},
		{"THUMBD_MAX_SIDE", "max-side", "4096", "", "largest `w`/`h`", flagenv.Int(&c.MaxSide)},
		{"THUMBD_MAX_FILTER_SPAN", "max-filter-span", strconv.Itoa(params.DefaultFilterSpan), "", "largest `blur` or `sharpen` sigma times the answer's longest side that an unsigned query may choose (a Gaussian's CPU grows with both: `blur=100` on a 4096-pixel answer took 5.3 times the plain thumbnail's); 0: no bound. Signed URLs and presets are not bound", flagenv.Int(&c.FilterSpan)},
		{"THUMBD_CONCURRENCY", "concurrency", "", "CPUs usable (GOMAXPROCS, which reads the cgroup limit)", "thumbnails processed at once, one libvips thread each", flagenv.Computed(&c.Concurrency, defaultConcurrency)},
		{"THUMBD_QUEUE", "queue", "", "1 per MiB of the memory limit, at most 128 per slot (`THUMBD_CONCURRENCY`), 8..1024", "admitted thumbnails that may wait for memory and a slot, their sources within `source-budget`; beyond: 503 at once. The deadline bounds the wait, the budgets the memory: lower it for a service that sheds load early rather than queueing it", flagenv.Computed(&c.Queue, 0)},
		{"THUMBD_MEMORY_LIMIT", "memory-limit", "0", "the container's: cgroup v2 `memory.max` (`memory.high` when lower), cgroup v1 `memory.limit_in_bytes`; else the machine's MemTotal", "bytes of memory the process may use; every memory default below is derived from it ([hardening.md](hardening.md#memory-safe-by-default-under-a-limit))", flagenv.Int64(&c.MemoryLimit)},
		{"THUMBD_MEMORY_BUDGET", "memory-budget", "0", "derived from the memory limit: about 55 % of it", "bytes of libvips memory the thumbnails in the works may take, each admitted with its estimated peak; a job that could never fit: 422 `needs_more_memory`, one that fits later waits", flagenv.Int64(&c.MemoryBudget)},
		{"THUMBD_SOURCE_BUDGET", "source-budget", "0", "derived from the memory limit: about 20 % of it, at most 5 x `THUMBD_MAX_BODY_BYTES` (2 x `THUMBD_CONCURRENCY` + 1 with more slots)", "bytes of sources held at once, being read, waiting or processed; a source that would pass it: 503. Files (`src=`) and bucket objects are also held at most 2 x `THUMBD_CONCURRENCY` + 1 at once (one running and one read ahead a slot, and one more): one past them waits unread, as one past the bytes does, so that sources far below the largest are not read far ahead of the jobs", flagenv.Int64(&c.SourceBudget)},
		{"THUMBD_CACHE_SIZE", "cache-size", "0", "off", "bytes of finished thumbnails kept in memory and served again (their keys and bookkeeping included), taken from the memory limit before the budgets are derived; keyed by source identity (file name, size and modification time; origin URL without `sig`/`exp`; an upload's keyed hash), options and format; origin images per the origin's caching headers ([Result cache](thumbnails.md#merged-requests-and-the-result-cache))", flagenv.Int64(&c.CacheSize)},
		{"THUMBD_CACHE_UPLOADS", "cache-uploads", "false", "", "`true`: thumbnails of `POST /thumbnail` uploads are kept in the result cache too, keyed by the body's keyed hash (with `THUMBD_RESULT_STORE` too, which then needs `THUMBD_RESULT_STORE_KEY`: [storage.md](storage.md#source-identity)) (off: an upload is rarely sent twice, and would evict thumbnails that are asked again). On, **one client can learn whether another uploaded the same image** with the same options: a hit answers at once (2 ms against 192 ms for a photo's miss, in the trust review), so leave it off where what users upload is private to them ([hardening.md](hardening.md#trust-second-review-issue-28))", flagenv.Bool(&c.CacheUploads)},
		{"THUMBD_RESULT_STORE", "result-store", "", "off", "where finished thumbnails are kept for every replica and across restarts (scale-to-zero): `s3://BUCKET[/PREFIX]` (the `AWS_*` settings reach the bucket) or a directory path (a volume shared by pods); looked up after the result cache and before a job, written in the background after a miss, under the rules of `THUMBD_CACHE_SIZE` (origins' caching headers; uploads only with `THUMBD_CACHE_UPLOADS`); a store down or slow never fails a request ([storage.md](storage.md#result-store))", flagenv.Of(&c.ResultStore, resultstore.ParseLocation, resultstore.Location.String)},
		{"THUMBD_RESULT_STORE_TIMEOUT", "result-store-timeout", "200ms", "", "the longest a result store lookup may take before the thumbnail is computed instead; after 5 failures in a row the store is not asked for 5 s", flagenv.Duration(&c.ResultStoreTimeout)},
		{"THUMBD_RESULT_STORE_QUEUE", "result-store-queue", "16777216", "16 MiB", "bytes of thumbnails waiting to be written to the result store, taken from the memory limit when the store is on; a write that would pass it is dropped (`thumbd_result_store_writes_dropped_total`)", flagenv.Int64(&c.ResultStoreQueue)},
		{"THUMBD_RESULT_STORE_KEY", "result-store-key", "", "empty: unsigned objects", "hex keys (at least 16 bytes each), comma-separated, from a Secret: every object thumbd writes to the result store is signed (HMAC-SHA256 of its key, media type, metadata and body) with the first, and only an object signed by one of them is answered, so keys rotate; for a store that other writers share. Without it thumbd answers whatever image a writer of the store put there ([storage.md](storage.md#trust-boundaries)). The first key also keys the hash that identifies uploads, so replicas agree on an upload's identity: needed with `THUMBD_CACHE_UPLOADS=true` ([storage.md](storage.md#source-identity))", flagenv.Secret(&c.ResultStoreKeys, signing.ParseKeys)},
		{"THUMBD_RESULT_STORE_NAMESPACE", "result-store-namespace", "", "the source location", "the name of this deployment's thumbnails in the result store, hashed into every key with the settings that change bytes (libvips' version, `THUMBD_JPEG_SHRINK`, `THUMBD_AVIF_EFFORT`, the limits): deployments with another namespace never answer each other's thumbnails. Empty: the source location (the directory's path; the bucket's endpoint, bucket and prefix). Set the same name on deployments that serve the same sources under different paths, and different names on deployments whose directories share a path but not their files ([storage.md](storage.md#trust-boundaries))", flagenv.Of(&c.ResultStoreNS, resultstore.ParseNamespace, func(s string) string { return s })},
		{"THUMBD_MERGE", "merge", "true", "", "identical thumbnail requests in the works share one job (one fetch, decode, encode and admission place; [Merged requests](thumbnails.md#merged-requests-and-the-result-cache)); `false`: every request runs its own, as before issue 22 (to measure the engine alone)", flagenv.Bool(&c.Merge)},
		{"THUMBD_CLIENT_HINTS", "client-hints", "false", "", "`true`: thumbnail answers carry `Accept-CH: Sec-CH-DPR, Sec-CH-Width`; `Sec-CH-Width` gives `w` when the query gives none of `w`, `h`, `dpr`, `Sec-CH-DPR` gives `dpr` when it gives none, `Save-Data: on` lowers the default quality by 20; `Vary` names them; with `THUMBD_SIGNING_KEYS` set, only for URLs that sign `hints=on` ([Client hints](thumbnails.md#client-hints))", flagenv.Bool(&c.ClientHints)},
		{"THUMBD_DEADLINE", "deadline", "10s", "", "queue wait plus processing per thumbnail; then 504", flagenv.Duration(&c.Deadline)},
		{"THUMBD_SOURCE", "source", "", "empty: `THUMBD_SOURCE_DIR`", "where `GET /thumbnail?src=NAME` reads NAME from: a directory, or a bucket `s3://BUCKET[/PREFIX]` reached with the AWS SDKs' variables (`AWS_ENDPOINT_URL_S3`, `AWS_REGION`, keys, web identity or instance role; [storage.md](storage.md)); set with `THUMBD_SOURCE_DIR`: start-up error", flagenv.String(&c.Source)},
		{"THUMBD_SOURCE_DIR", "source-dir", "", "empty: `GET /thumbnail?src=` off", "directory `GET /thumbnail?src=` reads from (as `THUMBD_SOURCE`, which also takes a bucket)", flagenv.String(&c.SourceDir)},
		{"THUMBD_TTL", "ttl", "24h", "", "the answers' `Cache-Control: max-age` where the source sets none of its own (files, uploads, buckets), and the longest an origin's rules may give; imgproxy's `IMGPROXY_TTL`", flagenv.Duration(&c.TTL.MaxAge)},
		{"THUMBD_FALLBACK_IMAGE_PATH", "fallback-image-path", "", "none: the error", "an image file made, by the request's own options, in place of a source that cannot be read (not found, too large, an origin's or a bucket's error or timeout, too many redirects, an address refused), as imgproxy's `IMGPROXY_FALLBACK_IMAGE_PATH`; never cached by thumbd; read once at start, within `THUMBD_MAX_BODY_BYTES`, `THUMBD_MAX_PIXELS` and `THUMBD_INPUTS`: missing, too large or not such an image is a start-up error ([imgproxy.md](imgproxy.md))", flagenv.String(&c.FallbackPath)},
		{"THUMBD_FALLBACK_IMAGE_HTTP_CODE", "fallback-image-http-code", "200", "", "the fallback image's status: 200, 400 to 599, or 0 for the error's own (imgproxy's `IMGPROXY_FALLBACK_IMAGE_HTTP_CODE`)", flagenv.Int(&c.Fallback.Status)},
		{"THUMBD_FALLBACK_IMAGE_TTL", "fallback-image-ttl", "0s", "`THUMBD_TTL`", "the fallback image's `Cache-Control: max-age` (imgproxy's `IMGPROXY_FALLBACK_IMAGE_TTL`)", flagenv.Duration(&c.Fallback.TTL)},
		{"THUMBD_STALE_WHILE_REVALIDATE", "stale-while-revalidate", "0s", "not said", "`stale-while-revalidate` in the answers' `Cache-Control`: how much longer a CDN that honours it may serve an answer while it asks thumbd again", flagenv.Duration(&c.TTL.StaleWhileRevalidate)},
		{"THUMBD_SOURCE_MAX_AGE", "source-max-age", "0s", "a HEAD per request", "bucket sources: how long an object's identity (ETag, else size and Last-Modified) is trusted without asking the bucket again; a replaced object's old thumbnails may be served from the caches that long", flagenv.Duration(&c.SourceMaxAge)},
		{"THUMBD_SOURCE_TIMEOUT", "source-timeout", "5s", "", "bucket sources: time for one call to the bucket (connect, headers, body), within the deadline; then 504 `bucket_timeout`", flagenv.Duration(&c.SourceTimeout)},
		{"THUMBD_SOURCE_MAX_CONNS", "source-max-conns", "32", "", "bucket sources: connections open at once to the bucket's endpoint (kept alive when idle); more calls wait for one, within their deadline", flagenv.Int(&c.SourceMaxConns)},
		{"THUMBD_S3_ADDRESSING", "s3-addressing", "auto", "", "how buckets are addressed: `auto` (path-style `ENDPOINT/BUCKET/KEY` for a custom `AWS_ENDPOINT_URL_S3`, virtual-hosted for AWS), `path` or `virtual`", flagenv.Enum(&c.S3Addressing, bucket.AddressingAuto, bucket.AddressingPath, bucket.AddressingVirtual)},
		{"THUMBD_ORIGINS", "origins", "", "empty: `GET /thumbnail?url=` off", "origins `GET /thumbnail?url=` may fetch from: comma-separated `host`, `host:port` or `*.domain`, https only unless written `http://host`; no port: the scheme's default", flagenv.Of(&c.Origins, origin.ParsePatterns, origin.FormatPatterns)},
		{"THUMBD_ORIGINS_ALLOW_LOOPBACK", "origins-allow-loopback", "false", "", "let entries that name loopback (loopback literals, `localhost`, `*.localhost`) through the address guard to loopback addresses; other entries, wildcards included, stay refused them (development and tests only; logged as a warning)", flagenv.Bool(&c.AllowLoopback)},
		{"THUMBD_FETCH_TIMEOUT", "fetch-timeout", "5s", "", "time to fetch an origin's image (connect, redirects, body), within the deadline; then 504", flagenv.Duration(&c.FetchTimeout)},
		{"THUMBD_ORIGIN_MAX_CONNS", "origin-max-conns", "32", "", "connections open at once to one origin host (kept alive when idle); more fetches wait for one, within the fetch timeout", flagenv.Int(&c.OriginMaxConns)},
		{"THUMBD_SIGNING_KEYS", "signing-keys", "", "empty: unsigned URLs", "hex keys (at least 16 bytes each), comma-separated: every `GET /thumbnail` then needs a valid `sig=`; the first key signs (`thumbd sign`), all verify, so keys rotate; set but holding no key (blank, an empty Secret): start-up error; prefer the variable (a flag shows in `ps`)", flagenv.Secret(&c.SigningKeys, signing.ParseKeys)},
		{"THUMBD_PRESETS", "presets", "", "none", "named option sets for `preset=NAME`: `NAME:OPTIONS` entries separated by `;`, such as `small:w=128&h=128&fit=cover;hero:w=1200&format=webp`; options given with a preset override its own", flagenv.Of(&c.Presets, params.ParsePresets, params.Presets.String)},
	})
	// imgproxy's endpoint gives its own rows, here in the table.
	rows = append(rows, c.Imgproxy.Rows()...)
	return append(rows, table([]setting{
		{"THUMBD_PRESETS_ONLY", "presets-only", "false", "", "`true`: every thumbnail names a `preset` and gives no other option (a fixed set of variants, without signing)", flagenv.Bool(&c.PresetsOnly)},
		{"THUMBD_WATERMARK", "watermark", "", "none: `wm=` is a 400", "an image file (JPEG, PNG with alpha, WebP, GIF) that `wm=OPACITY[,POSITION[,X,Y[,SCALE]]]` puts on thumbnails, last ([Watermarks](thumbnails.md#watermarks)); read and decoded once at start, within `THUMBD_MAX_BODY_BYTES` and `THUMBD_MAX_PIXELS` (in cells mode at most 90 KiB: each cell gets it in its settings); missing, too large or not an image: start-up error", flagenv.String(&c.Watermark)},
		{"THUMBD_WATERMARK_REQUIRED", "watermark-required", "false", "", "`true`: every thumbnail carries the watermark, placed by `THUMBD_WATERMARK_OPTIONS`, and `wm=` is a 400 (an animated source then gives its first frame)", flagenv.Bool(&c.WatermarkRequired)},
		{"THUMBD_WATERMARK_OPTIONS", "watermark-options", "0.5,soea,16,16,0.25", "", "how a required watermark is placed, as `wm=`: opacity, position (`ce`, `no`, `so`, `ea`, `we`, `noea`, `nowe`, `soea`, `sowe`, `re`), offsets, scale (its width as a fraction of the thumbnail's; 0: its own size)", flagenv.String(&c.WatermarkOptions)},
		{"THUMBD_ALLOWED_WIDTHS", "allowed-widths", "", "any, 1 to `THUMBD_MAX_SIDE`", "the bounded unsigned mode: comma-separated widths, such as Next.js's `deviceSizes` and `imageSizes`; an unsigned thumbnail whose width or height (the answer's: after `dpr`, client hints and `pad`) is chosen by the request and not on the list is a 400 `bad_parameter` naming the nearest allowed; signed URLs and presets' own options are not bound ([hardening.md](hardening.md#bounded-unsigned-mode))", flagenv.Of(&c.Allowed.Sides, params.ParseAllowedSides, params.FormatInts)},
		{"THUMBD_ALLOWED_QUALITIES", "allowed-qualities", "", "any, 1 to 100", "the bounded unsigned mode: comma-separated qualities, such as Next.js's `qualities`; an unsigned thumbnail whose `q` is not on the list is a 400 `bad_parameter` naming the nearest allowed (a format's default quality is not bound)", flagenv.Of(&c.Allowed.Qualities, params.ParseAllowedQualities, params.FormatInts)},
		{"THUMBD_ALLOWED_TRANSFORMS", "allowed-transforms", "", "none: in the bounded mode, no transform unsigned", "the bounded unsigned mode's transforms: `NAME=VALUE` entries separated by `;`, such as `blur=5;pad=8;bg=ffffff`, NAME one of `enlarge`, `rotate`, `flip`, `bg`, `pad` (pixels after `dpr`), `extend`, `crop`, `trim`, `blur`, `sharpen`, `pixelate`, `wm`, and the focal point's `fx` and `fy`; once any of the three lists is set, an unsigned thumbnail that gives one of them with a value not listed is a 400 `bad_parameter` naming it (a value that changes nothing, such as `blur=0`, is taken); signed URLs and presets' own options are not bound; `wm` where `wm=` is refused (no `THUMBD_WATERMARK`, or it is required): start-up error", flagenv.Of(&c.Allowed.Transforms, params.ParseAllowedTransforms, params.TransformValues.String)},
		{"THUMBD_UPLOADS", "uploads", "true", "", "`false`: `POST /thumbnail` and `POST /hash` answer 405 `uploads_disabled` without reading the body (a public deployment that serves only `GET`)", flagenv.Bool(&c.Uploads)},
		{"THUMBD_UNSIGNED_UPLOADS", "unsigned-uploads", "false", "", "with `THUMBD_SIGNING_KEYS` set: `true` serves `POST /thumbnail` without a `sig=` (anyone may then have their own bytes thumbnailed, at any size and format; logged as a warning); `false`: a POST needs a valid `sig=` over its query, as a GET does (`thumbd sign -upload`)", flagenv.Bool(&c.UnsignedUploads)},
		{"THUMBD_BENCH_ROUTES", "bench-routes", "true", "", "`false`: the benchmark contract's routes (`GET /json`, `GET /compute`, `GET /hash`, `POST /hash`) are not served, a 404 `not_found` as any unknown path (a public deployment: `/compute?n=` costs up to about 0.3 s of CPU and is never signed)", flagenv.Bool(&c.BenchRoutes)},
		{"THUMBD_SHUTDOWN_DELAY", "shutdown-delay", "0s", "", "after SIGTERM, keep serving this long with `/ready` at 503 (endpoint removal)", flagenv.Duration(&c.ShutdownDelay)},
		{"THUMBD_SHUTDOWN_TIMEOUT", "shutdown-timeout", "30s", "", "time to finish admitted requests once the listener is closed", flagenv.Duration(&c.ShutdownTimeout)},
		{"THUMBD_LOG_LEVEL", "log-level", "info", "", "`debug`, `info`, `warn`, `error`", flagenv.Level(&c.LogLevel)},
		{"THUMBD_READ_HEADER_TIMEOUT", "read-header-timeout", "5s", "", "time to read request headers", flagenv.Duration(&c.ReadHeaderTimeout)},
		{"THUMBD_READ_TIMEOUT", "read-timeout", "30s", "", "time to read a whole request, body included", flagenv.Duration(&c.ReadTimeout)},
		{"THUMBD_WRITE_TIMEOUT", "write-timeout", "60s", "", "must exceed the deadline", flagenv.Duration(&c.WriteTimeout)},
		{"THUMBD_IDLE_TIMEOUT", "idle-timeout", "120s", "", "keep-alive idle time", flagenv.Duration(&c.IdleTimeout)},
		{"THUMBD_TRACE_PUBLIC_ENDPOINT", "trace-public-endpoint", "false", "", "with tracing on ([Traces](observability.md#traces)): `true` for a thumbd the public reaches directly: a caller's `traceparent` starts a new trace of thumbd's own with a link to the caller's span, so a client cannot choose the trace ID thumbd's spans and its requests to origins carry; `false` (behind an ingress or CDN that starts the trace): the caller's trace is continued. Either way a caller's `tracestate` is never sent on to an origin", flagenv.Bool(&c.TracePublicEndpoint)},
		{"OTEL_TRACES_SAMPLER", "trace-sampler", "parentbased_always_on", "", "with tracing on: which requests are traced, one of `" + strings.Join(tracing.Samplers, "`, `") + "` (the OpenTelemetry names; `parentbased_*` follow the caller's decision when its `traceparent` has one)", flagenv.Enum(&c.Tracing.Sampler, tracing.Samplers...)},
		{"OTEL_TRACES_SAMPLER_ARG", "trace-sampler-arg", "1", "", "the ratio of requests the `traceidratio` samplers trace, 0..1", tracing.Ratio(&c.Tracing.SamplerArg)},
		{"OTEL_SERVICE_NAME", "service-name", "", "`service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `thumbd`", "`service.name` of the spans; wins over the one in `OTEL_RESOURCE_ATTRIBUTES`", tracing.ServiceName(&c.Tracing.ServiceName)},
		{"OTEL_RESOURCE_ATTRIBUTES", "resource-attributes", "", "", "more resource attributes of the spans, `key=value,...` with values percent-encoded (e.g. `deployment.environment=prod`)", tracing.Attributes(&c.Tracing.Attributes)},
		{"THUMBD_JPEG_SHRINK", "jpeg-shrink", "fast", "", "JPEG shrink-on-load: `fast` decodes at the largest 1/2, 1/4, 1/8 scale that covers the box (as sharp and imgproxy); `quality` leaves libvips 2x for its Lanczos reduce: fine regular patterns stay free of moiré, 1.3-1.5x slower on large photos ([engine.md](engine.md))", shrinkValue(&c.JPEGShrink)},
		{"THUMBD_AVIF_EFFORT", "avif-effort", "4", "", "AVIF encoder effort, `0` (fastest) to `9` (smallest files); sharp's default too ([engine.md](engine.md#avif))", flagenv.Int(&c.AVIFEffort)},
		{"THUMBD_INPUTS", "inputs", "", "every input format the build reads", "source formats accepted, comma-separated, of `" + imagefmt.FormatList(imagefmt.Inputs()) + "`; any other is a 415 `unsupported_format` and its libvips loader stays blocked (for example HEIC left out for its patents: [thumbnails.md](thumbnails.md#source-formats)); a video is named by its stream's codec, whatever its container ([thumbnails.md](thumbnails.md#video))", flagenv.Of(&c.Inputs, imagefmt.ParseInputs, imagefmt.FormatList)},
		{"THUMBD_ENGINE", "engine", "inprocess", "", "`inprocess`: libvips in the HTTP process; `cells`: libvips in sandboxed worker processes, one job at a time each, `concurrency` of them (see [Engine modes](#engine-modes))", flagenv.Enum(&c.Engine, engineInProcess, engineCells)},
		{"THUMBD_CELL_JOBS", "cell-jobs", "1000", "", "cells mode: jobs a cell serves before it is replaced", flagenv.Int(&c.CellJobs)},
		{"THUMBD_CELL_MAX_RSS", "cell-max-rss", "268435456", "256 MiB", "cells mode: a cell whose resident memory is over this after a job is replaced", flagenv.Int64(&c.CellMaxRSS)},
		{"THUMBD_CELL_SPARES", "cell-spares", "1", "", "cells mode: cells started ahead beyond `concurrency`, so that a replacement never waits for a process start", flagenv.Int(&c.CellSpares)},
		{"THUMBD_CELL_IDLE_RECYCLE", "cell-idle-recycle", "30s", "", "cells mode: a cell idle this long whose resident memory grew by more than 8 MiB since it started (large images) is replaced, so a burst's memory goes back to the system; `0s`: never", flagenv.Duration(&c.CellIdleRecycle)},
		{"THUMBD_SANDBOX_REQUIRED", "sandbox-required", "false", "", "cells mode: `true`: a cell that cannot apply every sandbox layer (rlimits, capabilities, `no_new_privs`, Landlock, seccomp) is refused, so start-up fails naming the layer and why (a later replacement is refused the same way, logged and retried with back-off); `false`: the layer is logged once as a warning and the cell runs with the others. The images and manifests set `true`", flagenv.Bool(&c.SandboxRequired)},
	})...)
}

// table turns package main's rows into flagenv's.
func table(rows []setting) []flagenv.Setting {
	out := make([]flagenv.Setting, len(rows))
	for i, r := range rows {
		out[i] = flagenv.Setting(r)
	}
	return out
}

// defaultGCPercent is the collector's GOGC when the environment gives
// none. At Go's 100 the heap goal is twice the live heap, about 4 MB
// idle, so that every second 12 MP upload (3.7 MB) set off a cycle, and
// the scavenger handed back pages that the next upload then faulted in
// again. At 200 the 12 MP photo was answered 5 to 12 % faster in 10 of
// 12 paired comparisons (bench/results/2026-12-06-gc). The heap
// stays within its share of the memory limit all the same: the Go limit
// (applyMemoryPlan) makes the collector run sooner as the heap nears it.
const defaultGCPercent = 200

// loadConfig reads args (without the program name) and the environment
// (lookupEnv is os.LookupEnv's shape): each setting starts at its default,
// then its variable, then its flag. Every invalid value is reported at
// once.
func loadConfig(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (config, error) {
	c := config{getenv: func(name string) string { v, _ := lookupEnv(name); return v }}
	explicit, errs, err := flagenv.Read(settings(&c, runtime.GOMAXPROCS(0)), args, lookupEnv, stderr)
	if err != nil {
		return config{}, err
	}
	errs = append(errs, c.Imgproxy.TakePlurals()...)
	// A budget of 0 means "derive it", as its default says.
	explicit["THUMBD_SOURCE_BUDGET"] = explicit["THUMBD_SOURCE_BUDGET"] && c.SourceBudget != 0
	explicit["THUMBD_MEMORY_BUDGET"] = explicit["THUMBD_MEMORY_BUDGET"] && c.MemoryBudget != 0
	explicit["THUMBD_MAX_CONNECTIONS"] = explicit["THUMBD_MAX_CONNECTIONS"] && c.MaxConnections != 0
	limit := memlimit.Limit{Bytes: c.MemoryLimit, Source: "THUMBD_MEMORY_LIMIT"}
	if c.MemoryLimit <= 0 {
		var err error
		if limit, err = memlimit.Read(os.DirFS("/")); err != nil {
			return config{}, fmt.Errorf("memory limit: %w (set THUMBD_MEMORY_LIMIT)", err)
		}
	}
	goMemLimit, _ := lookupEnv("GOMEMLIMIT")
	if _, set := lookupEnv("GOGC"); !set {
		c.gcPercent = defaultGCPercent
	}
	plan, err := planMemory(c, limit, func(env string) bool { return explicit[env] }, goMemLimit)
	if err != nil {
		errs = append(errs, err)
	}
	c.memory, c.Queue, c.SourceBudget, c.MemoryBudget, c.MaxConnections = plan, plan.Queue, plan.Sources, plan.Jobs, plan.Connections
	errs = append(errs, c.sourceStore(c.getenv)...)
	errs = append(errs, c.resultStoreConn(c.getenv)...)
	errs = append(errs, c.storeApart()...)
	// Before validate: presets may ask for the watermark.
	if err := c.loadWatermark(); err != nil {
		errs = append(errs, err)
	}
	if c.FallbackPath != "" {
		var err error
		if c.Fallback.Image, err = pipeline.ReadImage(c.FallbackPath, c.MaxBodyBytes, c.MaxPixels, c.Inputs, "THUMBD_MAX_BODY_BYTES"); err != nil {
			errs = append(errs, fmt.Errorf("THUMBD_FALLBACK_IMAGE_PATH=%q: %v", c.FallbackPath, err))
		}
	}
	errs = append(errs, c.validate()...)
	if c.build, err = buildinfo.Read(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return config{}, fmt.Errorf("invalid configuration:\n%w", err)
	}
	return c, nil
}

// maxCellWatermark bounds THUMBD_WATERMARK in cells mode: a cell gets it
// in its settings variable (base64 in JSON), and Linux holds one variable
// to 128 KiB (MAX_ARG_STRLEN).
const maxCellWatermark = 90 << 10

// loadWatermark reads THUMBD_WATERMARK's file and checks it as a source
// is checked (size, format, header's pixels), so that a wrong setting
// stops the start with a sentence naming it; the engine decodes it once
// it starts.
func (c *config) loadWatermark() error {
	if _, err := params.ParseWatermark(c.WatermarkOptions); err != nil {
		return fmt.Errorf("THUMBD_WATERMARK_OPTIONS=%q: %v", c.WatermarkOptions, err)
	}
	if c.Watermark == "" {
		if c.WatermarkRequired {
			return errors.New("THUMBD_WATERMARK_REQUIRED=true: THUMBD_WATERMARK names no watermark to put on every thumbnail")
		}
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("THUMBD_WATERMARK=%q: "+format, append([]any{c.Watermark}, args...)...)
	}
	limit := c.MaxBodyBytes
	if c.Engine == engineCells {
		limit = min(limit, maxCellWatermark)
	}
	b, err := pipeline.ReadImage(c.Watermark, limit, c.MaxPixels, nil, fmt.Sprintf("THUMBD_MAX_BODY_BYTES; in cells mode %d", maxCellWatermark))
	if err != nil {
		return fail("%v", err)
	}
	c.WatermarkBytes = b
	return nil
}

// sourceStore reads THUMBD_SOURCE: a bucket (and the AWS variables that
// reach it, through getenv), else a directory, which THUMBD_SOURCE_DIR
// names otherwise.
func (c *config) sourceStore(getenv func(string) string) []error {
	switch {
	case c.Source == "":
		return nil
	case c.SourceDir != "":
		return []error{errors.New("THUMBD_SOURCE and THUMBD_SOURCE_DIR are both set: set THUMBD_SOURCE alone (a directory or s3://BUCKET[/PREFIX])")}
	case !strings.HasPrefix(c.Source, "s3://"):
		c.SourceDir = c.Source
		return nil
	}
	loc, err := bucket.ParseURL(c.Source)
	if err == nil {
		c.S3, err = bucket.Reach(loc, nil, getenv, c.S3Addressing)
	}
	if err != nil {
		return []error{fmt.Errorf("THUMBD_SOURCE=%q: %w", c.Source, err)}
	}
	c.SourceBucket = &loc
	return nil
}

// planMemory shares out the limit for c (memplan.Derive).
func planMemory(c config, l memlimit.Limit, explicit func(env string) bool, goMemLimit string) (memplan.Plan, error) {
	return memplan.Derive(c.memorySettings(), l, explicit, goMemLimit)
}

// memorySettings are what the memory plan reads of c.
func (c config) memorySettings() memplan.Settings {
	var storeQueue int64
	if c.ResultStore.On() {
		storeQueue = c.ResultStoreQueue
	}
	return memplan.Settings{CacheSize: c.CacheSize, SourceBudget: c.SourceBudget, MemoryBudget: c.MemoryBudget, StoreQueue: storeQueue,
		MaxBodyBytes: c.MaxBodyBytes, MaxPixels: c.MaxPixels, MaxSide: c.MaxSide, Queue: c.Queue, MaxConnections: c.MaxConnections,
		Cells: c.Engine == engineCells, Concurrency: c.Concurrency, CellSpares: c.CellSpares}
}

// resultStoreConn reads the AWS variables that reach THUMBD_RESULT_STORE's
// bucket, unless THUMBD_SOURCE's bucket read them already (one set of
// variables reaches both).
func (c *config) resultStoreConn(getenv func(string) string) []error {
	if c.ResultStore.Bucket == nil {
		return nil
	}
	var known *bucket.Conn
	if c.SourceBucket != nil {
		known = &c.S3
	}
	conn, err := bucket.Reach(*c.ResultStore.Bucket, known, getenv, c.S3Addressing)
	if err != nil {
		return []error{fmt.Errorf("THUMBD_RESULT_STORE=%q: %w", c.ResultStore, err)}
	}
	c.S3 = conn
	return nil
}

// storeNamespace is the result store's namespace (resultstore.Config):
// the deployment's name, and the settings that change a thumbnail's bytes.
func (c config) storeNamespace(vips string) string {
	ns := c.ResultStoreNS
	if ns == "" {
		switch {
		case c.SourceBucket != nil:
			ns = cmp.Or(c.S3.Endpoint, "aws") + " " + c.SourceBucket.String()
		case c.SourceDir != "":
			ns, _ = filepath.Abs(c.SourceDir)
		}
	}
	return fmt.Sprintf("%s\x00vips %s, jpeg-shrink %s, avif-effort %d, max-side %d, max-pixels %d, max-frames %d, max-animation-pixels %d",
		ns, vips, c.JPEGShrink, c.AVIFEffort, c.MaxSide, c.MaxPixels, c.MaxFrames, c.MaxAnimationPixels)
}

// storeApart refuses a result store that overlaps the source location (the
// same directory or bucket prefix, or one inside the other): whoever can
// upload sources there could write results thumbd answers.
func (c config) storeApart() []error {
	if !c.ResultStore.Overlaps(c.SourceBucket, c.SourceDir) {
		return nil
	}
	return []error{fmt.Errorf("THUMBD_RESULT_STORE=%s overlaps the sources (%s): whoever uploads sources could write what thumbd answers; give the store a location of its own", c.ResultStore, cmp.Or(c.Source, c.SourceDir))}
}

func (c config) validate() []error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Port >= 0 && c.Port <= 65535, "port %d: want 0..65535", c.Port)
	check(!c.AdminPort.On || c.AdminPort.Port == 0 || c.AdminPort.Port != c.Port, "admin port %d: the same as PORT; want another port, or unset for one listener", c.AdminPort.Port)
	check(c.MaxConnections >= 1 && c.MaxConnections <= 1000000, "max connections %d: want 1..1000000, or 0 (derived)", c.MaxConnections)
	check(c.MaxConnectionsPerAddress >= 0 && c.MaxConnectionsPerAddress <= 1000000, "max connections per address %d: want 0 (off) to 1000000", c.MaxConnectionsPerAddress)
	check(c.ClientStallTimeout >= 0, "client stall timeout %s: want 0 (off) or more", c.ClientStallTimeout)
	check(c.ClientMinRate >= 0 && c.ClientMinRate <= 1<<30, "client min rate %d: want 0 (off) to 1073741824 bytes a second", c.ClientMinRate)
	check(c.MaxBodyBytes >= 1, "max body bytes %d: want at least 1", c.MaxBodyBytes)
	check(c.MaxPixels >= 1, "max pixels %d: want at least 1", c.MaxPixels)
	check(c.MaxFrames >= 1, "max frames %d: want at least 1", c.MaxFrames)
	check(c.MaxAnimationPixels >= 1, "max animation pixels %d: want at least 1", c.MaxAnimationPixels)
	check(c.MaxSide >= 1 && c.MaxSide <= 16384, "max side %d: want 1..16384", c.MaxSide)
	check(c.FilterSpan >= 0, "THUMBD_MAX_FILTER_SPAN %d: want 0 (no bound) or more", c.FilterSpan)
	if _, err := c.imgproxyConfig(); err != nil { // checked even when off: set is meant
		errs = append(errs, err)
	}
	check(c.Concurrency >= 1 && c.Concurrency <= 1024, "concurrency %d: want 1..1024", c.Concurrency)
	check(c.Queue >= 0 && c.Queue <= 100000, "queue %d: want 0..100000", c.Queue)
	check(c.MemoryLimit >= 0, "memory limit %d: want 0 (read from the cgroup) or more", c.MemoryLimit)
	check(c.MemoryBudget >= 0, "memory budget %d: want 0 (derived) or more", c.MemoryBudget)
	check(c.CacheSize >= 0, "cache size %d: want 0 (off) or more", c.CacheSize)
	check(c.ResultStoreTimeout > 0 && c.ResultStoreTimeout < c.Deadline, "result store timeout %s: want more than 0 and less than the deadline %s", c.ResultStoreTimeout, c.Deadline)
	check(c.ResultStoreQueue >= 0, "result store queue %d: want 0 (every write dropped) or more", c.ResultStoreQueue)
	// Uploads are stored under their keyed hash, keyed by the store's
	// signing key: without one each process draws its own, so no other
	// replica, nor this one after a restart, would find them.
	check(!c.CacheUploads || !c.ResultStore.On() || len(c.ResultStoreKeys) > 0, "THUMBD_CACHE_UPLOADS=true with THUMBD_RESULT_STORE: set THUMBD_RESULT_STORE_KEY, the same on every replica; an upload's identity is a hash keyed by it, and without it each process has keys of its own, so no replica (nor this one after a restart) would find the thumbnails of uploads it stored")
	check(c.SourceBudget >= c.MaxBodyBytes, "source budget %d: want at least the body limit %d, or the largest source could never be read", c.SourceBudget, c.MaxBodyBytes)
	check(c.Deadline > 0, "deadline %s: want more than 0", c.Deadline)
	check(c.ShutdownDelay >= 0, "shutdown delay %s: want 0 or more", c.ShutdownDelay)
	check(c.ShutdownTimeout > 0, "shutdown timeout %s: want more than 0", c.ShutdownTimeout)
	check(c.ReadHeaderTimeout > 0 && c.ReadTimeout > 0 && c.IdleTimeout > 0, "read-header, read and idle timeouts: want more than 0")
	// The request's deadline bounds a fetch too: a fetch timeout above it
	// is harmless, so it is not refused.
	check(c.FetchTimeout > 0, "fetch timeout %s: want more than 0", c.FetchTimeout)
	check(c.OriginMaxConns >= 1 && c.OriginMaxConns <= 10000, "origin max conns %d: want 1..10000", c.OriginMaxConns)
	check(c.SourceMaxAge >= 0, "source max age %s: want 0 (ask every time) or more", c.SourceMaxAge)
	check(c.TTL.MaxAge >= time.Second, "THUMBD_TTL %s: want a second or more", c.TTL.MaxAge)
	check(c.Fallback.Status == 0 || c.Fallback.Status == 200 || c.Fallback.Status >= 400 && c.Fallback.Status <= 599, "THUMBD_FALLBACK_IMAGE_HTTP_CODE %d: want 200, 400 to 599, or 0 (the error's own)", c.Fallback.Status)
	check(c.Fallback.TTL >= 0, "THUMBD_FALLBACK_IMAGE_TTL %s: want 0 (THUMBD_TTL's) or more", c.Fallback.TTL)
	check(c.TTL.StaleWhileRevalidate >= 0, "THUMBD_STALE_WHILE_REVALIDATE %s: want 0 (not said) or more", c.TTL.StaleWhileRevalidate)
	check(c.SourceTimeout > 0, "source timeout %s: want more than 0", c.SourceTimeout)
	check(c.SourceMaxConns >= 1 && c.SourceMaxConns <= 10000, "source max conns %d: want 1..10000", c.SourceMaxConns)
	for _, o := range c.Origins {
		why := o.Refused(c.AllowLoopback)
		check(why == "", "origin %s: the address guard refuses it (%s); only loopback can be let through, by THUMBD_ORIGINS_ALLOW_LOOPBACK", o, why)
	}
	errs = append(errs, c.rules().CheckPresets()...)
	if n := len(c.Allowed.Sides); n > 0 {
		check(c.Allowed.Sides[n-1] <= c.MaxSide, "THUMBD_ALLOWED_WIDTHS: %d is over the max side %d (THUMBD_MAX_SIDE), so no request could ask for it", c.Allowed.Sides[n-1], c.MaxSide)
	}
	if c.Allowed.Transforms.Lists("wm") {
		check(c.Watermark != "" && !c.WatermarkRequired, "THUMBD_ALLOWED_TRANSFORMS lists wm, which is refused here: no watermark is configured (THUMBD_WATERMARK), or every thumbnail carries it (THUMBD_WATERMARK_REQUIRED)")
	}
	check(!c.PresetsOnly || len(c.Presets) > 0, "presets only: no preset is configured (THUMBD_PRESETS), so no thumbnail could be made")
	check(c.AVIFEffort >= 0 && c.AVIFEffort <= 9, "AVIF effort %d: want 0..9", c.AVIFEffort)
	check(c.CellJobs >= 1, "cell jobs %d: want at least 1", c.CellJobs)
	check(c.CellMaxRSS >= 16<<20, "cell max RSS %d: want at least 16 MiB (a cell with libvips started is about 10 MiB)", c.CellMaxRSS)
	check(c.CellSpares >= 0 && c.CellSpares <= 64, "cell spares %d: want 0..64", c.CellSpares)
	check(c.CellIdleRecycle >= 0, "cell idle recycle %s: want 0 or more", c.CellIdleRecycle)
	check(c.WriteTimeout > c.Deadline, "write timeout %s: want more than the deadline %s, or a late thumbnail could never be written", c.WriteTimeout, c.Deadline)
	return errs
}

// printSettings is `thumbd settings [-json]`: the settings table as the
// docs show it (Markdown), or as JSON for tools.
func printSettings(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("thumbd settings", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON array of {env, flag, default, meaning}, the AWS and OpenTelemetry variables included (flag \"\")")
	tracingVars := fs.Bool("tracing", false, "print the OpenTelemetry variables thumbd's tracing reads (docs/observability.md's Traces table)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rows := settings(&config{}, 0)
	for i := range rows {
		rows[i].Flag = "-" + rows[i].Flag
	}
	otel := flagenv.Variables(tracing.Env)
	if *tracingVars && !*asJSON {
		_, err := io.WriteString(stdout, flagenv.VariablesMarkdown(otel))
		return err
	}
	if *asJSON {
		// Tools (k8s/validate) get every variable thumbd reads: the
		// object storage's AWS variables, then the OpenTelemetry ones.
		rows = append(append(rows, flagenv.Variables(bucket.EnvVars)...), otel...)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	_, err := io.WriteString(stdout, flagenv.Markdown(rows))
	return err
}

// rules are the settings a thumbnail query is read with.
func (c config) rules() params.Rules {
	r := params.Rules{MaxSide: c.MaxSide, Presets: c.Presets, PresetsOnly: c.PresetsOnly, Allowed: c.Allowed, HintsSigned: len(c.SigningKeys) > 0,
		FilterSpan: float64(c.FilterSpan)}
	r.Watermark.Configured = len(c.WatermarkBytes) > 0
	if r.Watermark.Configured {
		sum := sha256.Sum256(c.WatermarkBytes)
		r.Watermark.Mark = hex.EncodeToString(sum[:8])
	}
	if r.Watermark.Configured && c.WatermarkRequired {
		r.Watermark.Required, _ = params.ParseWatermark(c.WatermarkOptions) // checked by loadWatermark
	}
	return r
}

// adminPort is THUMBD_ADMIN_PORT: off, or a port (0: any free one).
type adminPort struct {
	On   bool
	Port int
}

func adminPortValue(p *adminPort) flagenv.Value[adminPort] {
	return flagenv.Of(p, func(s string) (adminPort, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 65535 {
			return adminPort{}, errors.New("want a port 0..65535, or unset for none")
		}
		return adminPort{On: true, Port: n}, nil
	}, func(a adminPort) string {
		if !a.On {
			return ""
		}
		return strconv.Itoa(a.Port)
	})
}

func shrinkValue(p *thumbjob.JPEGShrink) flagenv.Value[thumbjob.JPEGShrink] {
	return flagenv.Of(p, func(s string) (thumbjob.JPEGShrink, error) {
		switch v := thumbjob.JPEGShrink(s); v {
		case thumbjob.JPEGShrinkFast, thumbjob.JPEGShrinkQuality:
			return v, nil
		}
		return "", fmt.Errorf("JPEG shrink %q: want fast or quality", s)
	}, func(v thumbjob.JPEGShrink) string { return string(v) })
}
