"""The leader's scheduler tick: autoscale, place instances on Nests, sweep the queue.

``schedule_tick`` is one transaction run by the Hub leader every tick; it checks the
leader epoch first so a stale leader's writes are refused. Placement is a pure
function: existing instances stay, surplus leaves the most loaded Nest first,
missing instances go to the Nest with the most free capacity (0 = unlimited).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from agen.domain import DeploymentSizing, columns
from agen.hub.leader.autoscaler import ScaleDecision, ScaleInput, ScalePolicy, decide
from agen.hub.leadership import SYSTEM_NAMESPACE, check_epoch
from agen.hub.queue import QueueCounts, budgets, providers, queue_counts
from agen.hub.queue.holds import wake_expired_holds
from agen.hub.queue.lease import expire_leases, expire_overdue
from agen.hub.queue.trees import cancel_overdue
from agen.store import Tx, loads
from agen.wire.nests import NEST_LOST_AFTER_MS

_SIZING_SQL = f"SELECT {columns(DeploymentSizing)} FROM deployments"
SATURATION_FRESH_MS = 15_000
"""How long a Nest's saturation report raises its deployment: it is repeated every heartbeat while
callers wait, so a report this old means they stopped waiting (or the Nest went quiet)."""


@dataclass(frozen=True)
class Scope:
    """What an embedded one-shot (``agen run`` without ``agen up``) schedules: its task's deployment,
    and those its task tree's unfinished child tasks run on, on its own Nest. Everything else (other
    deployments, other Nests, triggers, retention) is left for ``agen up``."""

    deployment_id: str
    nest_id: str
    root_task_id: str | None = None

    def deployment_ids(self, tx: Tx) -> set[str]:
        ids = {self.deployment_id}
        if self.root_task_id:
            ids.update(
                r.deployment_id
                for r in tx.rows(
                    _DeploymentId,
                    "SELECT DISTINCT deployment_id FROM tasks WHERE root_task_id = ?"
                    " AND state IN ('queued', 'leased', 'running', 'waiting')",
                    (self.root_task_id,),
                )
            )
        return ids


class _DeploymentId(NamedTuple):
    deployment_id: str


@dataclass(frozen=True)
class NestView:
    id: str
    labels: dict[str, str]
    capacity: int  # 0 = unlimited


@dataclass(frozen=True)
class Demand:
    deployment_id: str
    desired: int
    labels: dict[str, str]  # placement.labels: a Nest must carry every one


@dataclass
class Placement:
    counts: dict[tuple[str, str], int]  # (deployment_id, nest_id) -> instances
    unplaced: dict[str, int]  # deployment_id -> instances that fit nowhere
    full_nests: dict[str, set[str]] = field(
        default_factory=dict
    )  # deployment_id -> full eligible Nests


def place(
    demands: list[Demand], nests: list[NestView], current: dict[tuple[str, str], int]
) -> Placement:
    """Where each deployment's instances go, starting from the current assignments.

    Existing instances on Nests that still match stay; surplus leaves the most loaded Nest
    (least free capacity) first; missing instances go, one at a time and round-robin over
    deployments, to the matching Nest with the most free capacity. What fits nowhere is
    reported in ``unplaced`` together with the full Nests it could have used.
    """
    books = _keep_current(demands, nests, current)
    need = {d.deployment_id: _trim_surplus(books, d) for d in demands}
    _fill(books, need)
    return books.placement(need)


@dataclass
class _Books:
    """Placement's running tally: what each deployment holds on which Nest, and each Nest's load."""

    cap: dict[str, int]  # nest id -> capacity (0 = unlimited)
    eligible: dict[str, list[NestView]] = field(default_factory=dict)  # deployment -> its Nests
    mine: dict[str, dict[str, int]] = field(default_factory=dict)  # deployment -> nest -> count
    used: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))  # nest -> count

    def free(self, nest: str) -> float:
        return float("inf") if self.cap[nest] == 0 else float(self.cap[nest] - self.used[nest])

    def add(self, dep: str, nest: str, count: int) -> None:
        self.mine[dep][nest] = self.mine[dep].get(nest, 0) + count
        self.used[nest] += count

    def placement(self, need: dict[str, int]) -> Placement:
        unplaced = {dep: n for dep, n in need.items() if n > 0}
        full = {
            dep: {n.id for n in self.eligible[dep] if n.capacity and self.used[n.id] >= n.capacity}
            for dep in unplaced
        }
        counts = {
            (d, nest): c for d, have in self.mine.items() for nest, c in have.items() if c > 0
        }
        return Placement(counts=counts, unplaced=unplaced, full_nests=full)


def _keep_current(
    demands: list[Demand], nests: list[NestView], current: dict[tuple[str, str], int]
) -> _Books:
    """Step 1: existing instances stay where their Nest still carries the deployment's labels."""
    books = _Books(cap={n.id: n.capacity for n in nests})
    allowed: dict[str, set[str]] = {}
    for d in demands:
        books.eligible[d.deployment_id] = [n for n in nests if _matches(n.labels, d.labels)]
        allowed[d.deployment_id] = {n.id for n in books.eligible[d.deployment_id]}
        books.mine[d.deployment_id] = {}
    for (dep, nest), count in current.items():
        if count > 0 and dep in books.mine and nest in allowed[dep]:
            books.add(dep, nest, count)
    return books


