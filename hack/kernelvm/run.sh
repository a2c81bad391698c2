#!/usr/bin/env bash
# Runs the root tests that need only netlink and network namespaces on
# Debian's stock kernel, in a qemu VM (TCG: no KVM is needed), so that every
# link kind is proven on a full kernel even where the host kernel lacks
# 8021q, ipvlan, bridge VLAN filtering, dummy or vrf. Called by `make test`
# (hack/test.sh) and `make test-kernel`; needs root and hack/setup.sh's
# packages (qemu-system-x86, busybox-static, iproute2, cpio, kmod, xz-utils).
#
# It fails if any test fails or skips in the VM, if a module does not load,
# or if the VM does not finish within KERNELVM_TIMEOUT seconds; it ends with
#   kernel 6.1.0-NN-amd64: P passed, F failed, S skipped
# Cached under _output/kernelvm, per kernel: the kernel package and the
# initramfs part made of busybox, ip and the modules. The test binaries are
# built and packed on every run. Modules that the package ships compressed
# (.ko.xz, as Debian's 6.12 kernels do) are unpacked into the initramfs as
# plain .ko: busybox's insmod reads the file as it is. Modules the kernel
# has built in are skipped.
#
# Environment:
#   KERNELVM_KERNEL     the kernel package to boot (default: the one that
#                       linux-image-amd64 depends on, Debian 12's 6.1); e.g.
#                       linux-image-6.12.107+deb12-amd64-unsigned or its
#                       -cloud-amd64-unsigned flavour (`apt-cache search
#                       linux-image-6.12` lists them)
#   KERNELVM_TIMEOUT    seconds the VM may run (default 1200)
#   KERNELVM_TESTFLAGS  go test binary flags (default -test.run ^TestRoot)
#   KERNELVM_PACKAGES   packages to test (default below)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "kernelvm: needs root (apt-get download, network namespaces)" >&2; exit 1; }

# Packages whose root tests need nothing but netlink and network namespaces.
# Those needing containerd (pkg/cri, hack/image) or an API server (test/...)
# run on the host.
packages=(${KERNELVM_PACKAGES:-./pkg/dataplane ./pkg/portsecurity ./pkg/underlay ./podwait})
# The links the root tests create (vxlan for spanning bridge networks, which
# brings udp_tunnel and ip6_udp_tunnel), and what the agent may create in
# time (vrf); their dependencies come from modules.dep. xfrm_user and
# nfnetlink: the netlink library's default handle opens those families too,
# which a stock host loads on demand (the VM has no modprobe to do so).
# nf_tables: port security's bridge-family table (its bridge chain type,
# sets, payload, lookup and range expressions are in it); its libcrc32c
# needs a crc32c implementation first, a soft dependency that modules.dep
# does not list. nft_meta_bridge: the kernel asks for the bridge family's
# own meta expression before the generic one, and a missing module fails
# the rule. nft_fib_inet: the underlay lock's reverse-path check (fib).
# wireguard: tunnel networks (its crypto, udp_tunnel and ip6_udp_tunnel
# come from modules.dep). psample: netdevsim's one dependency (below).
# nft_ct: the policy table's replies (conntrack, from modules.dep).
modules=(veth bridge 8021q macvlan ipvlan vxlan vrf dummy xfrm_user nfnetlink crc32c_generic nf_tables nft_meta_bridge nft_fib_inet wireguard psample nft_ct)
timeout=${KERNELVM_TIMEOUT:-1200}
testflags=${KERNELVM_TESTFLAGS:--test.run ^TestRoot -test.timeout 15m}
out=$PWD/_output/kernelvm
mkdir -p "$out"

# The stock kernel: the version linux-image-amd64 depends on now, or the
# newest stock one cached when the package lists cannot be read (a kernel
# chosen by KERNELVM_KERNEL, cached beside it, is never taken for it).
stock() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6/ {print $2; exit}'; }
pkg=${KERNELVM_KERNEL:-}
if [ -z "$pkg" ]; then
  pkg=$(stock)
  if [ -z "$pkg" ] && ! ls -d "$out"/linux-image-*-amd64 >/dev/null 2>&1; then
    apt-get update -qq && pkg=$(stock)
  fi
  if [ -z "$pkg" ]; then
    pkg=$(ls -d "$out"/linux-image-*-amd64 2>/dev/null | sort -V | tail -1 | xargs -r basename)
  fi
  [ -n "$pkg" ] || { echo "kernelvm: no linux-image-amd64 in the package lists (apt-get update?)" >&2; exit 1; }
