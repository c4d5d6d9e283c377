/*
 * notify.h - telling systemd about lockd's state (Type=notify) and taking
 * listening sockets from it (socket activation), through libsystemd;
 * without systemd around, both do nothing.
 */
#ifndef LOCKD_NOTIFY_H
#define LOCKD_NOTIFY_H

/* Sends state lines ("READY=1\nSTATUS=...") to $NOTIFY_SOCKET, if set.
 * Returns 1 when sent, 0 when there is no socket, negative on error. */
int notify_send(const char *state);

/* The number of listening sockets passed by systemd (fds from 3 on), or 0
 * when lockd was not socket-activated.  Clears the LISTEN_* variables. */
int notify_listen_fds(void);

#endif
