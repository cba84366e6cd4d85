"""Per-layer workload files (ASTRA-sim 1.0 format, as used by the Dally paper) and the
communication/compute ratio of a data-parallel iteration on a placement (Dally Table I).

File format (``../shared/data/models/layers/*.csv``): line 1 the parallelism (``DATA``), line 2
the declared layer count, then one tab-separated row per layer::

    name  -1  fwd_cycles  fwd_comm  fwd_bytes  ig_cycles  ig_comm  ig_bytes  wg_cycles  wg_comm  wg_bytes  update

The shipped files carry one more number per file that the export glued to the *start* of every
row after the first and left alone on the last line (e.g. ``18356271features.3``): the sum of
the file's forward cycles. ASTRA-sim reads the file token by token, so it only changes the
layer names; it is stripped from the names and kept as `LayerModel.trailing_value`, unused.
Files may hold fewer rows than declared (the BERT file: 66 of 145, MobileNetV3: 52 of 54); the
rows present are used and the shortfall recorded. ASTRA-sim 1.0's parser (``Workload::
initialize_workload``) reads the missing layers past the end of the file, where every numeric
field repeats the last token read -- the last row's ``update``, 0 in every shipped file -- and
the comm types are empty (no collective): they add nothing.

Semantics (``Workload.cc`` / ``Layer.cc`` of the Dally authors' ASTRA-sim 1.0 fork [R]): with
``DATA`` parallelism only the weight-gradient collective is issued (fwd / ig comm types and
sizes are ignored); its type must be ``ALLREDUCE`` or ``NONE`` here (no collective: the layer
has no gradient exchange and its ``update`` is never applied). Compute time = cycles ×
`compute_scale` / `clock_hz`: ASTRA-sim counts one cycle per ns (1 GHz), and its
``--compute-scale`` multiplies the fwd / ig / wg cycles only [R, notes/dally.md §4.2]
(`DALLY_COMPUTE_SCALE`). The last field, ``update`` (``wg_update_time``), is *not* scaled: when a
layer's all-reduce finishes, ASTRA-sim waits that many more cycles before it counts the
collective as done (``Wight_Grad_Comm_Finished_After_Delay``), so it delays the next forward of
that layer and the end of the run (`LayerModel.update_cycles`, option ``update`` of
`iteration_comm`). The authors' ResNet-50 file carries such delays on 8 layers (1-6 M cycles
each, 27 M in all) and VGG-11's 1 M on ``classifier.0``: at 1 GHz, 1-6 ms per layer running
alongside a scaled compute of 12 ms (ResNet-50); the part that outlasts the iteration is a
tier-independent exposure -- Table I's 12 % for ResNet-50 at both machine and rack.

Overlap (`iteration_comm`): backward runs from the last layer to the first; each layer's weight
gradient is all-reduced (one call per layer: ASTRA-sim's per-layer messages) as soon as its
weight-gradient compute ends (or its whole backward: PyTorch-DDP style), served by one
collective engine or ASTRA-sim's per-dimension pipeline; then either the steady state (the next
forward of layer i waits for layer i's all-reduce; exposed = the waiting) or k passes from a
cold start (exposed = end of the last collective − compute, ASTRA-sim's EndToEnd.csv). The
authors' simulator is `ASTRA_RATIO`; the ASTRA-sim sources it follows are cited there and in
`collectives.multidim.AstraSystem`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from collectives.multidim import DALLY_ASTRA_SYSTEM
from cosim.errors import InputError

#: the Dally artifact's per-model compute multipliers ([R] notes/dally.md §4.2), keyed by file prefix
DALLY_COMPUTE_SCALE = {
    "resnet50": 0.033950, "resnet18": 0.001223, "alexnet": 0.0199, "mobilenet_v3": 0.00639,
    "vgg11": 0.01549, "bert": 0.0001121,
}
#: ASTRA-sim cycle = 1 ns
ASTRA_CLOCK_HZ = 1.0e9
#: weight-gradient collective types this reader accepts (``DATA`` parallelism issues only the
#: weight-gradient collective; other ASTRA-sim types are not modelled and are refused)
WG_COMM_TYPES = ("ALLREDUCE", "NONE")


@dataclass(frozen=True)
class LayerModel:
    name: str
    path: str
    layer_names: tuple[str, ...]
    fwd_cycles: np.ndarray
    ig_cycles: np.ndarray
    wg_cycles: np.ndarray
    wg_bytes: np.ndarray
    declared_layers: int
    trailing_value: int | None = None
    #: per layer, ASTRA-sim's ``wg_update_time`` (cycles, not compute-scaled); None = zeros
    update_cycles: np.ndarray | None = None

    def update_s(self, clock_hz: float = ASTRA_CLOCK_HZ) -> np.ndarray:
        """Seconds each layer's all-reduce completion is held back (ASTRA-sim's update delay)."""
        if self.update_cycles is None:
            return np.zeros(len(self.fwd_cycles))
        return np.asarray(self.update_cycles, dtype=np.float64) / clock_hz

    @property
    def grad_bytes(self) -> float:
        return float(self.wg_bytes.sum())

    def compute_scale(self) -> float:
        """The Dally artifact's multiplier for this model (1.0 when unknown)."""
        key = self.name.lower()
        for prefix, scale in DALLY_COMPUTE_SCALE.items():
            if key.startswith(prefix):
                return scale
        return 1.0

    def compute_s(self, clock_hz: float = ASTRA_CLOCK_HZ, compute_scale: float | None = None) -> float:
        scale = self.compute_scale() if compute_scale is None else compute_scale
        cycles = self.fwd_cycles.sum() + self.ig_cycles.sum() + self.wg_cycles.sum()
        return float(cycles * scale / clock_hz)


