// Package glibcmalloc holds how thumbd tunes glibc's malloc, which holds
// libvips' and the decoders' pixels, and reads whether the environment
// already tunes it (an operator's setting wins).
//
// Why: on this kind of machine (a VM where every page fault traps to the
// hypervisor) a large source's time went to faulting in fresh memory. With
// glibc's defaults a buffer of 32 MiB or more (a 12 MP image decoded whole:
// libjxl's output, libheif's colour conversion) is mapped for the job and
// unmapped after it, so every job faults it in again, 4 KiB at a time; and
// the heap's top is handed back once it passes a threshold that follows the
// last freed block, so the region buffers of the next job fault as well.
// Measured one request at a time on a 12 MP TIFF (LZW) to a 256x256 WebP,
// the static build: 3,300 page faults and 243 ms a request with the
// defaults, against imgproxy's 1,060 faults and 205 ms on the same libvips
// (bench/results/2026-12-06-malloc).
package glibcmalloc

import (
	"fmt"
	"strings"
)

const (
	// MmapThreshold is the size from which malloc maps a block of its own
	// rather than carving it from an arena: glibc's ceiling for it
	// (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit), fixed from the start rather
	// than moved to the size of the last mapped block freed.
	MmapThreshold = 32 << 20
	// TrimThreshold is how much free memory an arena's top may keep before
	// malloc hands it back: twice MmapThreshold, the most glibc's own
	// adjustment reaches. The rest of the time it followed the last freed
	// block, a few MiB, so the next job faulted its region buffers in again.
	// What an arena keeps goes back when thumbd is idle (malloc_trim, in
	// process) or after a large job (cells).
	TrimThreshold = 64 << 20
)

// Tunables is GLIBC_TUNABLES as the images set it and as thumbd gives its
// cells: the two thresholds, and hugetlb=1, with which malloc asks the
// kernel for transparent huge pages (madvise) on the blocks it maps, which
// are then faulted in 2 MiB at a time (a 12 MP JPEG XL: 2,340 faults a
// request instead of 11,800, bench/results/2026-12-06-malloc). glibc reads it only
// at a process's start, so a binary run by hand has the thresholds (set
// with mallopt when libvips starts) but not the huge pages unless it is
// given this variable (docs/configuration.md, "The C heap").
func Tunables() string {
	return fmt.Sprintf("glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=%d:glibc.malloc.trim_threshold=%d",
		MmapThreshold, TrimThreshold)
}

// Given reports whether the environment (lookup: os.LookupEnv) sets
// malloc's parameter name (as GLIBC_TUNABLES calls it after
// "glibc.malloc.", for example "mmap_threshold"), in GLIBC_TUNABLES or by
// its older MALLOC_..._ variable (MALLOC_MMAP_THRESHOLD_).
func Given(lookup func(string) (string, bool), name string) bool {
	if _, ok := lookup("MALLOC_" + strings.ToUpper(name) + "_"); ok {
		return true
	}
	tunables, _ := lookup("GLIBC_TUNABLES")
	for _, kv := range strings.Split(tunables, ":") {
		if k, _, _ := strings.Cut(kv, "="); k == "glibc.malloc."+name {
			return true
		}
	}
	return false
}
