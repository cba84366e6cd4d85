"""The options of the contention solver (`collectives.contention.solve`): `ContentionOptions`,
the names each mode option accepts, and the tags by which the options that change an answer
enter every cached group's signature.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectives.contention_dutycycle import gauss_hermite_standard
from cosim.errors import InputError, UnknownNameError

OFFSET_MODES = ("staggered", "zero", "random")
INFEASIBLE_MODES = ("clip", "bound")
AVERAGE_MODES = ("time", "work")
#: the standard Gauss-Hermite nodes and weights of the duty-cycle solver's normal law (their
#: number enters the duty-cycle tag)
_GH = gauss_hermite_standard()


@dataclass(frozen=True)
class ContentionOptions:
    """Knobs of ``solve``; the defaults are the recommended settings.

    exact_max_jobs: groups with at most this many jobs use the phase simulation, larger
        ones the duty-cycle fixed point (0: always the fixed point).
    offsets / seed / offset_draws: initial phases of the phase simulation (the `collectives.contention`
        module docstring).
    warmup_iters / window_iters / rtol / max_iters / max_events: its measurement window and
        stopping rule (``contention_exact``).
    enum_max_others / dp_max_others: the duty-cycle solver's exact enumeration up to this
        many other jobs on a link, counting law up to the next, normal law beyond.
    elsewhere_correction: others held back by another link load this one less (on by default;
        cuts the fixed point's error on multi-link groups, see its tests).
    dutycycle_average: "time" (mean rate over a job's communication, default) or "work" (mean
        time per unit of work, processor-sharing-like, biased high).
    fixed_point_tol: stop when no duty cycle moves by more than this.
    infeasible_demand: "clip" (trust M, cap d at capacity) or "bound" (trust bytes).
    """

    exact_max_jobs: int = 8
    offsets: str = "staggered"
    seed: int = 0
    offset_draws: int = 1
    warmup_iters: int = 4
    window_iters: int = 8
    rtol: float = 1e-4
    max_iters: int = 4000
    max_events: int = 200_000
    enum_max_others: int = 3
    dp_max_others: int = 256
    elsewhere_correction: bool = True
    dutycycle_average: str = "time"
    fixed_point_tol: float = 1e-4
    infeasible_demand: str = "clip"

    def __post_init__(self) -> None:
        for field, value, valid in (("contention offset mode", self.offsets, OFFSET_MODES),
                                    ("infeasible-demand mode", self.infeasible_demand, INFEASIBLE_MODES),
                                    ("duty-cycle average", self.dutycycle_average, AVERAGE_MODES)):
            if value not in valid:
                raise UnknownNameError(field, value, valid)
        if self.offset_draws < 1 or (self.offset_draws > 1 and self.offsets != "random"):
            raise InputError.at("contention options", field="offset_draws",
                                expected="1, or more with offsets='random'", got=self.offset_draws)

    def exact_tag(self) -> bytes:
        return repr(("exact", self.offsets, self.seed, self.offset_draws, self.warmup_iters,
                     self.window_iters, self.rtol, self.max_iters, self.max_events)).encode()

    def dutycycle_tag(self) -> bytes:
        return repr(("dutycycle", self.enum_max_others, self.dp_max_others, self.elsewhere_correction,
                     self.dutycycle_average, self.fixed_point_tol, _GH[0].shape[0])).encode()

    def tags(self) -> tuple[bytes, bytes]:
        """(exact_tag, dutycycle_tag), built once per options object (they prefix every
        cache key, and a solve may run after every engine event)."""
        t = self.__dict__.get("_tags")
        if t is None:
            t = (self.exact_tag(), self.dutycycle_tag())
            object.__setattr__(self, "_tags", t)
        return t
