// Package results is thumbd's bounded in-memory cache of finished
// thumbnails, keyed like merged requests (source identity, normalised
// options, chosen format), weighed in bytes.
//
// It uses github.com/maypok86/otter/v2 (docs/adr/0002-result-cache.md):
// a weigher bounds the cache by bytes, not entries; its W-TinyLFU
// admission keeps one-off thumbnails from evicting popular ones; eviction
// is synchronous with the write that passes the bound, so the bound holds
// at every moment (ristretto/v2 admits and evicts through buffered,
// lossy channels: a Set may be dropped and the cost is settled later).
package results

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/maypok86/otter/v2/stats"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/source"
)

// Entry is one finished answer: what a fresh job would have written (a
// thumbnail, or /info's JSON). An entry without a Body is a 304: the
// request's If-None-Match matched, nothing is kept.
type Entry struct {
	Body []byte
	Type string // Body's media type
	ETag string
	// Fresh is how long the entry may be served without asking its
	// source, and the validators to ask it with.
	Fresh source.Freshness
	// hold gives back the budget Body was read on (a result store hit,
	// read on the source budget); nil: none. Shared by copies.
	hold *hold
}

type hold struct {
	once    sync.Once
	release func()
}

// Held is e, whose Body was read on a budget that release gives back:
// the answer's writer calls Release once it is written.
func Held(e *Entry, release func()) *Entry {
	if release != nil {
		e.hold = &hold{release: release}
	}
	return e
}

// Release gives back the budget e's Body was read on, once; for any other
// entry (nil included) it does nothing. The bytes stay readable: a cache
// may keep them, within its own bound.
func (e *Entry) Release() {
	if e != nil && e.hold != nil {
		e.hold.once.Do(e.hold.release)
	}
}

// entryOverhead is an entry's bookkeeping beside its bytes and key
// (otter's node, the Entry, the image header): counted in its weight so
// that a stream of tiny thumbnails stays within the bound too.
const entryOverhead = 256

// Cache is the result cache; a nil *Cache is off (every Get misses, Put
// keeps nothing).
type Cache struct {
	c     *otter.Cache[string, *Entry]
	stats *stats.Counter
	max   int64
	// hits, misses and revalidations are counted here, beside the
	// evictions, so that every thumbd_cache_* series has one owner.
	hits, misses, revalidations atomic.Uint64
}

// New returns a cache of at most maxBytes (entries' bytes, keys and
// overhead), nil when maxBytes is 0.
func New(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		return nil
	}
	counter := stats.NewCounter()
	return &Cache{max: maxBytes, stats: counter, c: otter.Must(&otter.Options[string, *Entry]{
		MaximumWeight: uint64(maxBytes),
		Weigher: func(key string, e *Entry) uint32 {
			return uint32(min(len(e.Body)+len(key)+entryOverhead, 1<<32-1))
		},
		StatsRecorder: counter,
	})}
}

// Lookup is key's entry, whatever its freshness (the caller revalidates a
// stale one), and whether it is fresh at now: counted as a hit when it
// is, else as a miss.
func (c *Cache) Lookup(key string, now time.Time) (e *Entry, fresh bool) {
	if c == nil {
		return nil, false
	}
	e, ok := c.c.GetIfPresent(key)
	if ok && e.Fresh.Fresh(now) {
		c.hits.Add(1)
		return e, true
	}
	c.misses.Add(1)
	return e, false
}

// Revalidated counts a stale entry kept because its source answered that
// it had not changed.
func (c *Cache) Revalidated() {
	if c != nil {
		c.revalidations.Add(1)
	}
}

// Put keeps e under key when its freshness allows it.
func (c *Cache) Put(key string, e *Entry) {
	if c == nil {
		return
	}
	if !e.Fresh.Store {
		c.c.Invalidate(key)
		return
	}
	c.c.Set(key, e)
}

// Bytes is the cache's weight as otter counts it now (its WeightedSize):
// approximate, since writes and evictions otter has buffered but not yet
// applied may be missing from it. It settles nothing itself: a caller that
// needs the settled figure (a test, after its writes) calls CleanUp first.
func (c *Cache) Bytes() int64 {
	if c == nil {
		return 0
	}
	return int64(c.c.WeightedSize())
}

// CleanUp runs the cache's pending maintenance (evictions) now.
func (c *Cache) CleanUp() {
	if c != nil {
		c.c.CleanUp()
	}
}

// Collector is the cache's Prometheus metrics, every thumbd_cache_* series
// (zeros when it is off, so that the series exist either way).
func (c *Cache) Collector() prometheus.Collector {
	return &collector{c: c,
		hits:      prometheus.NewDesc("thumbd_cache_hits_total", "Thumbnail and /info requests answered from the result cache without asking the source.", nil, nil),
		misses:    prometheus.NewDesc("thumbd_cache_misses_total", "Thumbnail and /info requests the result cache (when on) had no fresh answer for.", nil, nil),
		revalid:   prometheus.NewDesc("thumbd_cache_revalidations_total", "Stale cached answers kept because their origin answered 304 Not Modified.", nil, nil),
		bytes:     prometheus.NewDesc("thumbd_cache_bytes", "Bytes the result cache holds now (thumbnails, keys and bookkeeping), within thumbd_cache_max_bytes.", nil, nil),
		max:       prometheus.NewDesc("thumbd_cache_max_bytes", "The result cache's bound (THUMBD_CACHE_SIZE; 0: off).", nil, nil),
		entries:   prometheus.NewDesc("thumbd_cache_entries", "Thumbnails the result cache holds now.", nil, nil),
		evictions: prometheus.NewDesc("thumbd_cache_evictions_total", "Thumbnails the result cache evicted to stay within its bound.", nil, nil),
	}
}

type collector struct {
	c                                                     *Cache
	bytes, max, entries, evictions, hits, misses, revalid *prometheus.Desc
}

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{k.bytes, k.max, k.entries, k.evictions, k.hits, k.misses, k.revalid} {
		ch <- d
	}
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	var size, max, entries, evictions, hits, misses, revalid float64
	if c := k.c; c != nil {
		size, max, entries = float64(c.c.WeightedSize()), float64(c.max), float64(c.c.EstimatedSize())
		evictions = float64(c.stats.Snapshot().Evictions)
		hits, misses, revalid = float64(c.hits.Load()), float64(c.misses.Load()), float64(c.revalidations.Load())
	}
	ch <- prometheus.MustNewConstMetric(k.hits, prometheus.CounterValue, hits)
	ch <- prometheus.MustNewConstMetric(k.misses, prometheus.CounterValue, misses)
	ch <- prometheus.MustNewConstMetric(k.revalid, prometheus.CounterValue, revalid)
	ch <- prometheus.MustNewConstMetric(k.bytes, prometheus.GaugeValue, size)
	ch <- prometheus.MustNewConstMetric(k.max, prometheus.GaugeValue, max)
	ch <- prometheus.MustNewConstMetric(k.entries, prometheus.GaugeValue, entries)
	ch <- prometheus.MustNewConstMetric(k.evictions, prometheus.CounterValue, evictions)
}