def _trim_surplus(books: _Books, d: Demand) -> int:
    """Step 2: surplus leaves the most loaded Nest (least free) first; returns how many are missing."""
    have = books.mine[d.deployment_id]
    surplus = sum(have.values()) - max(0, d.desired)
    while surplus > 0:
        nest = min(have, key=lambda n: (books.free(n), -books.used[n], n))
        take = 1 if len(have) > 1 else surplus
        have[nest] -= take
        books.used[nest] -= take
        surplus -= take
        if have[nest] == 0:
            del have[nest]
    return max(0, d.desired - sum(have.values()))


def _fill(books: _Books, need: dict[str, int]) -> None:
    """Step 3: missing instances go round-robin over deployments, one at a time, each to the
    matching Nest with the most free capacity, until every one is placed or nothing fits."""
    pending = sorted(dep for dep, n in need.items() if n > 0)
    while pending:
        alone = len(pending) == 1
        pending = [dep for dep in pending if _place_some(books, need, dep, alone=alone)]


def _place_some(books: _Books, need: dict[str, int], dep: str, *, alone: bool) -> bool:
    """Place one instance of ``dep`` (or all that fit, where nothing competes); True if it needs more."""
    fits = [n.id for n in books.eligible[dep] if books.free(n.id) > 0]
    if not fits:
        return False
    nest = max(fits, key=lambda n: (books.free(n), -books.used[n], n))
    room = books.free(nest)
    step = need[dep] if room == float("inf") else 1  # unlimited: it stays the most free
    if len(fits) == 1 and alone:
        step = int(min(need[dep], room))
    books.add(dep, nest, step)
    need[dep] -= step
    return need[dep] > 0


def _matches(nest_labels: dict[str, str], wanted: dict[str, str]) -> bool:
    return all(nest_labels.get(k) == v for k, v in wanted.items())


@dataclass
class TickSummary:
    nests_lost: list[str] = field(default_factory=list)
    requeued: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    overdue: list[str] = field(default_factory=list)
    woken: list[str] = field(default_factory=list)
    scaled: dict[str, tuple[int, int]] = field(default_factory=dict)  # deployment id -> (old, new)
    assignments_changed: int = 0
    cancelled: list[str] = field(default_factory=list)
    unplaced: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def held_sets(tx: Tx, now_ms: int) -> tuple[frozenset[str], frozenset[str]]:
    """(budget_held, provider_held) deployment ids for the scheduler tick."""
    return (
        frozenset(budgets.exhausted_deployment_ids(tx, now_ms)),
        frozenset(providers.held_deployment_ids(tx, now_ms)),
    )


