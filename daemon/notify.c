/*
 * notify.c - sd_notify and sd_listen_fds: telling systemd lockd's state,
 * and taking the listening sockets it passed.  libsystemd speaks both
 * protocols; lockd always links it (one path, the one the tests run).
 */
#include "daemon/notify.h"

#include <systemd/sd-daemon.h>

int
notify_send(const char *state)
{
	return sd_notify(0, state);
}

int
notify_listen_fds(void)
{
	int n = sd_listen_fds(1);

	return n < 0 ? 0 : n;
}
