#!/usr/bin/env bash
# Gathers what scripts/gpu-check.sh needs on a machine without Debian's packages (docs/gpu.md
# "The prepared GPU check"): the Debian 12 packages of every build dependency except LibTorch and
# the compiler, as .deb files, plus the private SentencePiece build, into .deps/gpu/ (about
# 50 MB; gitignored), with a little data from the main job's outputs (out/). Run it here, on Debian 12 with the package mirror, after scripts/setup.sh.
#
# The runtime libraries of cmake are included so that a machine without cmake can use the
# carried one; gpu-check.sh prefers a cmake >= 3.18 of its own machine.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dest=$here/.deps/gpu
packages=(
  # headers and libraries of the build (cmake/Dependencies.cmake)
  nlohmann-json3-dev libcli11-dev libeigen3-dev libyaml-cpp-dev libyaml-cpp0.7 libcpp-httplib-dev
  libcpp-httplib0.11 libboost1.74-dev libgtest-dev libgmock-dev libspdlog-dev libspdlog1.10
  libfmt-dev libfmt9 libutf8proc-dev libutf8proc2 libcsv-dev libcsv3 libsimdjson-dev libsimdjson14
  libjemalloc-dev libjemalloc2 libprotobuf-lite32 libssl3
  # build tools
  pkgconf pkgconf-bin libpkgconf3 ninja-build
  # cmake and the libraries it links beyond glibc, libstdc++, zlib, bzip2, lzma and zstd
  cmake cmake-data libarchive13 libcurl4 libjsoncpp25 librhash0 libuv1 libexpat1 libacl1
  liblz4-1 libnettle8 libxml2 libicu72 libbrotli1 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libkeyutils1 libcom-err2 libidn2-0 libunistring2 libldap-2.5-0 libsasl2-2
  libsasl2-modules-db libdb5.3 libnghttp2-14 libpsl5 librtmp1 libgnutls30 libhogweed6 libgmp10
  libp11-kit0 libffi8 libtasn1-6 libssh2-1
)
[[ -f $here/.deps/sentencepiece/.dialtree-recipe ]] || {
  echo "gpu-deps: no private SentencePiece build in .deps/sentencepiece: run scripts/setup.sh first" >&2
  exit 1
}
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp/debs"
# apt-get download writes into the working directory; as root it warns that the _apt user cannot
# write there, which is harmless.
(cd "$dest.tmp/debs" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2)
cp -a "$here/.deps/sentencepiece" "$dest.tmp/sentencepiece"
# The check's data, from the main job's outputs (scripts/run.sh): the tokenizer, SGD dialogs and
# banking's 10-shot split for a short pretraining run, banking's test texts for embed. Carried to
# the GPU machine, never committed.
for f in out/tokenizer/tokenizer.json out/sts/sgd.train.jsonl out/sts/banking.train_10.jsonl \
  out/sts/banking.test.jsonl; do
  [[ -f $here/$f ]] || { echo "gpu-deps: no $f: run scripts/run.sh first" >&2; exit 1; }
done
mkdir -p "$dest.tmp/data"
cp -a "$here/out/tokenizer" "$dest.tmp/data/tokenizer"
cp "$here/out/sts/sgd.train.jsonl" "$here/out/sts/banking.train_10.jsonl" "$dest.tmp/data/"
python3 -c '
import json, sys
for line in open(sys.argv[1]):
    print(json.loads(line)["turns"][-1]["text"].replace("\n", " "))
' "$here/out/sts/banking.test.jsonl" >"$dest.tmp/data/banking.test.txt"
printf '%s\n' "${packages[@]}" >"$dest.tmp/packages.txt"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "gpu-deps: $(ls "$dest/debs" | wc -l) packages, $(du -sh "$dest" | cut -f1) in $dest" >&2
