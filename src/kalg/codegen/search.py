"""Scheduling and instruction selection as one bounded backward search (Cain-style).

Input: a `Network` and a register budget. Output: `Schedule`s — lists of register-free `Step`s in
program order, shortest first — whose live values never exceed the budget.

A search state is the *bag* of values that must be in registers at one program point; the start
state holds the outputs, and each move undoes one instruction (the goal it made leaves the bag,
the values it read join it; equal values merge, which is how work is shared). A state is done
when only the input is left. The bag size, and each instruction's own need (scratch outputs of
div, operands that may not share the result's register), are checked against the budget, so
every schedule found can be register-allocated. The search is a beam over instruction counts,
ranked by `heuristic.Estimator`, bounded by an explicit expansion budget, and deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kalg.codegen.goals import INPUT_KEY, Key, Space, canonical
from kalg.codegen.heuristic import Estimator, Weights
from kalg.codegen.moves import Move, MoveGen, Step
from kalg.codegen.network import Network, Terms

Bag = tuple[tuple[Key, Terms], ...]


@dataclass(frozen=True, slots=True)
class Limits:
    """Search bounds. The result depends only on these, never on the clock."""

    beam: int = 48
    """States kept per instruction count."""
    children: int = 24
    """Best children kept per expanded state."""
    expansions: int = 4000
    """Total states expanded before the search stops with what it has."""
    moves_per_goal: int = 1000
    """Moves kept per goal on their own merit (moves reusing wanted values are always kept)."""
    moves: int = 48
    """Moves per state that get a full evaluation (after a cheap local ranking)."""
    weights: Weights = field(default_factory=Weights)
    """Weights of the ranking estimate."""
    solutions: int = 4
    """Distinct complete schedules to collect (register allocation tries them in order)."""


@dataclass(frozen=True, slots=True)
class _State:
    bag: Bag
    g: int
    step: Step | None = None
    parent: _State | None = field(default=None, repr=False)

    def steps(self) -> list[Step]:
        """Program order: the state's own step was the *first* instruction of its suffix."""
        out = []
        s: _State | None = self
        while s is not None and s.step is not None:
            out.append(s.step)
            s = s.parent
        return out


@dataclass(frozen=True, slots=True)
class Schedule:
    steps: tuple[Step, ...]
    outputs: tuple[tuple[str, Key], ...]

    @property
    def cost(self) -> int:
        return sum(s.cost for s in self.steps)


def search(net: Network, registers: int, op_set: str, limits: Limits,
           input_register: str = "A") -> list[Schedule]:
    """Schedules for `net` within `registers` live values, best first (maybe none)."""
    return _Search(net, registers, op_set, limits, input_register).run()


