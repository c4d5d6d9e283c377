/*
 * main.c - the lockd binary: the daemon with no seams.
 */
#include "daemon/lockd.h"

int
main(int argc, char **argv)
{
	return lockd_run(argc, argv, NULL);
}
