"""The Manager: the only thing that starts or stops instances in its Nest (seed 000 §5).

Each heartbeat it reports its instances and gets its assignments back (keeping the last
ones while the Hub is unreachable), then reconciles: start missing instances, drain
surplus or outdated ones, replace ones that died (with crash-loop back-off). A separate
loop extends every running task's lease in one call; the Hub answers each lease, and a lost
one stops that run at once.

Live events (agen.domain.live): a Manager whose Hub runs in another process forwards its process's
bus to it in batches (PublishLive, agen.domain.live_batches), from registration to the end of its
drain; beside its Hub (``agen up``) it forwards nothing, the Hub reads the same bus.

Partition (seed 000 §5): a Nest that has not reached the Hub for ``lost_after_ms`` (the Hub's
nest_lost_after, when it places this Nest's instances elsewhere) stops its singletons and starts
none until the Hub answers again, so a singleton never runs on two Nests; pools keep serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from agen.bundle import Bundle, load_bundle_files
from agen.domain.live_batches import LiveBatcher
from agen.errors import AgenError, UnauthenticatedError, UnavailableError
from agen.nest.executor import ExecutorFactory
from agen.nest.instance import Instance
from agen.nest.port import START_FAILED, Assignment, HubPort, InstanceReport
from agen.store import new_ulid, now_ms
from agen.util.backoff import next_backoff
from agen.wire.nests import NEST_LOST_AFTER_MS

log = logging.getLogger("agen.nest")
BACKOFF_BASE_MS = 1_000
BACKOFF_MAX_MS = 60_000
HEALTHY_AFTER_MS = 10_000  # an instance up this long resets its deployment's back-off


class Manager:
    def __init__(
        self,
        port: HubPort,
        *,
        executor_factory: ExecutorFactory,
        name: str = "local",
        capacity: int = 8,
        labels: dict[str, str] | None = None,
        lease_ms: int = 30_000,
        heartbeat_s: float = 1.0,
        drain_timeout_s: float = 300.0,
        clock: Callable[[], int] = now_ms,
        gateway_url: str | None = None,
        waiting_calls: Callable[[], Mapping[tuple[str, str], int]] | None = None,
        factory_for: Callable[[str], ExecutorFactory] | None = None,
        lost_after_ms: int = NEST_LOST_AFTER_MS,
    ) -> None:
        self.port = port
        self.lost_after_ms = lost_after_ms
        """No Hub for this long: stop the singletons (the Hub places them elsewhere after as long)."""
        self.reached_ms = 0
        """When the last call that reached the Hub set out (heartbeat, registration, extension)."""
        self._cut_since: int | None = None
        """When the first call since ``reached_ms`` failed to reach the Hub (None: none has)."""
        self.gateway_url = gateway_url  # this Nest's A2A Gateway, told to the Hub at registration
        self.waiting_calls = waiting_calls
        """The Gateway's calls waiting for an instance, by (namespace, deployment): saturation."""
        self.clock = clock  # ms; the crash-loop back-off and the healthy-instance reset read it
        self.factory = executor_factory
        self.factory_for = factory_for
        """The executor factory for one namespace's instances (``agen nest run --store-for``: its own
        store); it raises for a namespace this Nest does not run. None: ``factory`` for every one."""
        self.name = name
        self.capacity = capacity
        self.labels = labels or {}
        self.lease_ms = lease_ms
        self.heartbeat_s = heartbeat_s
        self.drain_timeout_s = drain_timeout_s
        self.nest_id = ""
        self.instances: dict[str, Instance] = {}
        self.assignments: list[Assignment] = []
        self._bundles: dict[str, Bundle] = {}
        self._secrets: dict[str, dict[str, str]] = {}
        """Platform secret values by deployment id, in memory only: an instance restarted while the
        Hub is unreachable still starts (seed 000 §10)."""
        self._failures: dict[
            str, tuple[int, int]
        ] = {}  # deployment_id -> (the last back-off ms, next start ms)
        self._start_errors: dict[str, str] = {}  # deployment_id -> the last start error logged
        self._final: list[InstanceReport] = []
        self._background: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self._kick = asyncio.Event()
        self.live = LiveBatcher(port.publish_live, f"nest {name}: live events to the Hub")

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        sent = self.clock()
        self.nest_id = await self.port.register(
            self.name, self.capacity, self.labels, gateway_url=self.gateway_url
        )
        self._reached(sent)
        self.port.on_cancel(self._cancelled)
        if not self.port.shares_live_bus():
            self.live.start()

    def _reached(self, sent_ms: int) -> None:
        """A call that set out at ``sent_ms`` reached the Hub: the Hub heard from this Nest no earlier."""
        self.reached_ms = max(self.reached_ms, sent_ms)
        if self._cut_since is not None and self._cut_since <= sent_ms:
            self._cut_since = None

    def _unreached(self) -> None:
        if self._cut_since is None:
            self._cut_since = self.clock()

    def hub_lost(self) -> bool:
        """No call has reached the Hub for lost_after_ms: the Hub counts this Nest lost by now."""
        return self.clock() - self.reached_ms >= self.lost_after_ms

    async def run(self) -> None:
        """Heartbeat + reconcile, and lease extension, until drain() is called."""
        extend = asyncio.create_task(self._extend_loop(), name="nest-extend")
        try:
            while not self._stopping.is_set():
                await self.tick()
                self._kick.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._kick.wait(), timeout=self.heartbeat_s)
        finally:
            extend.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await extend

    def kick(self) -> None:
        self._kick.set()

    def in_flight(self) -> int:
        return sum(len(i.running) for i in self.instances.values())

    async def drain(self, timeout_s: float | None = None) -> None:
        """Stop leasing everywhere; running runs finish their current step and their tasks go back to the
        queue (they resume from their checkpoints later); report the instances stopped."""
        self._stopping.set()
        self._kick.set()
        for inst in self.instances.values():
            inst.stop_leasing()
        timeout = self.drain_timeout_s if timeout_s is None else timeout_s
        extend = asyncio.create_task(self._extend_loop())
        try:
            await asyncio.gather(
                *(i.drain(timeout, stop_runs=True) for i in self.instances.values()),
                *self._background,
            )
        finally:
            extend.cancel()
        if self.nest_id:  # a Nest that never enrolled (its start failed) has nothing to report
            with contextlib.suppress(AgenError, OSError):
                await self.port.report(self.nest_id, [i.report() for i in self.instances.values()])
        self.instances.clear()
        await self.live.stop()  # the drained runs' last events

    # -- one heartbeat ------------------------------------------------------------------------

    async def tick(self) -> None:
        self._reap()
        reports = [i.report() for i in self.instances.values()] + self._final
        sent = self.clock()
        try:
            self.assignments = await self.port.report(
                self.nest_id, reports, saturated=self.saturated()
            )
            self._final = []
            self._reached(sent)
        except UnauthenticatedError:  # revoked: this Nest does not come back (seed 000 §10)
            raise
        except (AgenError, OSError) as e:  # keep serving the last assignments
            self._unreached()
            log.warning(
                "nest %s: cannot reach the Hub (%s); keeping the last assignments", self.name, e
            )
        healthy_since = self.clock() - HEALTHY_AFTER_MS
        for inst in self.instances.values():
            if inst.state == "ready" and inst.started_ms < healthy_since:
                self._failures.pop(inst.deployment_id, None)
        if not self._stopping.is_set():
            await self._reconcile()

    def saturated(self) -> list[str]:
        """Deployments whose A2A callers wait at this Nest's Gateway while every ready instance of
        theirs here is full (seed 000 §5): not while one is starting, which will take a call soon,
        nor with none ready, which is a wake-up (the call's queued task is load already)."""
        waiting = self.waiting_calls() if self.waiting_calls is not None else {}
        out: list[str] = []
        for a in self.assignments:
            if waiting.get((a.namespace, a.deployment), 0) <= 0:
                continue
            mine = [i for i in self.instances.values() if i.deployment_id == a.deployment_id]
            if any(i.state == "starting" for i in mine):
                continue
            ready = [i for i in mine if i.state == "ready"]
            if ready and all(len(i.running) >= max(1, a.max_concurrency) for i in ready):
                out.append(a.deployment_id)
        return out

    def _reap(self) -> None:
        """Forget instances that ended; a crash counts towards the deployment's back-off."""
        for inst in self.instances.values():
            gone = inst.executor.exit_reason() if inst.state == "ready" else None
            if gone is not None:  # its host process exited or hung: replace it
                log.warning(
                    "nest %s: instance %s of %s failed: %s",
                    self.name,
                    inst.id,
                    inst.assignment.deployment,
                    gone,
                )
                inst.fail(gone)
        for inst_id, inst in list(self.instances.items()):
            main = inst._main
            if main is None or not main.done() or inst.running:
                continue
            if inst.state not in ("stopped",):
                exc = main.exception() if not main.cancelled() else None
                reason = inst.exit_reason or (f"exited: {exc!r}" if exc else "exited")
                inst.state, inst.exit_reason = "failed", reason
                self._crashed(inst.deployment_id)
            self._final.append(inst.report())
            del self.instances[inst_id]

    def _crashed(self, deployment_id: str) -> None:
        last, _ = self._failures.get(deployment_id, (0, 0))
        delay = next_backoff(last, BACKOFF_BASE_MS, BACKOFF_MAX_MS)
        self._failures[deployment_id] = (delay, self.clock() + delay)

    async def _reconcile(self) -> None:
        want = {a.deployment_id: a for a in self.assignments}
        lost = self.hub_lost()
        live: dict[str, list[Instance]] = {}
        for inst in list(self.instances.values()):
            if inst.state in ("draining", "stopped", "failed"):
                continue
            a = want.get(inst.deployment_id)
            if a is None or a.paused or a.count == 0 or a.digest != inst.digest:
                self._drain_later(inst)
                continue
            if lost and a.kind == "singleton":
                self._stop_lost_singleton(inst)
                continue
            live.setdefault(inst.deployment_id, []).append(inst)
        for dep_id, a in want.items():
            if lost and a.kind == "singleton":
                continue  # the Hub has placed it elsewhere by now: not here until the Hub answers
            have = live.get(dep_id, [])
            count = 0 if a.paused else a.count
            if len(have) > count:
                for inst in sorted(have, key=lambda i: len(i.running))[: len(have) - count]:
                    self._drain_later(inst)
            for _ in range(count - len(have)):
                _delay, next_ms = self._failures.get(dep_id, (0, 0))
                if next_ms > self.clock():
                    break
                await self._start_instance(a)

    def _drain_later(self, inst: Instance, *, stop_runs: bool = False) -> None:
        inst.stop_leasing()
        task = asyncio.create_task(inst.drain(self.drain_timeout_s, stop_runs=stop_runs))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _stop_lost_singleton(self, inst: Instance) -> None:
        """The Hub has not been reached for lost_after_ms: it counts this Nest lost and places the
        singleton elsewhere, so it stops here; its run stops at its next step, as in a drain (its
        checkpoint is kept, its task's lease runs out and the run resumes where it is placed next)."""
        log.warning(
            "nest %s: no Hub for %.0fs (nest_lost_after %.0fs): stopping singleton %s (instance %s)"
            " so it never runs in two places; it starts here again only when the Hub says so",
            self.name,
            (self.clock() - self.reached_ms) / 1000,
            self.lost_after_ms / 1000,
            inst.assignment.deployment,
            inst.id,
        )
        self._drain_later(inst, stop_runs=True)

    async def _bundle(self, a: Assignment) -> Bundle:
        bundle = self._bundles.get(a.digest)
        if bundle is None:
            bundle = load_bundle_files(await self.port.definition_files(a.definition_id))
            self._bundles[a.digest] = bundle
        return bundle

    async def _platform_secrets(self, a: Assignment, bundle: Bundle) -> dict[str, str]:
        """The deployment's platform secret values from the Hub (the last ones while it is unreachable)."""
        if not any(s.source == "platform" for s in bundle.secrets.secrets.values()):
            return {}
        try:
            values = await self.port.platform_secrets(self.nest_id, a.deployment_id)
        except UnavailableError:
            cached = self._secrets.get(a.deployment_id)
            if cached is None:
                raise
            return cached
        self._secrets[a.deployment_id] = values
        return values

    async def _start_instance(self, a: Assignment) -> None:
        inst_id = new_ulid()
        try:
            bundle = await self._bundle(a)
            factory = self.factory if self.factory_for is None else self.factory_for(a.namespace)
            executor = await factory(bundle, inst_id, await self._platform_secrets(a, bundle))
        except Exception as e:
            if self._start_errors.get(a.deployment_id) != str(
                e
            ):  # once per distinct error, not per attempt
                self._start_errors[a.deployment_id] = str(e)
                log.warning(
                    "nest %s: an instance of %s failed to start: %s (retrying with back-off)",
                    self.name,
                    a.deployment,
                    e,
                )
            self._final.append(
                InstanceReport(
                    id=inst_id,
                    deployment_id=a.deployment_id,
                    digest=a.digest,
                    state="failed",
                    exit_reason=f"{START_FAILED}{e}",
                )
            )
            self._crashed(a.deployment_id)
            return
        self._start_errors.pop(a.deployment_id, None)
        inst = Instance(
            inst_id, a, executor, self.port, self.nest_id, lease_ms=self.lease_ms, clock=self.clock
        )
        self.instances[inst_id] = inst
        main = inst.start()
        main.add_done_callback(lambda _t: self._kick.set())

    # -- leases ---------------------------------------------------------------------------

    async def _extend_loop(self) -> None:
        interval = max(0.2, self.lease_ms / 3000)
        while True:
            await asyncio.sleep(interval)
            await self.extend_leases()

    async def extend_leases(self) -> None:
        """Extend every running task's lease in one call. The Hub answers each lease: a lost one stops
        its run at once, with one line saying so (and for how long the Hub was out of reach, when it
        was); a task that already finished under its lease is simply not extended."""
        refs = [ref for inst in self.instances.values() for ref in inst.refs()]
        if not refs:
            return
        sent, cut_since = self.clock(), self._cut_since
        try:
            answers = await self.port.extend(refs, self.lease_ms)
        except (AgenError, OSError) as e:
            self._unreached()
            log.warning("nest %s: cannot extend leases: %s", self.name, e)
            return
        self._reached(sent)
        for answer in answers:
            if answer.status != "lost":
                continue
            away = (
                ""
                if cut_since is None
                else f", taken over while this Nest was cut off from the Hub"
                f" ({(sent - cut_since) / 1000:.0f}s)"
            )
            log.warning(
                "nest %s: task %s is no longer leased here (%s%s); its run stops here",
                self.name,
                answer.task_id,
                answer.detail or "lease lost",
                away,
            )
            self._cancelled(answer.task_id)

    def _cancelled(self, task_id: str) -> None:
        for inst in self.instances.values():
            inst.lease_lost(task_id)
