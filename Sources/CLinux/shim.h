// Linux interfaces that Swift's Glibc module does not expose.
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/prctl.h>
#include <spawn.h>
#include <signal.h>
