//go:build thumbd_static

package thumb

// The static build only (scripts/build.sh static sets the tag): GObject's
// gboxed.c registers the boxed types of GLib's regular expressions, and so
// references four of their functions; in a static link that one reference
// pulls GLib's gregex.o and with it all of PCRE2, 0.65 MB of the binary
// (docs/coldstart.md), for an API that neither libvips nor thumbd calls.
// These stand-ins answer the reference instead. Nothing can reach them: no
// GRegex or GMatchInfo exists without g_regex_new or g_regex_match, which are
// then not linked; should anything link gregex.o again, its own definitions
// of these four collide with these and the link fails. Never in a dynamic
// build: there these would interpose on the shared GLib's own.

/*
#include <stdlib.h>

void *g_regex_ref(void *regex) { abort(); }
void g_regex_unref(void *regex) { abort(); }
void *g_match_info_ref(void *info) { abort(); }
void g_match_info_unref(void *info) { abort(); }
*/
import "C"
