#!/usr/bin/env bash
# macOS: build StreamScope.app with the shared spec, self-test it, and wrap it in a .dmg.
#
#   bash packaging/macos/build_dmg.sh        -> dist/StreamScope-<version>.dmg
#
# Run on a Mac (PyInstaller cannot cross-build). Uses the project's .venv like the Linux
# build (python3 packaging/build.py bundle). Signing: set MACOS_CODESIGN_IDENTITY (and the
# notarization variables in packaging/macos/README.md); without them the app is unsigned
# and Gatekeeper blocks it until the user allows it in System Settings > Privacy & Security.
set -euo pipefail
cd "$(dirname "$0")/../.."

python3 packaging/build.py bundle
app=dist/StreamScope.app
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' app/streamscope/__init__.py)
"$app/Contents/MacOS/streamscope" --self-test

if [ -n "${MACOS_CODESIGN_IDENTITY:-}" ]; then
  # PyInstaller signed each binary with the identity; seal the whole bundle (hardened runtime).
  codesign --force --deep --options runtime --timestamp \
    --sign "$MACOS_CODESIGN_IDENTITY" "$app"
  codesign --verify --strict --verbose=2 "$app"
fi

staging=build/dmg
rm -rf "$staging" && mkdir -p "$staging"
cp -R "$app" "$staging/"
ln -s /Applications "$staging/Applications"
dmg="dist/StreamScope-$version.dmg"
rm -f "$dmg"
hdiutil create -volname "StreamScope $version" -srcfolder "$staging" -fs HFS+ \
  -format UDZO -imagekey zlib-level=9 -ov "$dmg"

if [ -n "${MACOS_CODESIGN_IDENTITY:-}" ] && [ -n "${MACOS_NOTARY_PROFILE:-}" ]; then
  codesign --force --timestamp --sign "$MACOS_CODESIGN_IDENTITY" "$dmg"
  xcrun notarytool submit "$dmg" --keychain-profile "$MACOS_NOTARY_PROFILE" --wait
  xcrun stapler staple "$dmg"
fi
echo "[build_dmg] $dmg ($(du -h "$dmg" | cut -f1))"