def schedule_tick(
    tx: Tx,
    *,
    leader_name: str,
    leader_epoch: int,
    now_ms: int,
    nest_lost_after_ms: int = NEST_LOST_AFTER_MS,
    budget_held: frozenset[str] = frozenset(),
    provider_held: frozenset[str] = frozenset(),
    counts: dict[str, QueueCounts] | None = None,
    scope: Scope | None = None,
) -> TickSummary:
    """One leader tick, epoch-checked: sweep leases/overdue/holds, lose silent Nests, scale, place.

    ``budget_held`` / ``provider_held`` are deployment ids whose daily budget is spent (held
    at 0) or whose provider account is held (no scale-up for queued work). ``counts``: the queue
    counts read just before on a reader (queue.read_queue_counts), so the writer does not scan the
    unfinished tasks; what this tick's sweep requeues is counted by the next tick, a second later.
    ``scope``: an embedded one-shot's tick, which sweeps, scales and places only its deployments on its
    own Nest, and loses no Nests.
    """
    check_epoch(tx, leader_name, leader_epoch)
    s = TickSummary()
    only = scope.deployment_ids(tx) if scope else None
    _sweep(tx, s, now_ms, nest_lost_after_ms, only, scope)
    if counts is None:
        counts = queue_counts(tx, now_ms=now_ms)
    deps = _deployments(tx, only)
    sizing = _Sizing(
        counts, _mark_active(tx, deps, counts, now_ms), now_ms, budget_held, provider_held
    )
    current, digests = _assignments(tx, scope)
    decisions, placed = _scale_and_place(deps, _active_nests(tx, scope), current, sizing)
    s.unplaced = placed.unplaced
    s.scaled = _write_scaling(tx, deps, decisions, counts, now_ms)
    s.assignments_changed = _write_assignments(
        tx, deps, placed, current, digests, leader_epoch, now_ms
    )
    return s


def _sweep(
    tx: Tx,
    s: TickSummary,
    now_ms: int,
    nest_lost_after_ms: int,
    only: set[str] | None,
    scope: Scope | None,
) -> None:
    """Step 1: lose silent Nests, expire leases and overdue tasks, wake holds whose time is up."""
    if scope is None:
        s.nests_lost = _lose_silent_nests(tx, now_ms, nest_lost_after_ms)
    for r in expire_leases(tx, now_ms, deployment_ids=only):
        (s.failed if r.action == "failed" else s.requeued).append(r.task_id)
    s.overdue = expire_overdue(tx, now_ms, deployment_ids=only)
    s.cancelled = cancel_overdue(
        tx, now_ms, deployment_ids=only
    )  # graceful cancels past their grace
    if scope is None:  # a hold's deadline is agen up's to keep; a one-shot's fresh task is not held
        s.woken = wake_expired_holds(tx, now_ms)


def _deployments(tx: Tx, only: set[str] | None) -> list[DeploymentSizing]:
    """Step 2: the deployments this tick scales (all, or a one-shot's own)."""
    return [d for d in tx.rows(DeploymentSizing, _SIZING_SQL) if only is None or d.id in only]


def _mark_active(
    tx: Tx, deps: list[DeploymentSizing], counts: dict[str, QueueCounts], now_ms: int
) -> set[str]:
    """Deployments with queued or running work count as active now; returns their ids."""
    active = [(now_ms, d.id) for d in deps if counts.get(d.id, _NONE).load > 0]
    if active:
        tx.executemany("UPDATE deployments SET last_activity_ms = ? WHERE id = ?", active)
    return {dep for _, dep in active}


class _Nest(NamedTuple):
    id: str
    labels: str  # JSON text
    capacity: int


class _Assignment(NamedTuple):
    """One row of ``assignments`` as placement reads it (``count`` as ``instances``: a tuple has a
    ``count`` method)."""

    deployment_id: str
    nest_id: str
    instances: int
    digest: str