def read_layers(path: str | Path) -> LayerModel:
    """Parse one per-layer workload file; errors name the file, row and field."""
    p = Path(path)
    lines = [ln.rstrip("\r") for ln in p.read_text().split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 3 or lines[0].strip() != "DATA":
        raise InputError.at(p, row=1, expected="first line 'DATA' (data-parallel workload)",
                            got=lines[0] if lines else "")
    try:
        declared = int(lines[1].strip())
    except ValueError:
        raise InputError.at(p, row=2, field="layer count", expected="an integer", got=lines[1]) from None
    rows = lines[2:]
    trailing = None
    if rows and re.fullmatch(r"\d+", rows[-1].strip()):
        trailing = rows.pop().strip()
    names, fwd, ig, wg, size, upd = [], [], [], [], [], []
    for r, line in enumerate(rows, start=3):
        f = line.split("\t")
        if len(f) < 12:
            raise InputError.at(p, row=r, expected="12 tab-separated fields", got=len(f))
        name = f[0]
        if trailing and r > 3 and name.startswith(trailing):
            name = name[len(trailing):]
        try:
            vals = [float(f[i]) for i in (2, 5, 8, 10, 11)]
        except ValueError:
            raise InputError.at(p, row=r, field="cycles/bytes", expected="numbers", got=line[:60]) from None
        if min(vals) < 0:
            raise InputError.at(p, row=r, expected="non-negative cycles and bytes", got=vals)
        kind = f[9].strip().upper()
        if kind not in WG_COMM_TYPES:
            raise InputError.at(p, row=r, field="wg comm type", expected=" | ".join(WG_COMM_TYPES), got=f[9])
        names.append(name)
        fwd.append(vals[0])
        ig.append(vals[1])
        wg.append(vals[2])
        size.append(vals[3] if kind == "ALLREDUCE" else 0.0)
        upd.append(vals[4])
    if not names:
        raise InputError.at(p, expected="at least one layer row")
    stem = p.stem.split("_B")[0]
    return LayerModel(stem, str(p), tuple(names), np.array(fwd), np.array(ig), np.array(wg), np.array(size),
                      declared, int(trailing) if trailing else None, np.array(upd))


#: ASTRA-sim 1.0 per-step constants of the authors' run (`astra_ring_stages`, option ``ticks`` of
#: `iteration_comm`): the system file's ``endpoint-delay: 10`` cycles (one ``MemBus`` hand-off
#: between the NPU and the collective engine, 1 cycle = 1 ns); the analytical backend's ``main``
#: builds each NPU's memory as ``SimpleMemory(NI, 1, 500000, 12.5)``, whose ``npu_mem_read`` /
#: ``npu_mem_write`` take bytes / 500000 GB/s (= B/ns), truncated to whole ns.
ASTRA_ENDPOINT_DELAY_S = 10e-9
ASTRA_NPU_MEMORY_GBps = 500000.0
#: how `comm_ratio` prices one dimension's phase of an ASTRA-sim collective: ``alpha_beta`` --
#: `collectives.multidim.astra_stages` (2(u−1) steps of α + link latency + bytes / bandwidth);
#: ``astra_steps`` -- `astra_ring_stages`, ASTRA-sim 1.0's own event chain of a ring phase
#: (hand-offs, reduction memory operations and whole-ns message latencies).
PHASE_COST = ("alpha_beta", "astra_steps")
SCHEDULING = ("fifo", "lifo")
ISSUE = ("after_ig", "after_wg")
#: what `iteration_comm` does with `LayerModel.update_cycles`: ``unscaled`` -- ASTRA-sim 1.0:
#: a layer's all-reduce counts as done `update_cycles` / `clock_hz` after it ends (its parser
#: applies ``--compute-scale`` to fwd / ig / wg cycles but passes ``wg_update_time`` as is);
#: ``scaled`` -- the same delay times the compute scale; ``none`` -- ignored (a PyTorch-DDP
#: style loop has no such delay).
UPDATE = ("unscaled", "scaled", "none")
#: the Dally authors' simulator loop (ASTRA-sim 1.0 ``Workload::iterate_data_parallel`` with
#: their system file ``scheduling-policy: LIFO``): per layer, from the last, the weight
#: gradient, then its all-reduce is issued (non-blocking), then the input gradient (none for
#: layer 0); waiting collectives are served latest-issued first; each all-reduce's completion
#: is held back by the layer's unscaled ``update`` cycles. One pass (`passes=1`): ArtISt-sim's
#: command line (``IntraJobScheduler.astra_sim`` [R]) gives no ``--num-passes`` and the
#: analytical backend's default is 1 (``num_passes = 1`` in its ``main``); the ratio it reads
#: is EndToEnd.csv's "total exposed comm" / "total comp", where exposed = the tick at which
#: the last collective (update delay included) finished − the total compute. ``ticks``: the
#: loop runs on whole cycles -- each scaled compute is truncated to an integer ``Tick`` (the
#: parser multiplies the cycles by the ``float`` compute scale and passes the product as a
#: ``Tick``) and every state change of ``iterate_data_parallel`` is a 1-cycle event, for all
#: the declared layers (rows missing from a file are zero-compute layers that still step).
#: Options of `iteration_comm`.
ASTRA_LOOP = dict(scheduling="lifo", issue="after_wg", passes=1, update="unscaled", ticks=True)
#: `comm_ratio` options of the authors' simulator: `ASTRA_LOOP` plus the per-dimension pipeline
#: (``active-chunks-per-dimension: 1`` → one running stream per dimension queue; waiting
#: streams ordered by priority, LIFO = latest issued first: ``Sys::insert_stream``) with
#: ASTRA-sim 1.0's collective plan and link semantics (`collectives.multidim.AstraSystem`:
#: ``collective-optimization: baseline`` = a whole all-reduce per dimension, link-bandwidth in
#: GiB/s, links-count bandwidth scalars), one chunk per collective
#: (``preferred-dataset-splits: 1``), each phase priced by ASTRA-sim's own step chain
#: (``phase_cost="astra_steps"``, `astra_ring_stages`).
ASTRA_RATIO = dict(ASTRA_LOOP, pipeline=True, system=DALLY_ASTRA_SYSTEM, phase_cost="astra_steps")


def _tier_alpha_s(tier: str, params) -> float:
    """The CommParams α that `collectives.multidim` adds to a level's per-step latency."""
    if tier == "intra":
        return params.alpha_intra_s
    a = params.alpha_net_s
    if tier in ("spine", "core"):
        a += params.alpha_spine_s
    if tier == "core":
        a += params.alpha_core_s
    return a


def astra_ring_stages(levels: list, nbytes: float, system=DALLY_ASTRA_SYSTEM, params=None,
                      endpoint_s: float = ASTRA_ENDPOINT_DELAY_S,
                      memory_GBps: float = ASTRA_NPU_MEMORY_GBps) -> tuple[np.ndarray, np.ndarray]:
    """One all-reduce of `nbytes` under ``collective-optimization: baseline`` as ASTRA-sim 1.0
    runs it, one ring all-reduce phase per dimension (seconds[j], queue[j] = level index).

    The event chain of ``Ring`` on u units (``Ring.cc``, ``PacketBundle``, ``MemBus``): the
    phase starts with one NPU→engine hand-off, sends 2(u−1) messages of ⌊S/u⌋ bytes one after
    the other, and every received message is handed back (one more hand-off) before the next
    send; the first u−1 received messages are reduced (``mem_write`` + 2 ``mem_read`` of the
    message). Hand-off = `endpoint_s` (``endpoint-delay``; ``MemBus`` charges it whether the
    transfer is ``Fast`` or ``Usual``); memory op = ⌊msg / `memory_GBps`⌋ ns (the analytical
    main's ``SimpleMemory``); message = the analytical backend's ``HierarchicalTopology::send``:
    hops × link latency + msg / (link bandwidth × links-count scalar, read as GiB/s), held in an
    ``int`` (``auto communication_latency = 0``), so truncated to whole ns. Phase time =
    (2u−1)·ε + 2(u−1)·⌊λ + msg/B⌋ + (u−1)·3·⌊msg/M⌋. The α–β form (`collectives.multidim.
    astra_stages`) charges 2(u−1)·(ε + λ + msg/B): one hand-off fewer per phase, no reduction
    cost, no truncation. Link latency λ = the level's per-step latency minus the CommParams α
    that `collectives.multidim` folds into it (`params`, a CommParams; None: α = 0). Only the
    ring implementation (the authors' ``ring_ring`` system file) and the baseline plan are
    modelled here."""
    from collectives.multidim import ASTRA_GIB, links_scalar

    if system.optimization != "baseline":
        raise InputError.at(field="collective-optimization", expected="baseline (astra_steps)",
                            got=system.optimization)
    f = ASTRA_GIB if system.gib else 1.0
    eps_ns = endpoint_s * 1e9
    secs, queues = [], []
    for j, lv in enumerate(levels):
        u = int(lv.units)
        if u <= 1:
            continue
        if lv.algorithm != "ring":
            raise InputError.at(field="all-reduce-implementation", expected="ring (astra_steps)",
                                got=lv.algorithm)
        alpha = 0.0 if params is None else _tier_alpha_s(lv.tier, params)
        link_ns = round((lv.latency_s - alpha) * 1e9, 6)
        B_per_ns = lv.Bps * f * (links_scalar(lv.topology, u) if system.links else 1) / 1e9
        msg = int(nbytes) // u
        step_ns = np.floor(link_ns + msg / B_per_ns)
        mem_ns = 3.0 * np.floor(msg / memory_GBps)
        secs.append(((2 * u - 1) * eps_ns + 2 * (u - 1) * step_ns + (u - 1) * mem_ns) * 1e-9)
        queues.append(j)
    return np.array(secs, dtype=np.float64), np.array(queues, dtype=np.int64)


def _serve(ready: np.ndarray, comm_s: np.ndarray, order: list[int], scheduling: str, free: float) -> np.ndarray:
    """One non-preemptive collective engine: end time of every request in `order` (issue order)."""
    end = np.zeros(len(ready))
    pending = list(order)
    while pending:
        j = 0
        if scheduling == "lifo":   # the latest issued among those ready when the engine frees up
            ready_now = [x for x in range(len(pending)) if ready[pending[x]] <= free]
            j = ready_now[-1] if ready_now else 0
        i = pending.pop(j)
        free = end[i] = max(ready[i], free) + comm_s[i]
    return end


def _serve_stages(ready: np.ndarray, stages: list, order: list[int], scheduling: str, free: float) -> np.ndarray:
    """ASTRA-sim's collective pipeline: every dimension (queue) runs one collective stage at a
    time (``active-chunks-per-dimension: 1``), non-preemptive; a collective moves to its next
    stage's queue when a stage ends; a free queue serves the waiting stage of highest priority
    (``lifo``: the latest issued collective, ``fifo``: the earliest). List scheduling in time
    order: the next dispatch is always the earliest possible start over all queues."""
    L = len(ready)
    end = np.zeros(L)
    prio = {i: (r if scheduling == "lifo" else -r) for r, i in enumerate(order)}
    avail = {i: ready[i] for i in order}
    nxt = {i: 0 for i in order}
    qfree: dict[int, float] = {}
    live = [i for i in order if len(stages[i][0])]
    for i in order:
        if not len(stages[i][0]):
            end[i] = ready[i]
    while live:
        best = None
        for q in {int(stages[i][1][nxt[i]]) for i in live}:
            waiting = [i for i in live if stages[i][1][nxt[i]] == q]
            start = max(qfree.get(q, free), min(avail[i] for i in waiting))
            cand = max((i for i in waiting if avail[i] <= start), key=lambda i: prio[i])
            if best is None or start < best[0] or (start == best[0] and q < best[1]):
                best = (start, q, cand)
        start, q, i = best
        t_end = start + stages[i][0][nxt[i]]
        qfree[q] = avail[i] = t_end
        nxt[i] += 1
        if nxt[i] == len(stages[i][0]):
            end[i] = t_end
            live.remove(i)
    return end


def iteration_comm(model: LayerModel, comm_s: np.ndarray, clock_hz: float = ASTRA_CLOCK_HZ,
                   compute_scale: float | None = None, scheduling: str = "fifo", issue: str = "after_ig",
                   passes: int | None = None, stages: list | None = None,
                   update: str = "none", ticks: bool = False) -> tuple[float, float]:
    """(compute seconds, exposed communication seconds) of one data-parallel iteration.

    `comm_s[i]` is the all-reduce time of layer i's gradient on the placement. Options (the
    Dally authors' simulator is `ASTRA_LOOP`):

    - `scheduling`: which ready all-reduce the one-at-a-time, non-preemptive collective engine
      serves next — ``fifo`` in issue order, or ``lifo`` the most recently issued (ASTRA-sim's
      ``scheduling-policy: LIFO``: earlier layers, which the next forward needs first, jump
      the queue);
    - `issue`: ``after_ig`` — a layer's all-reduce starts when its whole backward (input +
      weight gradient) is done (PyTorch DDP); ``after_wg`` — ASTRA-sim's loop: weight gradient,
      issue its all-reduce, then the input gradient, which layer 0 skips (compute excludes it);
    - `passes`: None — steady state: the next iteration's forward of layer i waits for layer
      i's all-reduce, exposed = that waiting; k ≥ 1 — simulate k passes from a cold start and
      end when every all-reduce is done (ASTRA-sim's run): exposed = (end − k·compute) / k;
    - `stages`: None — one collective engine, layer i's all-reduce takes `comm_s[i]`; or per
      layer (seconds[], queue[]) from `CommModel.multidim_stages` or
      `collectives.multidim.astra_stages` — ASTRA-sim's per-dimension pipeline
      (`_serve_stages`): a later layer's stage in the machine dimension overlaps an earlier
      layer's stage in the rack dimension;
    - `update` (`UPDATE`): ``unscaled`` -- ASTRA-sim's per-layer ``wg_update_time``: layer i's
      all-reduce counts as done `update_cycles[i]` / `clock_hz` after its last stage ends (the
      collective engines are free meanwhile); it gates the next forward of layer i and, with
      `passes`, the end of the run; only layers that issue an all-reduce have it;
    - `ticks`: ASTRA-sim's whole-cycle loop (see `ASTRA_LOOP`): each layer's scaled fwd / ig /
      wg cycles truncated to an integer after a ``float`` (32-bit) multiplication, and one
      cycle (1 / `clock_hz`) per loop state change -- after every forward, after every
      weight gradient (the issue) and after every input gradient -- for all
      `LayerModel.declared_layers` (missing rows step through with zero compute). The
      transitions take time but are not compute, as in ASTRA-sim's report.
    """
    if scheduling not in SCHEDULING:
        raise InputError.at(field="scheduling", expected=" | ".join(SCHEDULING), got=scheduling)
    if issue not in ISSUE:
        raise InputError.at(field="issue", expected=" | ".join(ISSUE), got=issue)
    if update not in UPDATE:
        raise InputError.at(field="update", expected=" | ".join(UPDATE), got=update)
    scale = model.compute_scale() if compute_scale is None else compute_scale
    hold = np.zeros(len(model.fwd_cycles)) if update == "none" else model.update_s(clock_hz)
    if update == "scaled":
        hold = hold * scale
    if ticks:   # Tick(cycles × float compute_scale): float32 product, truncated
        s32 = np.float32(scale)

        def cyc(c):
            return np.floor((np.asarray(c, dtype=np.float32) * s32).astype(np.float64)) / clock_hz
        f, wg, ig = cyc(model.fwd_cycles), cyc(model.wg_cycles), cyc(model.ig_cycles)
    else:
        f = model.fwd_cycles * scale / clock_hz
        wg = model.wg_cycles * scale / clock_hz
        ig = model.ig_cycles * scale / clock_hz
    L = len(f)
    tick = 1.0 / clock_hz if ticks else 0.0
    phantom = max(0, int(model.declared_layers) - L) if ticks else 0
    if issue == "after_wg":
        ig = ig.copy()
        ig[0] = 0.0
        first, second = wg, ig      # issue after `first`
    else:
        first, second = ig + wg, np.zeros(L)
    compute = float(f.sum() + first.sum() + second.sum())
    order = [i for i in range(L - 1, -1, -1) if comm_s[i] > 0]

    def backward(t: float) -> tuple[float, np.ndarray]:
        t += 2 * phantom * tick        # the declared layers past the file's rows: wg, ig steps
        ready = np.zeros(L)
        for i in range(L - 1, -1, -1):
            t += first[i]
            ready[i] = t
            t += tick                   # issue → next state
            if i > 0 or issue != "after_wg":
                t += second[i] + tick * (i > 0)
        return t, ready

    fwd_s = float(f.sum()) + (L + phantom) * tick
    if passes is None:
        t, ready = backward(fwd_s)
        comm_end = (_serve(ready, comm_s, order, scheduling, 0.0) if stages is None
                    else _serve_stages(ready, stages, order, scheduling, 0.0))
        comm_end = np.where(comm_s > 0, comm_end + hold, comm_end)
        cursor = t
        for i in range(L):
            cursor = max(cursor, comm_end[i]) + f[i] + tick
        return compute, float(cursor + phantom * tick - t - fwd_s)
    if int(passes) < 1:
        raise InputError.at(field="passes", expected="None or a positive integer", got=passes)
    t, comm_end, free = 0.0, np.zeros(L), 0.0
    for _ in range(int(passes)):
        for i in range(L):
            t = max(t, comm_end[i]) + f[i] + tick
        t, ready = backward(t + phantom * tick)
        engine_end = (_serve(ready, comm_s, order, scheduling, free) if stages is None
                      else _serve_stages(ready, stages, order, scheduling, free))
        free = float(engine_end.max()) if order else free
        comm_end = np.where(comm_s > 0, engine_end + hold, engine_end)
    end = max(t, float(comm_end.max()) if order else t)
    return compute, float(end / int(passes) - compute)


def comm_ratio(model: LayerModel, comm_model, gpus: np.ndarray, algorithm: str = "auto",
               clock_hz: float = ASTRA_CLOCK_HZ, compute_scale: float | None = None,
               scheduling: str = "fifo", issue: str = "after_ig", passes: int | None = None,
               pipeline: bool = False, update: str = "none", system=None, phase_cost: str = "alpha_beta",
               ticks: bool = False) -> float:
    """Exposed communication as a fraction of compute (Dally Table I's metric) on `gpus`.

    `pipeline`: with the ``multidim`` collective, run ASTRA-sim's per-dimension pipeline
    instead of one all-reduce at a time; its stages come from `CommModel.multidim_stages`
    (hierarchical reduce-scatter / all-gather, the preset's links as given), or, with
    `system` (`collectives.multidim.AstraSystem`, e.g. ``DALLY_ASTRA_SYSTEM``), from
    `collectives.multidim.astra_stages`: ASTRA-sim 1.0's own collective plan and link
    semantics; `phase_cost` (`PHASE_COST`) prices each of those phases by the α–β form or by
    ASTRA-sim's step chain (`astra_ring_stages`, which needs `system`). The other options go
    to `iteration_comm`."""
    if phase_cost not in PHASE_COST:
        raise InputError.at(field="phase_cost", expected=" | ".join(PHASE_COST), got=phase_cost)
    if phase_cost == "astra_steps" and not (pipeline and system is not None):
        raise InputError.at(field="phase_cost", got=phase_cost,
                            expected="astra_steps only with pipeline=True and an AstraSystem")
    if len(gpus) <= 1:
        return 0.0
    gpus = np.asarray(gpus, dtype=np.int64)
    stages = None
    if pipeline and system is not None:
        from collectives.multidim import astra_stages, multidim_cost
        from collectives.shape import placement_shape

        shape = placement_shape(comm_model.topo, gpus)
        res = multidim_cost(comm_model.topo, shape, "allreduce", comm_model.params)
        levels = res[3] if res is not None else []
        first = int(shape.counts.min())
        if phase_cost == "astra_steps":
            stages = [astra_ring_stages(levels, s, system, comm_model.params) if s > 0
                      else (np.zeros(0), np.zeros(0, np.int64)) for s in model.wg_bytes]
        else:
            stages = [astra_stages(levels, first, s, system, comm_model.params.base_latency_s) if s > 0
                      else (np.zeros(0), np.zeros(0, np.int64)) for s in model.wg_bytes]
        comm = np.array([float(st[0].sum()) for st in stages])
    else:
        comm = np.array([comm_model.allreduce(gpus, s, np.array([s]), algorithm=algorithm).seconds if s > 0 else 0.0
                         for s in model.wg_bytes])
        if pipeline:
            stages = [comm_model.multidim_stages(gpus, s) if s > 0 else (np.zeros(0), np.zeros(0, np.int64))
                      for s in model.wg_bytes]
    compute, exposed = iteration_comm(model, comm, clock_hz, compute_scale, scheduling, issue, passes, stages,
                                      update, ticks)
    return exposed / compute
