"""The definition digest (seed 000 §9): golden vector, ignore rules, order independence."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agen.bundle.digest import definition_id, digest_dir, digest_files, is_ignored, walk_bundle
from agen.errors import BundleError

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "digest-golden"
GOLDEN_DIGEST = "sha256:292b2db077d187c8e853b1767ff33d30b3ec46f2d0168e98a7494585208cd938"
GOLDEN_PATHS = [
    "B.txt",
    "a-b.txt",
    "a.txt",
    "a/b/c/deep.json",
    "données/été.txt",
    "empty.txt",
    "plugin.json",
    "skills/résumé/SKILL.md",
    "x-agen/agent.md",
    "x-agen/harness.json",
    "ｱ.txt",
    "😀.txt",
]


def reference_digest(root: Path) -> str:
    """An independent, deliberately plain reading of seed 000 §9 (os.walk + hashlib + struct)."""
    entries: list[tuple[bytes, bytes]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [
            d for d in dirnames if d not in (".git", "node_modules", "__pycache__", ".venv")
        ]
        for fn in filenames:
            if fn == ".DS_Store" or fn.endswith("~") or fn.endswith(".swp") or fn.endswith(".pyc"):
                continue
            full = Path(dirpath) / fn
            rel = full.relative_to(root).as_posix()
            entries.append((rel.encode("utf-8"), full.read_bytes()))
    entries.sort(key=lambda e: e[0])
    h = hashlib.sha256()
    for path, data in entries:
        h.update(path + b"\x00" + struct.pack("<Q", len(data)) + data)
    return "sha256:" + h.hexdigest()


def test_golden_bundle_digest_matches_reference_and_pinned_value() -> None:
    assert sorted(walk_bundle(GOLDEN_DIR), key=lambda p: p.encode()) == GOLDEN_PATHS
    assert digest_dir(GOLDEN_DIR) == reference_digest(GOLDEN_DIR) == GOLDEN_DIGEST


def test_golden_digest_ignores_git_and_venv_folders_added_later(tmp_path: Path) -> None:
    copy = tmp_path / "golden"
    shutil.copytree(GOLDEN_DIR, copy)
    for junk in (
        ".git/HEAD",
        ".git/objects/ab/cdef",
        ".venv/bin/python",
        "x-agen/__pycache__/a.pyc",
        "skills/résumé/.SKILL.md.swp",
        "deep/node_modules/x.js",
        "x-agen/.DS_Store",
    ):
        (copy / junk).parent.mkdir(parents=True, exist_ok=True)
        (copy / junk).write_bytes(b"junk")
    assert digest_dir(copy) == GOLDEN_DIGEST


def test_empty_file_and_path_boundaries_are_hashed_distinctly() -> None:
    # "ab" + "" must not collide with "a" + "b": the NUL and length frame each entry.
    assert digest_files({"ab": b""}) != digest_files({"a": b"b"})
    assert digest_files({"a": b"", "b": b""}) != digest_files({"a": b"b"})
    assert digest_files({}) == "sha256:" + hashlib.sha256(b"").hexdigest()


def test_definition_id_is_name_at_digest() -> None:
    assert definition_id("hello", "sha256:ab") == "hello@sha256:ab"


@pytest.mark.parametrize(
    ("path", "ignored"),
    [
        (".git/config", True),
        ("a/.git/config", True),
        ("node_modules/x/y.js", True),
        ("a/__pycache__/m.py", True),
        (".venv/lib/x", True),
        (".DS_Store", True),
        ("deep/dir/.DS_Store", True),
        ("notes~", True),
        ("a/.x.swp", True),
        ("m.pyc", True),
        ("git/config", False),
        (".gitignore", False),
        ("x.py", False),
        ("venv/x", False),
        ("a.swpx", False),
        ("node_modules.txt", False),
    ],
)
def test_ignore_rules_apply_at_any_depth(path: str, ignored: bool) -> None:
    assert is_ignored(path) is ignored


def test_symlink_inside_bundle_is_followed_and_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "b"
    (root / "x-agen").mkdir(parents=True)
    (root / "real.txt").write_text("hi")
    (root / "link.txt").symlink_to(root / "real.txt")
    assert walk_bundle(root) == {"real.txt": b"hi", "link.txt": b"hi"}

    (tmp_path / "secret.txt").write_text("outside")
    (root / "x-agen" / "leak.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(BundleError) as exc:
        walk_bundle(root)
    assert exc.value.problems == [
        f"x-agen/leak.txt: (file): symlink to {tmp_path / 'secret.txt'} leaves the bundle; copy the file in instead"
    ]


def test_symlinked_directory_loop_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "b"
    (root / "d").mkdir(parents=True)
    (root / "d" / "up").symlink_to(root / "d")
    with pytest.raises(BundleError, match="loop"):
        walk_bundle(root)


paths = st.lists(
    st.text(
        st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\x00"),
        min_size=1,
        max_size=8,
    ),
    min_size=1,
    max_size=3,
).map("/".join)
bundles = st.dictionaries(paths, st.binary(max_size=64), min_size=1, max_size=8).filter(
    lambda files: not any(is_ignored(p) for p in files)
)


@settings(max_examples=200, deadline=None)
@given(files=bundles, data=st.data())
def test_digest_does_not_depend_on_insertion_order(
    files: dict[str, bytes], data: st.DataObject
) -> None:
    order = data.draw(st.permutations(list(files)))
    assert digest_files({p: files[p] for p in order}) == digest_files(files)


@settings(max_examples=200, deadline=None)
@given(
    files=bundles,
    junk=st.dictionaries(
        st.sampled_from(
            [
                ".git/HEAD",
                "a/node_modules/x",
                "__pycache__/m.py",
                ".venv/y",
                ".DS_Store",
                "x/notes~",
                "a.swp",
                "b/c.pyc",
            ]
        ),
        st.binary(max_size=16),
    ),
)
def test_adding_ignored_paths_does_not_change_digest(
    files: dict[str, bytes], junk: dict[str, bytes]
) -> None:
    assert digest_files({**files, **junk}) == digest_files(files)


@settings(max_examples=200, deadline=None)
@given(files=bundles, data=st.data())
def test_any_byte_change_changes_digest(files: dict[str, bytes], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(sorted(files)))
    original = files[path]
    if original:
        i = data.draw(st.integers(0, len(original) - 1))
        flip = data.draw(st.integers(1, 255))
        changed = original[:i] + bytes([original[i] ^ flip]) + original[i + 1 :]
    else:
        changed = b"\x00"
    assert digest_files({**files, path: changed}) != digest_files(files)
