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
	"github.com/maypok86/otter/v2"
	"github.com/maypok86/otter/v2/stats"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/source"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Entry is one finished answer: what a fresh job would have written.
type Entry struct {
	Image thumbjob.Image
	ETag  string
	// Fresh is how long the entry may be served without asking its
	// source, and the validators to ask it with.
	Fresh source.Freshness
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
			return uint32(min(len(e.Image.Bytes)+len(key)+entryOverhead, 1<<32-1))
		},
		StatsRecorder: counter,
	})}
}

// Get is key's entry, whatever its freshness (the caller revalidates a
// stale one).
func (c *Cache) Get(key string) (*Entry, bool) {
	if c == nil {
		return nil, false
	}
	return c.c.GetIfPresent(key)
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

// Collector is the cache's Prometheus metrics (zeros when it is off, so
// that the series exist either way). Hits and misses are counted by the
// service, which knows whether an entry served.
func (c *Cache) Collector() prometheus.Collector {
	return &collector{c: c,
		bytes:     prometheus.NewDesc("thumbd_cache_bytes", "Bytes the result cache holds now (thumbnails, keys and bookkeeping), within thumbd_cache_max_bytes.", nil, nil),
		max:       prometheus.NewDesc("thumbd_cache_max_bytes", "The result cache's bound (THUMBD_CACHE_SIZE; 0: off).", nil, nil),
		entries:   prometheus.NewDesc("thumbd_cache_entries", "Thumbnails the result cache holds now.", nil, nil),
		evictions: prometheus.NewDesc("thumbd_cache_evictions_total", "Thumbnails the result cache evicted to stay within its bound.", nil, nil),
	}
}

type collector struct {
	c                              *Cache
	bytes, max, entries, evictions *prometheus.Desc
}

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- k.bytes
	ch <- k.max
	ch <- k.entries
	ch <- k.evictions
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	var size, max, entries, evictions float64
	if c := k.c; c != nil {
		size, max, entries = float64(c.c.WeightedSize()), float64(c.max), float64(c.c.EstimatedSize())
		evictions = float64(c.stats.Snapshot().Evictions)
	}
	ch <- prometheus.MustNewConstMetric(k.bytes, prometheus.GaugeValue, size)
	ch <- prometheus.MustNewConstMetric(k.max, prometheus.GaugeValue, max)
	ch <- prometheus.MustNewConstMetric(k.entries, prometheus.GaugeValue, entries)
	ch <- prometheus.MustNewConstMetric(k.evictions, prometheus.CounterValue, evictions)
}
