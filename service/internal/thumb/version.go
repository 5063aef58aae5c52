package thumb

import "fmt"

// KnownCrash names a libvips defect that can crash or hang thumbd under
// load, for the libvips version v ("8.14.1"); it returns "" when none is
// known. thumbd logs it at start-up rather than refusing to run: Debian
// bookworm's libvips-dev is 8.14.1 and stays useful for development.
//
// libvips 8.14.1 made idle worker threads leave after 15 s; until 8.15.4 an
// idle worker that timed out could be handed a task in the instant before it
// unlinked and freed itself, and vips_threadset_run() then wrote the task
// into freed memory (ChangeLog 8.15.4: "threadset: fix a race condition
// during thread exit"). The soak saw it as two crashes in 24 runs of
// 500 clients x 60 s on 8.14.1; scripts/threadset-race.sh reproduces it
// (docs/hardening.md, "The crash").
func KnownCrash(v string) string {
	at, ok := versionNumber(v)
	if ok && at >= 8_014_001 && at < 8_015_004 {
		return fmt.Sprintf("libvips %s has a worker-thread race that can crash the process under load (fixed in 8.15.4); the thumbd images ship libvips 8.16.1", v)
	}
	return ""
}

// versionNumber is a libvips version ("8.14.1") as one comparable number
// (8_014_001); ok is false when v is not MAJOR.MINOR.PATCH.
func versionNumber(v string) (n int, ok bool) {
	var major, minor, patch int
	if k, _ := fmt.Sscanf(v, "%d.%d.%d", &major, &minor, &patch); k != 3 {
		return 0, false
	}
	return major*1_000_000 + minor*1_000 + patch, true
}
