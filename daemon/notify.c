/*
 * notify.c - sd_notify and sd_listen_fds, or the protocol they speak:
 * one datagram of newline-separated KEY=VALUE lines to the AF_UNIX socket
 * named by $NOTIFY_SOCKET ('@' stands for the abstract namespace); and
 * $LISTEN_PID/$LISTEN_FDS naming the sockets passed from fd 3 on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/notify.h"

#ifdef LOCKD_WITH_SYSTEMD
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

#else

int
notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un addr;
	socklen_t len;
	size_t plen;
	ssize_t n;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@'))
		return 0;
	plen = strlen(path);
	if (plen >= sizeof(addr.sun_path))
		return -EINVAL;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, plen);
	if (path[0] == '@')
		addr.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
	    (struct sockaddr *)&addr, len);
	close(fd);
	return n < 0 ? -errno : 1;
}

int
notify_listen_fds(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char *end;
	long p, n, i;

	if (pid == NULL || fds == NULL)
		return 0;
	p = strtol(pid, &end, 10);
	if (*end != '\0' || p != (long)getpid())
		return 0;
	n = strtol(fds, &end, 10);
	if (*end != '\0' || n <= 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		fcntl(3 + (int)i, F_SETFD, FD_CLOEXEC);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return (int)n;
}

#endif