def _active_nests(tx: Tx, scope: Scope | None) -> list[NestView]:
    return [
        NestView(r.id, loads(r.labels, {}), r.capacity)
        for r in tx.rows(
            _Nest, f"SELECT {columns(_Nest)} FROM nests WHERE state = 'active' ORDER BY id"
        )
        if scope is None or r.id == scope.nest_id
    ]


def _assignments(
    tx: Tx, scope: Scope | None
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], str]]:
    """The current assignments: (deployment, nest) -> count, and -> the digest they run."""
    current: dict[tuple[str, str], int] = {}
    digests: dict[tuple[str, str], str] = {}
    for a in tx.rows(
        _Assignment,
        "SELECT deployment_id, nest_id, count AS instances, digest FROM assignments"
        + (" WHERE nest_id = ?" if scope else ""),
        (scope.nest_id,) if scope else (),
    ):
        current[(a.deployment_id, a.nest_id)] = a.instances
        digests[(a.deployment_id, a.nest_id)] = a.digest
    return current, digests


@dataclass(frozen=True)
class _Sizing:
    """What the autoscaler is told about one deployment this tick (``input``)."""

    counts: dict[str, QueueCounts]
    busy: set[str]
    now_ms: int
    budget_held: frozenset[str]
    provider_held: frozenset[str]

    def input(self, d: DeploymentSizing, pressure: bool) -> ScaleInput:
        c = self.counts.get(d.id, _NONE)
        return ScaleInput(
            kind=d.kind,
            policy=ScalePolicy.from_json(d.kind, loads(d.scale, {})),
            current=d.desired,
            load=c.load,
            urgent_load=c.urgent_load,
            paused=d.paused,
            last_activity_ms=self.now_ms if d.id in self.busy else d.last_activity_ms,
            manual_scale_ms=d.manual_scale_ms,
            now_ms=self.now_ms,
            pressure=pressure,
            budget_held=d.id in self.budget_held,
            provider_held=d.id in self.provider_held,
            saturated_want=self._saturated_want(d),
        )

    def _saturated_want(self, d: DeploymentSizing) -> int:
        """What a saturation report asks for while it is fresh (the Nest repeats it each heartbeat
        while its callers wait), else 0."""
        at = d.saturated_ms
        if at is None or self.now_ms - at > SATURATION_FRESH_MS:
            return 0
        return d.saturated_want or 0


def _scale_and_place(
    deps: list[DeploymentSizing],
    nests: list[NestView],
    current: dict[tuple[str, str], int],
    sizing: _Sizing,
) -> tuple[dict[str, ScaleDecision], Placement]:
    """Step 3: decide each deployment's size, place it; under capacity pressure, idle holders of a
    full Nest are asked again (with pressure) and, if any shrinks, placement runs once more."""
    decisions = {d.id: decide(sizing.input(d, False)) for d in deps}
    labels = {d.id: dict(loads(d.placement, {}).get("labels") or {}) for d in deps}

    def demands() -> list[Demand]:
        return [Demand(d.id, decisions[d.id].desired, labels[d.id]) for d in deps]

    placed = place(demands(), nests, current)
    if _make_room(deps, decisions, placed, sizing):
        placed = place(demands(), nests, current)
    return decisions, placed


def _make_room(
    deps: list[DeploymentSizing],
    decisions: dict[str, ScaleDecision],
    placed: Placement,
    sizing: _Sizing,
) -> bool:
    """Capacity pressure: the holders of a full Nest (placed, not waiting) decide again with
    pressure; True if any of them now wants fewer instances (``decisions`` is updated)."""
    full = set().union(*placed.full_nests.values()) if placed.full_nests else set()
    if not full:
        return False
    holders = {dep for (dep, nest) in placed.counts if nest in full and dep not in placed.unplaced}
    changed = False
    for d in deps:
        if d.id in holders:
            again = decide(sizing.input(d, True))
            if again.desired < decisions[d.id].desired:
                decisions[d.id] = again
                changed = True
    return changed


