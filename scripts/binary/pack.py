"""Pack a PyInstaller one-folder build behind the launcher: the single-file ``dist/agen``.

Layout: ``launcher | zlib(records) | trailer``. Records are a folder walk (folders before their
contents): type (``d`` folder, ``f`` file, ``l`` symlink, ``E`` end), mode (u32), size (u64),
CRC-32 of the data (u32), path length (u16), the '/'-separated relative path, then the data (file
bytes or link target). The trailer is ``AGENPK01``, payload offset (u64), payload length (u64) and
the build hash: the first 32 hex digits of the SHA-256 of the uncompressed records, which names the
per-user cache folder (a new build never reuses an old cache). All integers little-endian. The
reader is scripts/binary/launcher.c.

    python scripts/binary/pack.py ONEDIR LAUNCHER OUT
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

MAGIC = b"AGENPK01"


def read_payload(binary: Path) -> tuple[str, dict[str, tuple[str, bytes]]]:
    """(build hash, {relative path: (type, data)}) of a packed binary: what its cache must hold."""
    blob = binary.read_bytes()
    magic, offset, length, build = (
        blob[-56:-48],
        *struct.unpack("<QQ", blob[-48:-32]),
        blob[-32:].decode(),
    )
    if magic != MAGIC:
        raise ValueError(f"{binary} has no agen payload")
    raw = zlib.decompress(blob[offset : offset + length])
    out: dict[str, tuple[str, bytes]] = {}
    pos = 0
    while raw[pos : pos + 1] != b"E":
        kind = raw[pos : pos + 1].decode()
        _mode, size, _crc, plen = struct.unpack("<IQIH", raw[pos + 1 : pos + 19])
        pos += 19
        rel = raw[pos : pos + plen].decode()
        pos += plen
        out[rel] = (kind, raw[pos : pos + size])
        pos += size
    return build, out


def _entries(top: Path) -> Iterator[tuple[bytes, bytes, Path | None, str]]:
    """(type, header-without-path, source-or-None, relative path) for every entry under top, sorted."""
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        here = Path(dirpath)
        for name in [*sorted(filenames), *[d for d in dirnames if (here / d).is_symlink()]]:
            path = here / name
            rel = path.relative_to(top).as_posix()
            if path.is_symlink():
                yield b"l", os.readlink(path).encode(), None, rel
            else:
                yield b"f", b"", path, rel
        for d in dirnames:
            if not (here / d).is_symlink():
                rel = (here / d).relative_to(top).as_posix()
                yield b"d", b"", None, rel


def _records(top: Path) -> Iterator[bytes]:
    for kind, link, src, rel in sorted(_entries(top), key=_order):
        name = rel.encode()
        if kind == b"d":
            yield _header(kind, 0o755, 0, 0, name)
        elif kind == b"l":
            yield _header(kind, 0o777, len(link), zlib.crc32(link), name) + link
        else:
            assert src is not None
            data = src.read_bytes()
            mode = 0o755 if os.access(src, os.X_OK) else 0o644
            yield _header(kind, mode, len(data), zlib.crc32(data), name) + data
    yield _header(b"E", 0, 0, 0, b"")


def _order(entry: tuple[bytes, bytes, Path | None, str]) -> tuple[tuple[str, ...], int]:
    """Parents before children: sort by path components, a folder before anything inside it."""
    parts = tuple(entry[3].split("/"))
    return parts, 0 if entry[0] == b"d" else 1


def _header(kind: bytes, mode: int, size: int, crc: int, name: bytes) -> bytes:
    if b"\n" in name or len(name) >= 4096:  # the launcher's .ok list is one line per path
        raise SystemExit(
            f"pack: cannot pack {name!r}: a newline in the name, or longer than 4095 bytes"
        )
    return kind + struct.pack("<IQIH", mode, size, crc, len(name)) + name


def pack(onedir: Path, launcher: Path, out: Path) -> str:
    """Write out = launcher + payload + trailer; return the build hash."""
    digest = hashlib.sha256()
    comp = zlib.compressobj(9)
    tmp = out.with_name(out.name + ".part")
    with open(tmp, "wb") as f:
        f.write(launcher.read_bytes())
        offset = f.tell()
        for rec in _records(onedir):
            digest.update(rec)
            f.write(comp.compress(rec))
        f.write(comp.flush())
        length = f.tell() - offset
        build = digest.hexdigest()[:32]
        f.write(MAGIC + struct.pack("<QQ", offset, length) + build.encode())
    tmp.chmod(0o755)
    tmp.replace(out)
    return build


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    print(pack(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
