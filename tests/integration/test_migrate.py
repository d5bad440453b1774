"""`agen migrate` copies every table both ways with ids kept, resumes without doubling, verifies, refuses
what it must (a foreign target, an `agen up` on the source) and changes nothing on a dry run."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agen.ownership import hold_store_for_up, release
from agen.store.copy import copy_all, open_side, verify
from agen.store.copy_schema import copy_plan
from agen.store.copy_sides import Side
from agen.store.locate import locate
from tests.cli_helpers import run_agen

ROWS = 7  # per table; with batches of 3 every keyed table takes three batches


def _check_values() -> dict[tuple[str, str], Any]:
    """A value each CHECK-constrained column accepts, read from the schema (first of its IN list)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    from agen.store.migrate import migrate_sqlite

    migrate_sqlite(conn, ":memory:", 0)
    out: dict[tuple[str, str], Any] = {}
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"):
        for m in re.finditer(r"CHECK\s*\(\s*(\w+)\s+IN\s*\('([^']*)'", sql or ""):
            out[(name, m.group(1))] = m.group(2)
        if re.search(r"CHECK\s*\(\s*score", sql or ""):
            out[(name, "score")] = 0.5
    conn.close()
    return out


def fill(path: Path) -> None:
    """Seven rows in every table the migrations make: the same text value in every text column of a row, so
    foreign keys find their parents; odd values (None, a fraction, bytes, non-ASCII, JSON) on some rows."""
    from agen.store import SQLiteStore

    SQLiteStore.open_sync(path).close_sync()
    checks = _check_values()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    types = {}
    for t in copy_plan():
        info = conn.execute(f'PRAGMA table_info("{t.name}")').fetchall()
        types[t.name] = {r[1]: (str(r[2]).upper(), bool(r[3])) for r in info}
    conn.execute("BEGIN")
    for t in copy_plan():
        for i in range(1, ROWS + 1):
            row = []
            for c in t.columns:
                typ, notnull = types[t.name][c]
                if (t.name, c) in checks:
                    v: Any = checks[(t.name, c)]
                elif i == 2 and not notnull and c not in t.key:
                    v = None
                elif "INT" in typ:
                    v = i
                elif "REAL" in typ:
                    v = i + 0.25
                elif "BLOB" in typ:
                    v = bytes([0, 255, i])
                elif i == 3:
                    v = f"v{i}"
                else:
                    v = f"v{i}" if c in t.key or c.endswith("_id") or c == "id" else f"v{i} é {{}}"
                row.append(v)
            marks = ", ".join("?" * len(row))
            names = ", ".join(f'"{c}"' for c in t.columns)
            conn.execute(f'INSERT INTO "{t.name}" ({names}) VALUES ({marks})', row)
    conn.execute("COMMIT")
    conn.close()


def dump(side: Side) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted, with integral floats as ints (what the checksum canonicalises)."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return bytes(v) if isinstance(v, memoryview) else v

    return {
        t.name: sorted((tuple(norm(v) for v in r) for r in side.scan(t)), key=repr)
        for t in copy_plan()
    }


