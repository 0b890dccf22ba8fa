#!/usr/bin/env bash
# Rebuild SentencePiece 0.1.97 from Debian 12's own source package against the system protobuf
# and install it into a private prefix (default: .deps/sentencepiece).
#
# Why: Debian's libsentencepiece.so.0 bundles protobuf-lite 3.14 and exports its symbols, so any
# process that also loads LibTorch (system protobuf 3.21) crashes at start-up (docs/build.md P3).
# The private build links libprotobuf-lite.so.32 instead; its RUNPATH points at the private
# prefix so it never picks up Debian's copy. It is not ABI-compatible with Debian's spm_* tools,
# so it never goes on the system library path.
#
# Idempotent: does nothing when the prefix already holds a build of this recipe.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$here/.deps/sentencepiece}
recipe=2  # bump when the build flags or the patches below change
stamp=$prefix/.dialtree-recipe
if [[ -f $stamp && $(cat "$stamp") == "$recipe" ]]; then exit 0; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dialtree-spm.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-sentencepiece: fetching Debian's sentencepiece source package into $work" >&2

# The machine's apt sources list binary packages only; make a private deb-src list from the
# first non-security archive URI configured on this machine (deb822 or one-line format), so the
# system configuration stays untouched.
uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
  tr ' ' '\n' | grep -v security | head -1 || true)
if [[ -z $uri ]]; then
  uri=$(grep -hE '^deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' | awk '{print $1}' | grep -v security |
    head -1 || true)
fi
[[ -n $uri ]] || { echo "build-sentencepiece: no Debian archive URI found in /etc/apt" >&2; exit 1; }
cat >"$work/src.sources" <<SRC
Types: deb-src
URIs: $uri
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
mkdir -p "$work/lists/partial"
aptopts=(-o "Dir::Etc::SourceList=$work/src.sources" -o "Dir::Etc::SourceParts=-"
  -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
apt-get "${aptopts[@]}" update -qq >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; exit 1; }
(cd "$work" && apt-get "${aptopts[@]}" source -qq sentencepiece=0.1.97-3 >>"$work/apt.log" 2>&1) ||
  { cat "$work/apt.log" >&2; exit 1; }
src=$work/sentencepiece-0.1.97
# The one-line patch of docs/build.md P3 (a): use the system protobuf header.
sed -i 's|#include "third_party/protobuf-lite/google/protobuf/message_lite.h"|#include <google/protobuf/message_lite.h>|' \
  "$src/src/init.h"
grep -q '<google/protobuf/message_lite.h>' "$src/src/init.h" ||
  { echo "build-sentencepiece: could not patch src/init.h" >&2; exit 1; }
# The patch of docs/build.md P15: a run of consecutive unknown characters is merged into one
# [UNK] piece by copying the piece and its surface at every character (`sp->piece() + w`), which
# is quadratic in the run's length (200,000 unknown characters: 1.9 s); appending in place, as
# later SentencePiece releases do, makes it linear and leaves every output as it was.
sed -i -e 's|sp->set_piece(sp->piece() + std::string(w));|sp->mutable_piece()->append(w.data(), w.size());|' \
  -e 's|sp->set_surface(sp->surface() + std::string(surface));|sp->mutable_surface()->append(surface.data(), surface.size());|' \
  "$src/src/sentencepiece_processor.cc"
[[ $(grep -c -e 'mutable_piece()->append(w.data' -e 'mutable_surface()->append(surface.data' \
  "$src/src/sentencepiece_processor.cc") == 2 ]] ||
  { echo "build-sentencepiece: could not patch src/sentencepiece_processor.cc" >&2; exit 1; }

echo "build-sentencepiece: building into $prefix" >&2
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSPM_USE_BUILTIN_PROTOBUF=OFF -DSPM_ENABLE_TCMALLOC=OFF -DSPM_ENABLE_SHARED=ON \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_INSTALL_RPATH="$prefix/lib" "${launcher[@]}" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log" >&2; exit 1; }
ninja -C "$work/build" install >"$work/ninja.log" 2>&1 || { tail -50 "$work/ninja.log" >&2; exit 1; }
echo "$recipe" >"$stamp"