class _Search:
    def __init__(self, net: Network, registers: int, op_set: str, limits: Limits,
                 input_register: str):
        self.space = Space(net)
        self.est = Estimator(self.space, op_set, limits.weights)
        self.gen = MoveGen(self.space, op_set, self.est.goal_cost, limits.moves_per_goal)
        self.registers = registers
        self.fused = op_set == "all"
        self.limits = limits
        self.outputs = tuple((reg, self.space.key(self.space.open(t))) for reg, t in net.outputs)
        bound = [key for reg, key in self.outputs if reg == input_register and key != INPUT_KEY]
        self.input_output: Key | None = bound[0] if bound else None
        self.best_g: dict[tuple[Key, ...], int] = {}
        self.found: list[_State] = []
        self.expanded = 0

    def run(self) -> list[Schedule]:
        start = self._start()
        if start is None:
            return []
        levels: dict[int, list[_State]] = {0: [start]}
        g = 0
        while levels and self.expanded < self.limits.expansions:
            g = min(levels)
            if self._enough(g):
                break
            self._expand_level(self._select(levels.pop(g)), levels)
        done = sorted(self.found, key=lambda s: (s.g, _bag_keys(s.bag)))
        return [Schedule(tuple(s.steps()), self.outputs) for s in done]

    def _enough(self, g: int) -> bool:
        if len(self.found) < self.limits.solutions:
            return False
        return g >= sorted(s.g for s in self.found)[self.limits.solutions - 1]

    def _start(self) -> _State | None:
        goals: dict[Key, Terms] = {}
        for (_, key), (_, terms) in zip(self.outputs, self.space.net.outputs, strict=True):
            goals.setdefault(key, self.space.open(terms))
        if len(goals) > self.registers:
            return None
        return _State(tuple(sorted(goals.items())), 0)

    def _select(self, states: list[_State]) -> list[_State]:
        ranked = sorted(states, key=lambda s: (self.est.estimate(s.bag), _bag_keys(s.bag)))
        return ranked[: self.limits.beam]

    def _expand_level(self, states: list[_State], levels: dict[int, list[_State]]) -> None:
        for state in states:
            if self.expanded >= self.limits.expansions:
                return
            if self.best_g.get(_bag_keys(state.bag), state.g + 1) < state.g:
                continue
            self.expanded += 1
            for child in self._children(state):
                levels.setdefault(child.g, []).append(child)

    def _children(self, state: _State) -> list[_State]:
        scored = []
        for _terms, move in self._promising(state.bag):
            child = self._apply(state, move)
            if child is None:
                continue
            if _done(child.bag):
                self.found.append(child)
                continue
            keys = _bag_keys(child.bag)
            if self.best_g.get(keys, child.g + 1) <= child.g:
                continue
            self.best_g[keys] = child.g
            if self._hopeless(child):
                continue
            scored.append((self.est.estimate(child.bag), keys, child))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [c for _, _, c in scored[: self.limits.children]]

    def _promising(self, bag: Bag) -> list[tuple[Terms, Move]]:
        """The moves worth a full look: ranked by the estimated work they leave (cheap, local)."""
        present = {k for k, _ in bag}
        classes = {self.est.goal_class(k) for k in present}
        ranked = []
        for i, (terms, move) in enumerate(self._moves(bag)):
            left = -self.est.goal_cost(terms)
            for key, sub in zip(move.step.srcs, move.subgoals, strict=True):
                if key in present:
                    continue
                if self.est.goal_class(key) in classes:
                    left += 1
                    continue
                left += self.est.goal_cost(self.space.open(sub)) + self.est.w.size
            ranked.append((left + move.step.cost, i, terms, move))
        ranked.sort(key=lambda t: (t[0], t[1]))
        return [(t, m) for _, _, t, m in ranked[: self.limits.moves]]

    def _hopeless(self, child: _State) -> bool:
        if len(self.found) < self.limits.solutions:
            return False
        worst = sorted(s.g for s in self.found)[self.limits.solutions - 1]
        return child.g + self.est.lower_bound(child.bag) >= worst

    # ------------------------------------------------------------------ moves
    def _moves(self, bag: Bag) -> list[tuple[Terms, Move]]:
        wanted: dict[Key, list[tuple[int, int]]] = {}
        for key, _ in bag:
            canon, anchor = canonical(key)
            wanted.setdefault(canon, []).append(anchor)
        present = {k for k, _ in bag}
        out = []
        for terms in self._expandable(bag):
            out += [(terms, m) for m in self.gen.moves(terms, present, wanted)]
        return out

    def _expandable(self, bag: Bag) -> list[Terms]:
        """Goals that no other goal may still read: one of them was made last."""
        facts = [(t, frozenset(n for n, *_ in t), self.space.needs(t)) for k, t in bag
                 if k != INPUT_KEY]
        out = []
        for terms, nodes, _ in facts:
            if not any(self._may_read(other, nodes, len(terms)) for other in facts
                       if other[0] is not terms):
                out.append(terms)
        return out

    def _may_read(self, other, nodes: frozenset[int], size: int) -> bool:
        o_terms, o_nodes, o_needs = other
        below = o_needs - o_nodes
        if nodes <= below:
            return True
        return nodes <= o_needs and size < len(o_terms)

    def _apply(self, state: _State, move: Move) -> _State | None:
        step = move.step
        after = dict(state.bag)
        defs = {k for k in step.dests if k in after}
        through = {k: t for k, t in after.items() if k not in defs}
        before = dict(through)
        for key, sub in zip(step.srcs, move.subgoals, strict=True):
            before.setdefault(key, self.space.open(sub))
        if _need(step, set(through), len(before)) > self.registers:
            return None
        bag = tuple(sorted(before.items()))
        return _State(bag, state.g + step.cost + self._clash(step, through), step, state)

    def _clash(self, step: Step, through: dict[Key, Terms]) -> int:
        """1 when this step makes the output bound for the input's register while the input is
        still live: that output cannot go straight to its register and needs a final move."""
        return int(self.input_output in step.dests and INPUT_KEY in through)


def _need(step: Step, through: set[Key], before: int) -> int:
    """Registers in use while `step` runs, given the values live across it."""
    if step.op == "div":
        src = step.srcs[0]
        return len(through - {src}) + 3 + (1 if src in through else 0)
    if step.op in ("divq", "double"):
        return before + 1
    if step.op == "res":
        return len(through) + 1
    dying = [k for k in step.srcs if k not in through]
    forbidden = {step.srcs[-1]} if step.op in ("sub", "subx", "sub2x", "neg") else set()
    reusable = [k for k in dying if k not in forbidden]
    return before if reusable else before + 1


def _bag_keys(bag: Bag) -> tuple[Key, ...]:
    return tuple(k for k, _ in bag)


def _done(bag: Bag) -> bool:
    return all(k == INPUT_KEY for k, _ in bag)