def _write_scaling(
    tx: Tx,
    deps: list[DeploymentSizing],
    decisions: dict[str, ScaleDecision],
    counts: dict[str, QueueCounts],
    now_ms: int,
) -> dict[str, tuple[int, int]]:
    """Step 4: store each new desired size with its ``deployment.scaled`` event."""
    scaled: dict[str, tuple[int, int]] = {}
    for d in deps:
        dec = decisions[d.id]
        if dec.desired == d.desired:
            continue
        tx.execute(
            "UPDATE deployments SET desired = ?, updated_ms = ? WHERE id = ?",
            (dec.desired, now_ms, d.id),
        )
        tx.event(
            d.namespace,
            "deployment.scaled",
            deployment=d.name,
            data={
                "from": d.desired,
                "to": dec.desired,
                "want": dec.want,
                "reason": dec.reason,
                "load": counts.get(d.id, _NONE).load,
            },
        )
        scaled[d.id] = (d.desired, dec.desired)
    return scaled


def _write_assignments(
    tx: Tx,
    deps: list[DeploymentSizing],
    placed: Placement,
    current: dict[tuple[str, str], int],
    digests: dict[tuple[str, str], str],
    leader_epoch: int,
    now_ms: int,
) -> int:
    """Step 5: write the assignments that changed (count or digest), drop the ones that went;
    returns how many rows changed."""
    digest_of = {d.id: d.digest for d in deps}
    upserts = [
        (dep, nest, n, digest_of[dep], leader_epoch, now_ms)
        for (dep, nest), n in placed.counts.items()
        if current.get((dep, nest)) != n or digests.get((dep, nest)) != digest_of[dep]
    ]
    gone = [key for key in current if key not in placed.counts]
    if upserts:
        tx.executemany(
            "INSERT INTO assignments (deployment_id, nest_id, count, digest, leader_epoch, updated_ms)"
            " VALUES (?,?,?,?,?,?) ON CONFLICT (deployment_id, nest_id) DO UPDATE SET count = excluded.count,"
            " digest = excluded.digest, leader_epoch = excluded.leader_epoch, updated_ms = excluded.updated_ms",
            upserts,
        )
    if gone:
        tx.executemany("DELETE FROM assignments WHERE deployment_id = ? AND nest_id = ?", gone)
    return len(upserts) + len(gone)


_NONE = QueueCounts()


def _lose_silent_nests(tx: Tx, now_ms: int, lost_after_ms: int) -> list[str]:
    """Mark Nests lost after heartbeat silence: drop their assignments, expire their task leases now."""
    lost = tx.rows(
        _SilentNest,
        "SELECT id, name FROM nests WHERE state = 'active' AND last_heartbeat_ms < ?",
        (now_ms - lost_after_ms,),
    )
    for n in lost:
        tx.execute("UPDATE nests SET state = 'lost' WHERE id = ? AND state = 'active'", (n.id,))
        tx.execute("DELETE FROM assignments WHERE nest_id = ?", (n.id,))
        tx.execute(
            "UPDATE tasks SET lease_expires_ms = ? WHERE lease_nest_id = ? AND state IN ('leased', 'running')",
            (now_ms, n.id),
        )
        tx.execute(
            "UPDATE instances SET state = 'failed', exit_reason = 'nest lost', updated_ms = ?"
            " WHERE nest_id = ? AND state NOT IN ('stopped', 'failed')",
            (now_ms, n.id),
        )
        tx.event(
            SYSTEM_NAMESPACE,
            "nest.lost",
            severity="warning",
            data={"nest_id": n.id, "nest": n.name, "silent_for_ms": lost_after_ms},
        )
    return [n.id for n in lost]


class _SilentNest(NamedTuple):
    id: str
    name: str