def url_for(kind: str, tmp_path: Path, name: str, request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("pg_url") if kind == "postgres" else f"sqlite:{tmp_path / name}"


@pytest.mark.parametrize(
    "direction", ["sqlite->sqlite", "sqlite->postgres", "postgres->sqlite"], ids=str
)
def test_every_table_is_copied_with_ids_and_sequences_kept(
    direction: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    src_kind, dst_kind = direction.split("->")
    origin = tmp_path / "origin.db"
    fill(origin)
    src_url = f"sqlite:{origin}"
    if (
        src_kind == "postgres"
    ):  # the Postgres source is itself filled by agen migrate from the filled file
        src_url = request.getfixturevalue("pg_url")
        code, _, err = run_agen(capsys, "migrate", "--from", f"sqlite:{origin}", "--to", src_url)
        assert code == 0, err
    dst_url = url_for(dst_kind, tmp_path, "copy.db", request)

    code, out, err = run_agen(capsys, "migrate", "--from", src_url, "--to", dst_url, "--json")

    assert code == 0, err
    report = json.loads(out)
    assert report["ok"] and {t["table"] for t in report["tables"]} == {t.name for t in copy_plan()}
    assert all(t["source_rows"] == ROWS for t in report["tables"])
    origin_side = open_side(locate(f"sqlite:{origin}"), write=False)
    dst = open_side(locate(dst_url), write=True)
    assert origin_side is not None and dst is not None
    try:
        assert dump(dst) == dump(
            origin_side
        )  # every row, ids included, as the original file holds them
        # generated keys continue after the copied ones
        seq = dst.rows(
            "INSERT INTO events (id, namespace, type, created_ms) VALUES ('new', 'n', 't', 1) RETURNING seq"
        )[0][0]
        assert seq == ROWS + 1
    finally:
        origin_side.close()
        dst.close()
    assert json.loads((Path(request.getfixturevalue("agen_home")) / "store.json").read_text()) == {
        "url": locate(dst_url).store_url,
        "migrated_from": locate(src_url).store_url,
    }


def test_migrate_reads_an_upper_case_postgres_scheme_as_agen_up_does(
    tmp_path: Path, pg_url: str, agen_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A URL scheme is case-insensitive: `agen migrate --to POSTGRESQL://…` copies into the database,
    and the pointer it writes names it in the form libpq reads (lower case)."""
    fill(tmp_path / "a.db")
    shouted = "POSTGRESQL" + pg_url[pg_url.index("://") :]

    code, out, err = run_agen(
        capsys, "migrate", "--from", f"sqlite:{tmp_path / 'a.db'}", "--to", shouted, "--json"
    )

    assert code == 0, err
    assert json.loads(out)["ok"]
    pointed = json.loads((agen_home / "store.json").read_text())["url"]
    assert pointed == "postgresql" + pg_url[pg_url.index("://") :]


def test_a_copy_interrupted_midway_resumes_without_doubling_anything(tmp_path: Path) -> None:
    fill(tmp_path / "a.db")
    source = open_side(locate(f"sqlite:{tmp_path / 'a.db'}"), write=True)
    target = open_side(locate(f"sqlite:{tmp_path / 'b.db'}"), write=True)
    assert source is not None and target is not None

    class Killed(Exception):
        pass

    progress: list[int] = []

    def die_at_the_tenth_report(_table: object, copied: int) -> None:  # after a committed batch
        progress.append(copied)
        if len(progress) == 10:
            raise Killed

    with pytest.raises(Killed):
        copy_all(source, target, batch_rows=3, on_progress=die_at_the_tenth_report)
    partly = sum(target.count(t) for t in copy_plan())
    assert 0 < partly < ROWS * len(copy_plan())
    copy_all(source, target, batch_rows=3)

    assert all(c.ok for c in verify(source, target))
    assert dump(target) == dump(source)
    source.close()
    target.close()


def test_verification_reports_a_row_that_differs_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path / "a.db")
    src, dst = f"sqlite:{tmp_path / 'a.db'}", f"sqlite:{tmp_path / 'b.db'}"
    assert run_agen(capsys, "migrate", "--from", src, "--to", dst)[0] == 0
    with sqlite3.connect(tmp_path / "b.db") as conn:
        conn.execute("UPDATE tasks SET input = 'tampered' WHERE id = 'v4'")

    code, out, err = run_agen(capsys, "migrate", "--from", src, "--to", dst, "--json")

    assert code == 1
    bad = [t for t in json.loads(out)["tables"] if not t["ok"]]
    assert [t["table"] for t in bad] == ["tasks"]
    assert bad[0]["source_rows"] == bad[0]["target_rows"]  # the checksum, not the count, caught it
    assert "verification failed: 1 table(s) differ" in err and "tasks" in err


def test_the_same_migrate_run_again_verifies_again_and_says_what_a_difference_means(
    tmp_path: Path, agen_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After a migrate AGEN_HOME uses the target, so `agen migrate --to TARGET` again (no --from)
    goes back to the store it was copied from and verifies again; once the target has been used, a
    difference is explained as that, not as "AGEN_HOME still uses the source"."""
    fill(tmp_path / "a.db")
    src, dst = f"sqlite:{tmp_path / 'a.db'}", f"sqlite:{tmp_path / 'b.db'}"
    assert run_agen(capsys, "migrate", "--from", src, "--to", dst)[0] == 0

    code, out, err = run_agen(capsys, "migrate", "--to", dst)

    assert code == 0, err
    assert "already uses" in err and str(tmp_path / "a.db") in err
    assert "verified (row counts and checksums match)" in out

    with sqlite3.connect(tmp_path / "b.db") as conn:  # work done on the new store since
        conn.execute("UPDATE tasks SET input = 'later' WHERE id = 'v4'")
    code, _, err = run_agen(capsys, "migrate", "--to", dst)

    assert code == 1
    assert "verification failed" in err and "still uses the source" not in err
    assert f"already used {tmp_path / 'b.db'} before this run and still does" in err
    assert json.loads((agen_home / "store.json").read_text())["url"] == locate(dst).store_url


def test_dry_run_prints_the_tables_and_changes_nothing(
    tmp_path: Path, agen_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path / "a.db")
    before = hashlib.sha256((tmp_path / "a.db").read_bytes()).hexdigest()

    code, out, err = run_agen(
        capsys, "migrate", "--from", str(tmp_path / "a.db"), "--to", f"sqlite:{tmp_path / 'b.db'}",
        "--dry-run", "--json",
    )  # fmt: skip

    assert code == 0, err
    plan = json.loads(out)
    assert plan["target_state"] == "new" and plan["rows"] == ROWS * len(copy_plan())
    assert {t["table"]: t["rows"] for t in plan["tables"]}["tasks"] == ROWS
    assert not (tmp_path / "b.db").exists() and not (agen_home / "store.json").exists()
    assert hashlib.sha256((tmp_path / "a.db").read_bytes()).hexdigest() == before


def test_a_target_holding_other_data_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path / "a.db")
    fill(tmp_path / "other.db")
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute("DELETE FROM tool_rate_calls")
    before = hashlib.sha256((tmp_path / "other.db").read_bytes()).hexdigest()

    code, _, err = run_agen(
        capsys, "migrate", "--from", str(tmp_path / "a.db"), "--to", str(tmp_path / "other.db")
    )

    assert code == 5
    assert "already holds data" in err and "did not copy" in err
    assert hashlib.sha256((tmp_path / "other.db").read_bytes()).hexdigest() == before


def test_migrate_refuses_while_an_agen_up_holds_the_source(
    tmp_path: Path, agen_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path / "a.db")
    up = hold_store_for_up(tmp_path / "a.db", agen_home, lambda _m: None)  # what `agen up` holds
    try:
        code, _, err = run_agen(
            capsys, "migrate", "--from", str(tmp_path / "a.db"), "--to", str(tmp_path / "b.db")
        )
    finally:
        release(up)

    assert code == 5
    assert "agen up (pid" in err and "is running on the source store" in err and "--drain" in err
    assert not (tmp_path / "b.db").exists()


def test_migrate_refuses_a_postgres_source_while_an_agen_up_holds_its_leader_lease(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    from agen.store.base import now_ms

    with psycopg.connect(pg_url) as conn:  # what a running `agen up` on Postgres keeps renewing
        conn.execute(
            "INSERT INTO leases (name, holder, epoch, expires_ms) VALUES ('hub', 'hub-01ABC', 1, %s)",
            (now_ms() + 600_000,),
        )

    code, _, err = run_agen(capsys, "migrate", "--from", pg_url, "--to", str(tmp_path / "b.db"))

    assert code == 5
    assert "hub-01ABC" in err and "is running on the source store" in err and "--drain" in err
    assert not (tmp_path / "b.db").exists()
