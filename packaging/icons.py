"""Render the app icon from resources/icons/streamscope.svg for the installers.

    python packaging/icons.py OUT_DIR     (with the project's venv: it uses PySide6)

writes ``OUT_DIR/hicolor/<n>x<n>/apps/<APP_ID>.png`` for the Linux sizes,
``OUT_DIR/streamscope.ico`` (Windows, PNG entries) and ``OUT_DIR/streamscope.icns`` (macOS).
Rendering uses Qt's QSvgRenderer on the offscreen platform, so no display or extra tool is
needed; the ICO and ICNS containers are written here (both just hold PNG data).
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "resources" / "icons" / "streamscope.svg"
APP_ID = "io.github.streamscope.StreamScope"  # = streamscope.APP_ID (a test checks)
HICOLOR_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# ICNS element types holding PNG data, by pixel size.
ICNS_TYPES = (
    (b"icp4", 16),
    (b"icp5", 32),
    (b"icp6", 64),
    (b"ic07", 128),
    (b"ic08", 256),
    (b"ic09", 512),
    (b"ic10", 1024),
)


def render_pngs(sizes: tuple[int, ...]) -> dict[int, bytes]:
    """PNG bytes of the SVG at each size (square, transparent background)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"cannot read {SVG}")
    out: dict[int, bytes] = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32)
        image.fill(0)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        image.save(buffer, "PNG")
        buffer.close()
        out[size] = bytes(data.data())
    return out


def ico(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico whose entries are PNG images (Vista and later)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        data = pngs[size]
        dim = 0 if size >= 256 else size  # 0 means 256
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        blobs += data
        offset += len(data)
    return header + entries + blobs


def icns(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns whose elements are PNG images."""
    body = b"".join(
        kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size]
        for kind, size in ICNS_TYPES
        if size in pngs
    )
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def write_all(out_dir: Path) -> None:
    sizes = tuple(sorted({*HICOLOR_SIZES, *ICO_SIZES, *(s for _, s in ICNS_TYPES)}))
    pngs = render_pngs(sizes)
    for size in HICOLOR_SIZES:
        target = out_dir / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(pngs[size])
    (out_dir / "streamscope.ico").write_bytes(ico({s: pngs[s] for s in ICO_SIZES}))
    (out_dir / "streamscope.icns").write_bytes(icns(pngs))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    write_all(Path(sys.argv[1]))
