"""What the code generator computes once and reuses across searches: a cache with a lifetime.

A portfolio runs the same decomposition through many searches - the screen and the refines of
a rung of its register ladder, both foci of a ranking - and each would build the same
network, the same reverse moves and the same move rankings again (most of the code generator's
time). None of these depend on the register count or the search budget:

* `network(decomp, cap)`: `network.normalise`;
* `moves(net, op_set)`: the `MoveGen` (every goal's reverse moves, memoised inside);
* `scorer(net, op_set, weights)`: the `Estimator` and the move rankings built on it
  (`scoring.Scorer`).

Everything cached is a pure function of its key, so a search given a `Memo` finds exactly what it
finds without one (same states, same order, same programs): only the time changes. The memory is
held until the `Memo` is dropped: the caller that creates one (a rung of the portfolio, one
candidate search) bounds its lifetime. It is also bounded by a count: a search stops once the
memo holds `limits.HELD_OPERANDS` operands, and `trim` releases a memo past half of that
between searches (docs/robustness.md, "Memory").
"""

from __future__ import annotations

import gc

from kalg import resources
from kalg.algebra.decomp import Decomposition
from kalg.targets.scamp5.codegen import limits
from kalg.targets.scamp5.codegen.goals import Space
from kalg.targets.scamp5.codegen.heuristic import Estimator, Weights
from kalg.targets.scamp5.codegen.moves import MoveGen
from kalg.targets.scamp5.codegen.network import Network, normalise
from kalg.targets.scamp5.codegen.scoring import Bags, Scorer

LEAVE_UNDER_MIB = 512
"""A process that ends with `os._exit` leaves a released memo's contents to its end while its
resident memory is under this (`Memo.release`); above it, memos are freed as elsewhere, so
that a compile with many large searches does not keep them all."""

_LEFT: list[tuple[dict, ...]] = []
"""The contents of the memos left to the process's end."""


class Memo:
    """Networks, move generators and scorers, each built once per key (see the module)."""

    def __init__(self) -> None:
        self._networks: dict[tuple[Decomposition, int], Network] = {}
        self._spaces: dict[Network, Space] = {}
        self._moves: dict[tuple[Network, str], MoveGen] = {}
        self._scorers: dict[tuple[Network, str, Weights], object] = {}
        self._bags: dict[tuple[Network, str], object] = {}

    def network(self, decomp: Decomposition, cap: int) -> Network:
        """`normalise(decomp, cap)`."""
        if (net := self._networks.get((decomp, cap))) is None:
            net = self._networks[(decomp, cap)] = normalise(decomp, cap)
        return net

    def space(self, net: Network) -> Space:
        if (space := self._spaces.get(net)) is None:
            space = self._spaces[net] = Space(net)
        return space

    def held(self) -> int:
        """The operands the memo's move generators hold: what its memory grows with (a count,
        `limits.HELD_OPERANDS`)."""
        return sum(gen.held() for gen in self._moves.values())

    def trim(self, keep: Decomposition) -> None:
        """Make room for the next search, of `keep`, where the memo holds more than half of
        `limits.HELD_OPERANDS`: drop what belongs to other decompositions, and everything if
        `keep`'s own networks still hold more than half: a refine searches the decomposition
        its screen did, and its moves are worth keeping. Searches find the same either way (a
        pure cache); what is dropped depends only on what the memo holds, a count."""
        half = limits.HELD_OPERANDS // 2
        if self.held() <= half:
            return
        kept = {net for (decomp, _), net in self._networks.items() if decomp == keep}
        self._drop(lambda net: net not in kept)
        if self.held() > half:
            self.release()

    def _drop(self, dropped) -> None:
        """Forget the networks for which `dropped(net)` holds, and all built on them."""
        for (net, op_set), gen in list(self._moves.items()):
            if dropped(net):
                gen.release()
                del self._moves[(net, op_set)]
        for net in [net for net in self._spaces if dropped(net)]:
            del self._spaces[net]
        for table in (self._scorers, self._bags):  # keyed (net, op_set, ...)
            for key in [k for k in table if dropped(k[0])]:
                del table[key]
        for key in [k for k, net in self._networks.items() if dropped(net)]:
            del self._networks[key]

    def moves(self, net: Network, op_set: str) -> MoveGen:
        if (gen := self._moves.get((net, op_set))) is None:
            gen = self._moves[(net, op_set)] = MoveGen(self.space(net), op_set)
        return gen

    def release(self) -> None:
        """Drop everything cached. The operands of the move generators link to each other
        (translates, negations: cycles), which only Python's cycle collector would free; the
        links are cut here so that the memory goes back at once, even with the collector
        paused (`pipeline` pauses it during code generation).

        In a process that ends with `os._exit` (`resources.exits_at_once`: the `kalg`
        command), the contents are left to that end instead, while the process holds less
        than `LEAVE_UNDER_MIB` (where the system says how much it holds): freeing millions
        of search states one by one takes a tenth of a median compile, after its searches,
        for memory the exit returns anyway. They are moved out of the collector's sight
        (`gc.freeze`), so that no later collection walks them. The memo is empty afterwards
        either way."""
        resident = resources.resident_mib() if resources.exits_at_once() else None
        if resident is not None and resident < LEAVE_UNDER_MIB:
            _LEFT.append((self._networks, self._spaces, self._moves, self._scorers,
                          self._bags))
            self.__init__()
            gc.freeze()
            return
        for gen in self._moves.values():
            gen.release()
        self._networks.clear()
        self._spaces.clear()
        self._moves.clear()
        self._scorers.clear()
        self._bags.clear()

    def scorer(self, net: Network, op_set: str, weights: Weights):
        """The `scoring.Scorer` of the network, op set and ranking weights; the scorers of one
        network and op set share their `scoring.Bags`."""
        key = (net, op_set, weights)
        if (scorer := self._scorers.get(key)) is None:
            gen = self.moves(net, op_set)
            est = Estimator(gen.space, op_set, weights)
            if (bags := self._bags.get((net, op_set))) is None:
                bags = self._bags[(net, op_set)] = Bags()
            scorer = self._scorers[key] = Scorer(gen, est, bags)
        return scorer
