"""The rankings a search reads that depend on neither the register budget nor the search's
state: `Scorer` (a network's moves ranked under one set of weights) and `Bags` (the bags the
searches meet, with what depends on the bag alone). `memo.Memo` keeps them across searches;
`search` runs on them.
"""

from __future__ import annotations

from enum import Enum

from kalg.targets.scamp5.codegen.goals import INPUT_KEY, Key
from kalg.targets.scamp5.codegen.heuristic import Estimator
from kalg.targets.scamp5.codegen.moves import CentreMove, Move, MoveGen, NearMove, Operand
from kalg.targets.scamp5.codegen.network import Terms

Bag = tuple[tuple[Key, Terms], ...]


class Scorer:
    """The moves of one network and op set ranked under one set of weights, shared by every
    search of them (`memo.Memo`): the ranking of a goal's own moves and the cost of making an
    operand depend on neither the register budget nor the search's state."""

    def __init__(self, gen: MoveGen, est: Estimator, bags: Bags | None = None):
        self.gen = gen
        self.est = est
        self.space = gen.space
        self.bags = bags or Bags()
        """The bags met by the searches of this network and op set, shared with the other
        rankings' scorers (`memo.Memo`): what a bag is does not depend on the ranking."""
        self.works: dict[int, float] = {}
        """`Estimator.work_left` of each bag met (by its number, `_Facts.bid`): this ranking's."""
        self._ranked_base: dict[tuple[Terms, int], _Base] = {}
        self._ranked_all: dict[Terms, tuple[list[tuple[float, int]], list[Move]]] = {}
        """Every own move of a goal ranked: (work, place in `moves`) sorted, and the moves."""
        self._operand_costs: dict[Operand, float] = {}
        self.states: dict[tuple[int, Focus, int], _Ranked] = {}
        """What a search computes of a state that depends on neither the register budget nor
        the search (`_Search._ranked`): every search of this network, op set and ranking that
        reaches the same bag reuses it (a rung's screen and refines, and the rungs of the
        ladder, meet the same states often). Keyed by the bag's number (`facts`)."""

    def facts(self, bag: Bag) -> _Facts:
        """The bag's `_Facts` (`Bags.facts`)."""
        return self.bags.facts(bag)

    def base_moves(self, terms: Terms, keep: int) -> _Base:
        """A goal's own moves, best first, the first `keep` only, with their work less the
        goal's own cost (`_Base`). The whole ranking is made once per goal, whatever `keep`
        asks for (screens and refines differ)."""
        if (ranked := self._ranked_base.get((terms, keep))) is None:
            if (full := self._ranked_all.get(terms)) is None:
                moves = self.gen.base(terms)
                if not self.est.w.self_difference:
                    moves = [m for m in moves if type(m) is not CentreMove]
                empty: set[Key] = set()
                scored = sorted((self.work(m, empty, empty), i) for i, m in enumerate(moves))
                full = self._ranked_all[terms] = (scored, moves)
            # Only the first `keep` are ever read: only they are indexed by operand.
            scored, moves = full
            own = self.est.goal_cost(terms)
            ranked = self._ranked_base[(terms, keep)] = _Base(
                [w - own for w, _ in scored[:keep]], [moves[i] for _, i in scored[:keep]])
        return ranked

    def work(self, move: Move, present: set[Key], classes: set[Key]) -> float:
        """The instruction plus what its operands still need: nothing for a value already
        wanted, a move for a translate of one (or of another operand), else their own cost."""
        total = float(move.step.cost)
        seen: list[Key] = []  # at most 3 operands: a list beats hashing keys into a set
        operands = move.operands
        if type(move) is NearMove and not (present and operands[0].key in present):
            total += 1  # its first operand is one step from a wanted value
            operands = operands[1:]
        costs = self._operand_costs
        for part in operands:
            # Test for emptiness first: `in` hashes its tuple even to search an empty set.
            if present and part.key in present:
                continue
            cls = part.cls
            if (classes and cls in classes) or cls in seen:
                total += 1
                continue
            seen.append(cls)
            if (c := costs.get(part)) is None:
                c = self._operand_cost(part)
            total += c
        return total

    def _operand_cost(self, part: Operand) -> float:
        """What making an operand that is not wanted yet costs (memoised per operand)."""
        if (c := self._operand_costs.get(part)) is None:
            c = self.est.shape_cost(self.gen.shape(part)) + self.est.w.size
            self._operand_costs[part] = c
        return c


