#!/usr/bin/env bash
# CI packaging stage (run by .ci/run after the tests; needs root and apt-get):
# build the bundle and the .deb (zstd), install it with apt-get, run --version and --self-test
# (offscreen, and in a real X11 window under Xvfb), check the installed size, purge, and check
# nothing is left under /opt/streamscope. Prints the figures and the stage's time.
set -euo pipefail
cd "$(dirname "$0")/.."
export LANG=C.UTF-8 LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
# 185 MB = 185,000,000 bytes, in KiB (dpkg counts KiB). It was 135 MB until the Bench window's
# plots: pyqtgraph, numpy (13 MB, and 28 MB of OpenBLAS/gfortran that cannot be stripped) and
# QtOpenGL add 44 MB installed, 17.8 MB to the .deb (measured: 171.5 MiB installed, 67.6 MB).
MAX_INSTALLED_KIB=180664
stage_start=$SECONDS

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "[packaging] skipped: installing a .deb needs root and apt-get" >&2
  exit 0
fi

if ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then apt-get update -qq; fi
# objdump/strip (binutils), desktop-file-validate, the libraries the xcb and wayland plugins
# link (so PyInstaller and dpkg-query find them: see shared PACKAGING_NOTES), Xvfb.
apt-get install -y -qq --no-install-recommends \
  binutils dpkg-dev desktop-file-utils appstream lintian patchelf \
  libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-render-util0 \
  libxcb-shape0 libxcb-xkb1 libxkbcommon-x11-0 libwayland-client0 libwayland-cursor0 \
  libwayland-egl1 xvfb xauth >/dev/null

t=$SECONDS
python3 packaging/build.py deb --compression zstd
build_s=$((SECONDS - t))
deb=$(ls dist/streamscope_*.deb)

# Distro checks: AppStream metainfo, then lintian: any error fails the stage. What is kept on
# purpose is overridden in the package (packaging/linux/lintian-overrides, justified in
# packaging/README.md); malformed-deb-archive only says this Debian 12 lintian cannot read
# zstd members (CI's fast .deb; the release .deb is xz and has no such finding).
appstreamcli validate --no-net packaging/linux/io.github.streamscope.StreamScope.metainfo.xml
lintian --fail-on error --tag-display-limit 0 --suppress-tags malformed-deb-archive "$deb"

cleanup() { apt-get purge -y -qq streamscope >/dev/null 2>&1 || true; }
trap cleanup EXIT

t=$SECONDS
apt-get install -y -qq "./$deb" >/dev/null
install_s=$((SECONDS - t))
(cd / && /usr/bin/streamscope --version)
for f in /usr/share/metainfo/io.github.streamscope.StreamScope.metainfo.xml \
  /usr/share/applications/io.github.streamscope.StreamScope.desktop \
  /usr/share/mime/packages/io.github.streamscope.StreamScope.xml \
  /usr/share/man/man1/streamscope.1.gz /usr/share/doc/streamscope/changelog.gz; do
  [ -s "$f" ] || { echo "[packaging] FAIL: $f is missing" >&2; exit 1; }
done
(cd / && env -u DISPLAY -u WAYLAND_DISPLAY /usr/bin/streamscope --self-test)
(cd / && xvfb-run -a /usr/bin/streamscope --self-test)

installed_kib=$(dpkg-query -W -f='${Installed-Size}' streamscope)
bundle_kib=$(du -sk /opt/streamscope | cut -f1)
echo "[packaging] $deb: $(stat -c %s "$deb") bytes (zstd); installed ${installed_kib} KiB" \
  "(limit ${MAX_INSTALLED_KIB}); /opt/streamscope ${bundle_kib} KiB"
if [ "$installed_kib" -gt "$MAX_INSTALLED_KIB" ]; then
  echo "[packaging] FAIL: installed size ${installed_kib} KiB > ${MAX_INSTALLED_KIB} KiB" >&2
  exit 1
fi

trap - EXIT
apt-get purge -y -qq streamscope >/dev/null
if [ -e /opt/streamscope ] || [ -e /usr/bin/streamscope ]; then
  echo "[packaging] FAIL: left behind after purge:" >&2
  find /opt/streamscope /usr/bin/streamscope -maxdepth 1 2>/dev/null | head >&2
  exit 1
fi
echo "[packaging] ok: build ${build_s} s, install ${install_s} s," \
  "stage $((SECONDS - stage_start)) s; purged, nothing left under /opt/streamscope"
