/* Hammer libvips' threadset at the moment its idle workers time out.
 *
 * libvips 8.14.1 made an idle worker leave after 15 s: it wakes from its
 * timed wait, then takes the set's lock to unlink and free itself. Until
 * 8.15.4 ("threadset: fix a race condition during thread exit"),
 * vips_threadset_run() could take that same worker off the free list in
 * between, then write the task into the freed worker and up its destroyed
 * semaphore: a lost task (a hang) or a use after free (a crash). libvips
 * 8.16.1's set hands tasks over a GAsyncQueue, with no per-worker semaphore.
 *
 * Each cycle: a burst of pipelines (from CALLERS threads, as thumbd's
 * request goroutines call libvips) grows the set and leaves every worker idle
 * at about the same time; then the next burst starts near the moment those
 * workers time out, offset by an amount swept from cycle to cycle.
 *
 * usage: repro CYCLES PHASE_US
 */
#include <stdio.h>
#include <stdlib.h>
#include <vips/vips.h>

#define CALLERS 16
#define BURST_US 10000

static gint64 burst_until;

static void *
caller(void *arg)
{
	(void) arg;
	while (g_get_monotonic_time() < burst_until) {
		VipsImage *b;
		double avg;

		if (vips_black(&b, 64, 64, NULL))
			vips_error_exit(NULL);
		if (vips_avg(b, &avg, NULL))
			vips_error_exit(NULL);
		g_object_unref(b);
	}
	vips_thread_shutdown();
	return NULL;
}

static void
burst(void)
{
	GThread *t[CALLERS];

	burst_until = g_get_monotonic_time() + BURST_US;
	for (int i = 0; i < CALLERS; i++)
		t[i] = g_thread_new("caller", caller, NULL);
	for (int i = 0; i < CALLERS; i++)
		g_thread_join(t[i]);
}

int
main(int argc, char **argv)
{
	int cycles = argc > 1 ? atoi(argv[1]) : 20;
	int phase = argc > 2 ? atoi(argv[2]) : 0;

	if (VIPS_INIT(argv[0]))
		vips_error_exit(NULL);
	vips_cache_set_max(0);
	vips_concurrency_set(4);
	printf("libvips %s, %d cycles\n", vips_version_string(), cycles);
	fflush(stdout);

	burst();
	for (int c = 0; c < cycles; c++) {
		/* Workers went idle as the burst ended and time out 15 s later:
		 * sweep the next burst's start from 2 ms before to 1 ms after.
		 */
		gint64 offset = -2000 + (phase + c * 137) % 3000;
		g_usleep(15 * G_USEC_PER_SEC + offset);
		burst();
		printf("cycle %d ok (offset %+.1f ms)\n", c, offset / 1000.0);
		fflush(stdout);
	}
	vips_shutdown();
	return 0;
}
