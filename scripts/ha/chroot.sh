#!/usr/bin/env bash
# Runs a command in a Debian root made by install-root.sh:
#
#   chroot.sh ROOT COMMAND [ARGS...]
#
# In a private mount namespace (unshare -m), so the bind mounts (/proc, /dev,
# /sys, and /tmp, where the test's work directory and sockets live) vanish
# with the command and never show on the host. exec all the way down: the
# pid the caller gets is the command's (signals reach it, ss shows it).
set -euo pipefail
root=${1:?usage: chroot.sh ROOT COMMAND...}
shift
[[ -d $root/usr ]] || { echo "chroot.sh: no Debian root at $root" >&2; exit 2; }
exec unshare --mount --propagation private -- /bin/bash -c '
  set -e
  root=$1; shift
  mount -t proc proc "$root/proc"
  for d in dev sys tmp; do mount --rbind "/$d" "$root/$d"; done
  exec chroot "$root" "$@"
' chroot.sh "$root" "$@"
