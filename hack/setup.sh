#!/usr/bin/env bash
# Installs, idempotently and as root, the Debian packages that podnet's tests
# and local cluster use. Nothing else on the machine is assumed.
set -euo pipefail
pkgs=(etcd-server containerd runc containernetworking-plugins busybox-static iproute2 iptables conntrack socat kmod strace
  qemu-system-x86 cpio xz-utils conmon skopeo gcc libc6-dev ethtool)  # qemu, cpio, xz: hack/kernelvm; strace: the attach bench counts netlink requests;
  # conmon: CRI-O runs it; skopeo: puts images into a CRI-O node's storage; gcc, libc6-dev: CRI-O's pinns (hack/crio);
  # ethtool: the offload tests read a link's features with it, apart from podnet's own code
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps Debian from starting the packaged etcd/containerd
  # services: the local cluster starts its own, with its own state folders.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