fi
kdir=$out/$pkg
if [ ! -f "$kdir/ok" ]; then
  echo "kernelvm: fetching $pkg"
  rm -rf "$kdir" && mkdir -p "$kdir/dl"
  (cd "$kdir/dl" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  ls "$kdir"/dl/*.deb >/dev/null 2>&1 || { echo "kernelvm: could not download $pkg (apt-get update? apt-cache search linux-image-6)" >&2; exit 1; }
  dpkg-deb -x "$kdir"/dl/*.deb "$kdir/root"
  rm -rf "$kdir/dl"
  # The release is the package's one modules folder: a -unsigned package's
  # name carries a suffix that the release has not.
  kver=$(ls "$kdir/root/lib/modules")
  depmod -b "$kdir/root" "$kver"
  touch "$kdir/ok"
fi
kver=$(ls "$kdir/root/lib/modules")
[ -f "$kdir/root/boot/vmlinuz-$kver" ] || { echo "kernelvm: $pkg has no /boot/vmlinuz-$kver" >&2; exit 1; }

# netdevsim, the kernel's emulated NIC, is the PF of the SR-IOV tests: its
# VFs take a MAC, VLAN, spoof check and trust as a real PF's do. Debian
# does not ship it (it is not in modules.order), so it is built out of
# tree from Debian's own source and headers of that kernel (gcc and make
# only), once per kernel. Unsigned, it loads with a taint, which the
# tests do not mind. A kernel that ships it uses its own.
nsim=$out/netdevsim-$kver/netdevsim.ko
if modinfo -b "$kdir/root" -k "$kver" -n netdevsim >/dev/null 2>&1; then
  modules+=(netdevsim)
  nsim=
elif [ ! -f "$nsim" ]; then
  echo "kernelvm: building netdevsim for $kver"
  ndir=$(dirname "$nsim")
  ver=$(apt-cache show "linux-headers-$kver" | awk '/^Version:/ && !v {print $2; v=1}')
  major=$(echo "$kver" | cut -d. -f1,2)
  [ -n "$ver" ] || { echo "kernelvm: no linux-headers-$kver in the package lists (apt-get update?)" >&2; exit 1; }
  rm -rf "$ndir" && mkdir -p "$ndir/dl"
  common=$(apt-cache depends "linux-headers-$kver" | awk '/Depends: linux-headers-.*-common/ && !c {print $2; c=1}')
  (cd "$ndir/dl" && apt-get download -q "linux-source-$major=$ver" "linux-headers-$kver=$ver" "$common=$ver" "linux-kbuild-$major=$ver" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  for deb in "$ndir"/dl/*.deb; do dpkg-deb -x "$deb" "$ndir/root"; done
  tar -xJf "$ndir/root/usr/src/linux-source-$major.tar.xz" -C "$ndir" "linux-source-$major/drivers/net/netdevsim"
  # The headers' Makefile includes the common part at its installed path.
  sed -i "s|^include /usr/src/|include $ndir/root/usr/src/|" "$ndir/root/usr/src/linux-headers-$kver/Makefile"
  make -s -C "$ndir/root/usr/src/linux-headers-$kver" M="$ndir/linux-source-$major/drivers/net/netdevsim" CONFIG_NETDEVSIM=m modules >"$ndir/build.log" 2>&1 ||
    { tail -20 "$ndir/build.log" >&2; echo "kernelvm: netdevsim did not build for $kver" >&2; exit 1; }
  cp "$ndir/linux-source-$major/drivers/net/netdevsim/netdevsim.ko" "$nsim.tmp"
  rm -rf "$ndir/dl" "$ndir/root" "$ndir/linux-source-$major"
  mv "$nsim.tmp" "$nsim"
fi

# Module files in load order: each module after everything it depends on.
declare -A loaded=()
order=()
load() {
  local name=$1 path deps dep
  path=$(modinfo -b "$kdir/root" -k "$kver" -n "$name")
  # Built into the kernel (the cloud flavour has several): nothing to load.
  [ "$path" != "(builtin)" ] || return 0
  [ -z "${loaded[$path]:-}" ] || return 0
  loaded[$path]=1
  deps=$(modinfo -b "$kdir/root" -k "$kver" -F depends "$name" | tr ',' ' ')
  for dep in $deps; do load "$dep"; done
  order+=("$path")
}

# The base part of the initramfs (busybox, ip with its libraries, modules,
# /init) is rebuilt only when the kernel, the module list or /init changed.
tools=(ip ethtool) # with their shared libraries; ethtool: the offload tests
key=$( (cat hack/kernelvm/init; echo "${modules[*]}"; echo "${tools[*]}"; echo "$nsim") | sha256sum | cut -c1-12)
base=$out/base-$kver-$key.cpio.gz
if [ ! -f "$base" ]; then
  rm -f "$out/base-$kver-"*.cpio.gz
  for m in "${modules[@]}"; do load "$m"; done
  [ -z "$nsim" ] || order+=("$nsim")
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage"/{bin,sbin,proc,sys,dev,run,tmp,var,tests,modules.d}
  cp "$(command -v busybox)" "$stage/bin/busybox"
  if ldd "$stage/bin/busybox" >/dev/null 2>&1; then
    echo "kernelvm: $(command -v busybox) is not static (install busybox-static)" >&2
    exit 1
  fi
  mkdir -p "$stage/usr/local/sbin"
  for tool in "${tools[@]}"; do
    bin=$(command -v "$tool")
    cp "$bin" "$stage/usr/local/sbin/$tool"
    # Its shared libraries and the dynamic loader, at the paths ldd names.
    for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
      mkdir -p "$stage$(dirname "$lib")" && cp -L "$lib" "$stage$lib"
    done
  done
  : > "$stage/modules"
  for path in "${order[@]}"; do
    name=$(basename "$path")
    case $name in
      *.ko.xz) name=${name%.xz}; xz -dc "$path" > "$stage/modules.d/$name" ;;
      *.ko) cp "$path" "$stage/modules.d/" ;;
      *) echo "kernelvm: $path: only .ko and .ko.xz modules are known" >&2; exit 1 ;;
    esac
    echo "$name" >> "$stage/modules"
  done
  cp hack/kernelvm/init "$stage/init"
  (cd "$stage" && find . | cpio -o -H newc --quiet) | gzip -1 > "$base.tmp"
  mv "$base.tmp" "$base"
  rm -rf "$stage"
  trap - EXIT
fi

prepared=$SECONDS

# The test binaries, static so that the VM needs no Go libraries.
tests=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$tests" "$log"' EXIT
for p in "${packages[@]}"; do
  name=$(echo "${p#./}" | tr / -)
  mkdir -p "$tests/tests/$name"
  CGO_ENABLED=0 go test -c -o "$tests/tests/$name/$name.test" "$p"
done
echo "$testflags" > "$tests/testflags"
(cd "$tests" && find tests testflags | cpio -o -H newc --quiet) | gzip -1 > "$out/tests.cpio.gz"
cat "$base" "$out/tests.cpio.gz" > "$out/initrd.gz"

built=$SECONDS
echo "kernelvm: booting $kver (qemu TCG, timeout ${timeout}s): ${packages[*]}"
status=0
timeout --kill-after=10 "$timeout" qemu-system-x86_64 -nodefaults -no-user-config -no-reboot \
  -accel tcg,thread=multi -cpu max -m 1G -smp 2 -display none -monitor none -serial stdio \
  -kernel "$kdir/root/boot/vmlinuz-$kver" -initrd "$out/initrd.gz" \
  -append "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init" </dev/null 2>&1 |
  tr -d '\r' | tee "$log" || status=$?

summary() {
  passed=$(grep -cE '^ *--- PASS: ' "$log" || true)
  failed=$(grep -cE '^ *--- FAIL: ' "$log" || true)
  skipped=$(grep -cE '^ *--- SKIP: ' "$log" || true)
  echo "kernelvm: ${SECONDS}s: kernel and initramfs ${prepared}s, test binaries $((built - prepared))s, VM $((SECONDS - built))s"
  echo "kernel $kver: $passed passed, $failed failed, $skipped skipped"
}
fail() { echo "kernelvm: $*" >&2; summary; exit 1; }
[ "$status" = 0 ] || fail "the VM did not finish within ${timeout}s or qemu failed (exit $status)"
grep -q '^PODNET-KERNELVM-DONE' "$log" || fail "the VM stopped before running every test binary"
! grep '^PODNET-KERNELVM-MODULE-FAILED' "$log" >&2 || fail "a kernel module did not load"
for p in "${packages[@]}"; do
  name=$(echo "${p#./}" | tr / -)
  grep -q "^PODNET-KERNELVM-EXIT $name 0\$" "$log" || fail "$name: tests failed (see above)"
done
summary
if grep -qE '^ *--- SKIP: ' "$log"; then
  grep -E '^ *--- SKIP: ' -A2 "$log" >&2
  echo "kernelvm: tests skipped in the VM: every kernel feature must be there" >&2
  exit 1
fi
[ "$passed" -gt 0 ] || { echo "kernelvm: no test ran" >&2; exit 1; }
[ "$failed" = 0 ] || exit 1