class Bags:
    """The bags that the searches of one network and op set meet, under every ranking (the
    `Scorer`s of one `MoveGen` share one: `memo.Memo`), and what depends on the bag alone:
    its `_Facts` (one object per bag, numbered in the order met), what a move leaves of it
    (`after`: `_Search._after`, by the bag's number and the move, the bag left unbuilt until
    a search the move fits asks; every move a search ranks lives as long as this object, in
    `MoveGen`'s lists or in `merges`), and the moves of its
    goals that reuse its wanted values (`merges`: `MoveGen.merges`, by the bag's number,
    whether near moves are asked for, and the goal's terms object, which is the bag's own).
    A pure cache: a search finds the same with a fresh one."""

    __slots__ = ("_facts", "_key_ids", "after", "merges")

    def __init__(self) -> None:
        self._facts: dict[tuple[frozenset[Key], tuple[int, ...]], _Facts] = {}
        self._key_ids: dict[frozenset[Key], int] = {}
        self.after: dict[tuple[int, int], tuple[_Facts | None, int, bool, int]] = {}
        self.merges: dict[tuple[int, bool, int], list[Move]] = {}

    def facts(self, bag: Bag, keyset: frozenset[Key] | None = None) -> _Facts:
        """The bag's `_Facts`; `keyset`: its keys as a set, if the caller has it.

        Looked up by the key set and the identities of the terms objects, not by the bag:
        hashing a bag hashes every tuple in it anew (tuples keep no hash), while a set keeps
        its members' hashes, and a key set with its terms objects is one bag. (Equal terms
        held in two objects would only give the same bag a second, equal `_Facts`: every use
        is a cache of a pure function of the bag. Each `_Facts` keeps its terms alive, so an
        id is never reused while it is a key here.) The keys are unique and sorted, so the key
        set also stands for the key tuple: the state's identity (`kid`)."""
        if keyset is None:
            keyset = frozenset([k for k, _ in bag])
        ident = (keyset, tuple([id(t) for _, t in bag]))
        if (f := self._facts.get(ident)) is None:
            kid = self._key_ids.setdefault(keyset, len(self._key_ids))
            f = self._facts[ident] = _Facts(bag, _bag_keys(bag), keyset, len(self._facts), kid)
        return f


class _Facts:
    """A bag and what the searches ask of it, none of which depends on the register budget
    or the ranking: its keys, its number among the bags (`bid`) and among the key tuples
    (`kid`: the state's identity for `_Search.best_g`), whether it is done, its lower bound,
    the goals that may have been made last (`top`) and the values wanted in it (`wanted`:
    `_Search._wanted`); the last three computed when first asked."""

    __slots__ = ("bag", "bid", "done", "keys", "keyset", "kid", "lower", "top", "wanted")

    def __init__(self, bag: Bag, keys: tuple[Key, ...], keyset: frozenset[Key], bid: int,
                 kid: int):
        self.bag = bag
        self.keys = keys
        self.bid = bid
        self.kid = kid
        self.done = keyset <= _INPUT_ONLY
        self.keyset = keyset
        """The keys as a set (hashed once: sets keep their members' hashes)."""
        self.lower: int | None = None
        self.top: list[Terms] | None = None
        """`pressure.expandable` of the bag: the goals `Focus.TOP` may undo."""
        self.wanted: tuple[set[Key], set[Key], dict[Key, list[tuple[int, int]]]] | None = None


class _Base:
    """A goal's best own moves (`Scorer.base_moves`): `works[i]` is what `moves[i]` leaves to
    do (`Scorer.work` with no bag) less the goal's own cost, `by_key` the places of the moves
    reading each key, and `keys` those keys (a set keeps their hashes: tuples do not), so that
    a search finds the moves reading a value of its bag (which it scores again) without
    trying every move."""

    __slots__ = ("by_key", "keys", "moves", "works")

    def __init__(self, works: list[float], moves: list[Move]):
        self.works = works
        self.moves = moves
        self.by_key: dict[Key, list[int]] = {}
        for i, m in enumerate(moves):
            for k in dict.fromkeys(m.step.srcs):
                self.by_key.setdefault(k, []).append(i)
        self.keys = frozenset(self.by_key)


class _Ranked:
    """A state's moves, best first, and what each leaves once applied (filled as the searches
    apply them): `applied[i]` is None until move i is applied, then (the bag's `_Facts`, the
    registers the step needs, whether the input is live across it, the step's cost), the
    bag None where a search the step did not fit left it unbuilt (`_Search._after`)."""

    __slots__ = ("applied", "moves")

    def __init__(self, moves: list[Move]):
        self.moves = moves
        self.applied: list[tuple[_Facts | None, int, bool, int] | None] = [None] * len(moves)


class Focus(Enum):
    """Which goals of a state the search may undo (which value may have been made last)."""

    TOP = "top"
    """Only goals no other goal may read (`pressure.expandable`): keeps shared work shared."""
    ANY = "any"
    """Any goal: a value may be made after, rather than before, its neighbours."""
    NEWEST = "newest"
    """The operands of the step just undone, while any is left: each operand is finished right
    before its use, which keeps the fewest values alive (the fallback when the budget is tight)."""


_INPUT_ONLY = frozenset([INPUT_KEY])
"""A bag whose keys are within this set is done."""


def _bag_keys(bag: Bag) -> tuple[Key, ...]:
    return tuple([k for k, _ in bag])
