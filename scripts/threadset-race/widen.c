/* LD_PRELOAD shim for scripts/threadset-race.sh: it widens races by
 * stalling a thread where the kernel could preempt it anyway, and changes
 * nothing else.
 *   WIDEN_US (default 2000): after g_cond_wait_until() times out, the
 *     thread stalls this long, with the mutex released, before it goes on.
 *   WIDEN_UP_US (default 0): vips_semaphore_up() stalls this long before it
 *     signals, as a caller preempted between handing out a task and waking
 *     its worker would.
 * Both calls cross a PLT in libvips.so, so a preload reaches them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
#include <glib.h>

gboolean
g_cond_wait_until(GCond *cond, GMutex *mutex, gint64 end_time)
{
	static gboolean (*real)(GCond *, GMutex *, gint64);
	static int us = -1;
	gboolean r;

	if (!real)
		real = (gboolean (*)(GCond *, GMutex *, gint64)) dlsym(RTLD_NEXT, "g_cond_wait_until");
	if (us < 0)
		us = getenv("WIDEN_US") ? atoi(getenv("WIDEN_US")) : 2000;
	r = real(cond, mutex, end_time);
	if (!r) {
		g_mutex_unlock(mutex);
		usleep(us);
		g_mutex_lock(mutex);
	}
	return r;
}

typedef struct _VipsSemaphore VipsSemaphore;

int
vips_semaphore_up(VipsSemaphore *s)
{
	static int (*real)(VipsSemaphore *);
	static int us = -1;

	if (!real)
		real = (int (*)(VipsSemaphore *)) dlsym(RTLD_NEXT, "vips_semaphore_up");
	if (us < 0)
		us = getenv("WIDEN_UP_US") ? atoi(getenv("WIDEN_UP_US")) : 0;
	if (us > 0)
		usleep(us);
	return real(s);
}
