#!/usr/bin/env bash
# exports.sh - libvramctl.so depends on libc alone and exports exactly the
# wrappers of hooks.def, dlsym at both glibc versions, and the instance
# marker; checked on whatever build type this run is (release, asan, tsan;
# gcc or clang).
set -eu
lib=$VR_BUILD/libvramctl.so
[ -f "$lib" ] || { echo "no $lib"; exit 1; }

# NEEDED: libc (and the loader); a sanitizer build adds its runtime.
bad=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
	grep -Ev '^(libc\.so\.6|ld-linux-x86-64\.so\.2|libdl\.so\.2|libpthread\.so\.0|libasan\.so\.[0-9]+|libubsan\.so\.[0-9]+|libtsan\.so\.[0-9]+|libclang_rt\.[a-z_-]+x86_64\.so|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|librt\.so\.1)$' || true)
if [ -n "$bad" ]; then
	echo "unexpected NEEDED entries: $bad"
	exit 1
fi
readelf -d "$lib" | grep -q 'NEEDED.*libc\.so\.6' || { echo "libc not NEEDED?"; exit 1; }

# The intended exports, from hooks.def through the preprocessor.
want=$( {
	printf '#define VR_HOOK_CU(n) n\n#define VR_HOOK_NVML(n) n\n#include "hook/hooks.def"\n' |
		${CC:-cc} -E -P -x c -I"$VR_SRC/src" - | tr -s ' \n' '\n' | grep -v '^$'
	echo vramctl_instance_v1
	echo dlsym@GLIBC_2.2.5
	echo dlsym@@GLIBC_2.34
} | sort)
# Sanitizer runtimes linked statically into the library may export their
# own interface symbols; those are not ours.
have=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' |
	grep -Ev '^(__asan|__ubsan|__tsan|__sanitizer|__lsan|__interceptor|___interceptor)' |
	sed 's/@@VRAMCTL_1$//' | sort)
if [ "$want" != "$have" ]; then
	echo "exports differ from hooks.def (< wanted, > exported):"
	diff <(echo "$want") <(echo "$have") || true
	exit 1
fi
# Both dlsym versions point at the same thunk.
n=$(nm -D --defined-only "$lib" | awk '$3 ~ /^dlsym@/ { print $1 }' | sort -u | wc -l)
[ "$n" = 1 ] || { echo "the two dlsym versions differ"; exit 1; }
echo "NEEDED and exports as intended"
