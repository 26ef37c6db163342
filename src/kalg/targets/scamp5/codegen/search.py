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

from bisect import insort
from dataclasses import dataclass, field, replace

from kalg.targets.scamp5.codegen.goals import INPUT_KEY, Key, canonical
from kalg.targets.scamp5.codegen.heuristic import Weights
from kalg.targets.scamp5.codegen.limits import Budget, Limits
from kalg.targets.scamp5.codegen.memo import Memo
from kalg.targets.scamp5.codegen.moves import (
    Move,
    Operand,
    Schedule,
    Step,
)
from kalg.targets.scamp5.codegen.network import Network, Terms
from kalg.targets.scamp5.codegen.pressure import counted, expandable, rule
from kalg.targets.scamp5.codegen.scoring import (
    Bag,
    Focus,
    Scorer,
    _Facts,
    _Ranked,
)

LONG = 48
"""Estimated program length beyond which a search gets expansions in proportion to it."""
EXPANSIONS_PER_LEVEL = 1.5
"""...that many times the beam per estimated instruction (the states of one level, and some)..."""
MAX_EXPANSIONS = 6000
"""...but never more than this (a few seconds): a candidate estimated at thousands of
instructions is not worth a longer search (the fallback schedule remains)."""


@dataclass(slots=True, eq=False)
class _State:
    bag: Bag
    keys: tuple[Key, ...]
    """The bag's keys (`_bag_keys`): the state's identity, asked for often."""
    g: int
    facts: _Facts
    """What the search asks of the bag (shared by every state with this bag)."""
    step: Step | None = None
    parent: _State | None = field(default=None, repr=False)
    estimate: float | None = None
    """`Estimator.estimate` of the bag, once the search has asked for it."""

    def steps(self) -> list[Step]:
        """Program order: the state's own step was the *first* instruction of its suffix."""
        out = []
        s: _State | None = self
        while s is not None and s.step is not None:
            out.append(s.step)
            s = s.parent
        return out


def search(net: Network, registers: int, op_set: str, limits: Limits,
           input_register: str = "A", budget: Budget | None = None,
           memo: Memo | None = None) -> list[Schedule]:
    """Schedules for `net` within `registers` live values, shortest first (maybe none).

    One beam search per ranking in `limits.portfolio`, undoing only goals no other goal may read
    (`Focus.TOP`); where that finds nothing, again letting any goal be undone (`Focus.ANY`); if
    still nothing, a register-frugal search that finishes each operand first (`Focus.NEWEST`).
    `memo` shares moves and rankings with other searches of the same network (same result).
    With `budget.longest` set, only schedules of at most that cost are returned, and each
    search stops where the rest of its beam cannot be that short (`Budget.longest`); a search
    that reached the bound counts as having found something (the fallback foci are for
    networks where the first finds no schedule of any length).
    """
    budget = budget or Budget(limits)
    memo = memo or Memo()
    found: list[Schedule] = []
    reached = False
    plan = [(w, f) for w in limits.portfolio if not w.self_difference
            for f in (Focus.TOP, Focus.ANY)]
    plan.append((Weights(pressure=4.0, size=1.0), Focus.NEWEST))
    for weights, focus in plan:
        if budget.spent() or ((found or reached) and focus is not Focus.TOP):
            continue
        scorer = memo.scorer(net, op_set, weights)
        run = _Search(scorer, registers, limits, input_register, focus, budget)
        found += run.run()
        reached = reached or run.beyond
    # Rankings that only add candidates run last, on a budget of their own (one search's
    # expansions): they never take search from the others, so they never lengthen a program.
    for weights in limits.portfolio:
        if weights.self_difference and not budget.late():
            own = Budget(replace(limits, total_expansions=limits.expansions // 3),
                         budget.longest, budget.held)
            own.deadline = budget.deadline  # the call's clock, not a fresh one
            scorer = memo.scorer(net, op_set, weights)
            found += _Search(scorer, registers, limits, input_register, Focus.TOP, own).run()
    return sorted(found, key=lambda s: s.cost)


class _Search:
    """One beam search under one ranking (see the module docstring)."""

    def __init__(self, scorer: Scorer, registers: int, limits: Limits, input_register: str,
                 focus: Focus, budget: Budget):
        self.scorer = scorer
        self.bags = scorer.bags
        self.space = space = scorer.space
        self.gen = scorer.gen
        self.est = scorer.est
        self.registers = registers
        self.limits = limits
        self.outputs = tuple((reg, space.key(space.open(t))) for reg, t in space.net.outputs)
        bound = [key for reg, key in self.outputs if reg == input_register and key != INPUT_KEY]
        self.input_output: Key | None = bound[0] if bound else None
        self.best_g: dict[int, int] = {}
        """Fewest instructions a state of each key tuple (`_Facts.kid`) was reached with."""
        self.found: list[_State] = []
        self.least: int | None = None
        """The fewest instructions of a schedule in `found` (None while it is empty)."""
        self.limit: int | None = None if budget.longest is None else budget.longest + 1
        """A state whose lower bound reaches this many instructions is hopeless: it can
        neither beat `least` nor end within `longest` (None: no bound yet)."""
        self.expanded = 0
        self.focus = focus
        self.budget = budget
        self.longest = budget.longest
        """No schedule costing more is worth finding (None: any): see `Budget.longest`."""
        self.beyond = False
        """Whether the search ended at the bound rather than at its expansion cap: a level, a
        schedule, or (its beam emptied) the lower bound of a state beyond `longest`."""
        self.pruned = False
        """Whether a state was dropped because its lower bound passed `longest`."""

    def run(self) -> list[Schedule]:
        start = self._start()
        if start is None:
            return []
        if _done(start.bag):
            return [Schedule((), self.outputs)]
        if self._hopeless(start.g, start.facts):
            self.beyond = True
            return []
        levels: dict[int, list[_State]] = {0: [start]}
        g = 0
        self.cap = self.limits.expansions
        while (levels and self.budget.left > 0 and not self.budget.full()
               and (self.expanded < self.cap or self._extend(start))):
            g = min(levels)
            if self._enough(g):
                break
            self._expand_level(self._select(levels.pop(g)), levels)
        if not levels and self.pruned:
            self.beyond = True
        done = sorted(self.found, key=lambda s: s.g)[: self.limits.solutions]
        if self.longest is not None:
            done = [s for s in done if s.g <= self.longest]
        return [Schedule(tuple(s.steps()), self.outputs) for s in done]

    def _extend(self, start: _State) -> bool:
        """Whether to go on past `limits.expansions`: only when nothing is found yet and the
        program is estimated longer than `LONG` instructions, up to `EXPANSIONS_PER_LEVEL`
        times the beam per estimated instruction (at most `MAX_EXPANSIONS`; the shared budget
        is raised as far). A beam search expands up to `beam` states per instruction, so a
        fixed cap ends a long chain (a 15x15 Gaussian's 28 factors) before any schedule is
        complete, leaving only the fallback. Called once the fixed cap is reached."""
        if self.found or self.cap > self.limits.expansions or not self.limits.extend:
            return False
        estimate = self._estimate(start)
        if estimate <= LONG:
            return False
        wanted = min(int(EXPANSIONS_PER_LEVEL * self.limits.beam * estimate), MAX_EXPANSIONS)
        if wanted <= self.cap:
            return False
        self.budget.left = max(self.budget.left, wanted - self.cap)
        self.cap = wanted
        return True

    def _enough(self, g: int) -> bool:
        """Once a schedule is found, deeper levels can only hold longer ones; nor can a level
        beyond `longest` lead to a schedule within it."""
        if self.longest is not None and g > self.longest:
            self.beyond = True
            return True
        if self.budget.late():  # --timeout: stop, found or not (the fallback schedule remains)
            return True
        if not self.found:
            return False
        return self.budget.spent() or g >= self.least

    def _start(self) -> _State | None:
        goals: dict[Key, Terms] = {}
        for (_, key), (_, terms) in zip(self.outputs, self.space.net.outputs, strict=True):
            goals.setdefault(key, self.space.open(terms))
        if len(goals) > self.registers:
            return None
        facts = self.scorer.facts(tuple(sorted(goals.items())))
        return _State(facts.bag, facts.keys, 0, facts)

    def _select(self, states: list[_State]) -> list[_State]:
        for s in states:
            if s.estimate is None:
                self._estimate(s)
        ranked = sorted(states, key=_rank)
        return ranked[: self.limits.beam]

    def _estimate(self, state: _State) -> float:
        """The state's estimate, computed once (the estimator memoises by keys as well, but
        building and hashing the key tuple again costs more than keeping the number)."""
        if state.estimate is None:
            state.estimate = self._bag_estimate(state.facts)
        return state.estimate

    def _bag_estimate(self, facts: _Facts) -> float:
        """The estimate of a state whose bag has `facts`: the ranking's work left (kept by
        bag) with this budget's pressure."""
        works = self.scorer.works
        if (work := works.get(facts.bid)) is None:
            work = works[facts.bid] = self.est.work_left(facts.bag)
        return self.est.with_pressure(work, len(facts.bag), self.registers)

    def _expand_level(self, states: list[_State], levels: dict[int, list[_State]]) -> None:
        for state in states:
            if self.expanded >= self.cap or self.budget.left <= 0:
                return
            if self.best_g.get(state.facts.kid, state.g + 1) < state.g:
                continue
            self.expanded += 1
            self.budget.left -= 1
            for child in self._children(state):
                levels.setdefault(child.g, []).append(child)

    def _children(self, state: _State) -> list[_State]:
        """The best children of a state. If the goals it may undo (`pressure.expandable`) have
        no move that fits the budget, any goal may be undone instead."""
        scored, feasible = self._score_children(state, self.focus)
        if not feasible and self.focus is not Focus.ANY:
            scored, _ = self._score_children(state, Focus.ANY)
        scored.sort(key=_scored_rank)
        return [_State(facts.bag, facts.keys, g, facts, step, state, estimate)
                for estimate, _, facts, g, step in scored[: self.limits.children]]

    def _score_children(self, state: _State, focus: Focus):
        """Children of the best `moves` moves that fit, scored (estimate, keys, bag's
        `_Facts`, instructions, step); records complete schedules. A child is made a state
        only once it is kept (found, or among the best scored)."""
        scored = []
        tried = 0
        ranked = self._ranked(state, focus)
        applied = ranked.applied
        shared = self.bags.after
        bid = state.facts.bid
        best_g = self.best_g
        registers = self.registers
        limit = self.limits.moves
        # `_bag_estimate` and `_hopeless`, inlined: this loop runs for every move tried.
        works = self.scorer.works
        work_left = self.est.work_left
        pressure = self.est.w.pressure
        room = registers - 2
        g0 = state.g
        for i, move in enumerate(ranked.moves):
            if tried >= limit:
                break
            if (after := applied[i]) is None:
                if (after := shared.get((bid, id(move)))) is None:
                    after = shared[(bid, id(move))] = self._after(state.facts, move, registers)
                applied[i] = after
            facts, needed, input_live, cost = after
            if needed > registers:
                continue
            if facts is None:  # left unbuilt by a search with fewer registers
                after = applied[i] = shared[(bid, id(move))] = self._after(state.facts, move)
                facts = after[0]
            step = move.step
            # Making the output bound for the input's register while the input is still live
            # means that output cannot go straight to its register: it costs a final move.
            g = g0 + cost + (1 if input_live and self.input_output in step.dests else 0)
            tried += 1
            if facts.done:
                self._complete(_State(facts.bag, facts.keys, g, facts, step, state))
                continue
            kid = facts.kid
            if best_g.get(kid, g + 1) <= g:
                continue
            best_g[kid] = g
            if self.limit is not None and self._hopeless(g, facts):
                continue
            if (work := works.get(facts.bid)) is None:
                work = works[facts.bid] = work_left(facts.bag)
            over = len(facts.bag) - room
            scored.append((work + pressure * (over if over > 0 else 0), facts.keys, facts, g,
                           step))
        return scored, tried > 0

    def _complete(self, state: _State) -> None:
        """Record a complete schedule (its first state)."""
        self.found.append(state)
        g = state.g
        if self.least is None or g < self.least:
            self.least = g
            if self.limit is None or g < self.limit:
                self.limit = g
        if self.longest is not None and g > self.longest:
            self.beyond = True

    def _ranked(self, state: _State, focus: Focus) -> _Ranked:
        """`_promising`'s moves of the state, from the scorer's cache where any search of the
        same network, op set and ranking has ranked the same bag (not under `Focus.NEWEST`,
        whose goals depend on the step just undone)."""
        if focus is Focus.NEWEST:
            return _Ranked(self._promising(state, focus))
        key = (state.facts.bid, focus, self.limits.moves_per_goal)
        if (ranked := self.scorer.states.get(key)) is None:
            ranked = self.scorer.states[key] = _Ranked(self._promising(state, focus))
        return ranked

    def _promising(self, state: _State, focus: Focus) -> list[Move]:
        """Moves ranked by the estimated work they leave (cheap and local), best first: the
        best of each goal's own moves, and every move reusing a value already wanted."""
        facts = state.facts
        present, classes, wanted = self._wanted(facts)
        works: list[float] = []
        moves: list[Move] = []
        goals = self._goals(state, focus)
        keep = self.limits.moves_per_goal
        score = self.scorer.work
        near = self.est.w.self_difference
        merged = self.bags.merges
        for terms in goals:
            own = self.est.goal_cost(terms)
            base = self.scorer.base_moves(terms, keep)
            start = len(works)
            works += base.works
            moves += base.moves
            if not present.isdisjoint(base.keys):  # moves reading a value of the bag
                found = {i for k in present.intersection(base.keys) for i in base.by_key[k]}
                for i in found:
                    works[start + i] = score(base.moves[i], present, classes) - own
            if (merges := merged.get(key := (facts.bid, near, id(terms)))) is None:
                merges = merged[key] = self.gen.merges(terms, present, wanted, near)
            for move in merges:
                works.append(score(move, present, classes) - own)
                moves.append(move)
        # Sorted by work, ties in the order made (the sort is stable).
        return [moves[i] for i in sorted(range(len(moves)), key=works.__getitem__)]

    def _wanted(self, facts: _Facts):
        """The bag's keys, their classes up to translation and sign, and its wanted values
        by canonical key with their anchors (the input is there for free): computed once
        per bag."""
        if (found := facts.wanted) is None:
            present = {k for k, _ in facts.bag}
            classes = {self.est.goal_class(k) for k in present}
            wanted: dict[Key, list[tuple[int, int]]] = {}
            for key in sorted(present | {INPUT_KEY}):
                canon, anchor = canonical(key)
                wanted.setdefault(canon, []).append(anchor)
            found = facts.wanted = (present, classes, wanted)
        return found

    def _goals(self, state: _State, focus: Focus) -> list[Terms]:
        if focus is Focus.TOP:
            facts = state.facts
            if (top := facts.top) is None:
                top = facts.top = expandable(self.space, facts.bag)
            return top
        goals = [t for k, t in state.bag if k != INPUT_KEY]
        if focus is Focus.NEWEST and state.step is not None:
            return [t for k, t in state.bag if k in state.step.srcs and k != INPUT_KEY] or goals
        return goals

    def _hopeless(self, g: int, facts: _Facts) -> bool:
        """Whether a state reached in `g` instructions whose bag has `facts` cannot beat a
        schedule found, nor end within `longest`, by its lower bound (`limit`)."""
        if self.limit is None:
            return False
        if facts.lower is None:
            facts.lower = self.est.lower_bound(facts.bag)
        if g + facts.lower < self.limit:
            return False
        if self.longest is not None and g + facts.lower > self.longest:
            self.pruned = True
        return True

    def _after(self, facts: _Facts, move: Move,
               registers: int | None = None) -> tuple[_Facts | None, int, bool, int]:
        """The bag of `facts` before `move`'s step (its `_Facts`), the registers the step
        needs, whether the input is live across it, and the step's cost: all independent of
        the register budget. Where the step needs more than `registers` (if given), the bag
        is left unbuilt (None): no search with so few registers asks for it, and most moves
        do not fit a tight budget. (The bag's keys are unique and sorted: operands are put in
        place.)"""
        if (prepared := move.prepared) is None:
            prepared = move.prepared = _prepare(move)
        dests, unique, kind, forbidden, cost = prepared
        live = facts.keyset.difference(dests)
        # The step's operands not live across it, one per value (the first).
        added = [p for p in unique if p.key not in live]
        # The values live just before the step: the bag's keys but the step's results (one
        # entry per key), then its new operands.
        needed = counted(kind, forbidden, len(live), len(live) + len(added),
                         [p.key for p in added])
        if registers is not None and needed > registers:
            return None, needed, INPUT_KEY in live, cost
        through = [entry for entry in facts.bag if entry[0] not in dests]
        if added:
            for p in added:
                insort(through, (p.key, self.gen.opened(p)))
        keyset = live.union([p.key for p in added]) if added else live
        return self.bags.facts(tuple(through), keyset), needed, INPUT_KEY in live, cost


def _prepare(move: Move) -> tuple:
    """What `_Search._after` reads of a move, computed once per move (`Move.prepared`): the
    step's results, its operands one per value (the first), `pressure.rule` of its step, and
    its cost."""
    unique: dict[Key, Operand] = {}
    for part in move.operands:
        unique.setdefault(part.key, part)
    step = move.step
    return (step.dests, tuple(unique.values()), *rule(step), step.cost)


def _rank(state: _State) -> tuple[float | None, tuple[Key, ...]]:
    return state.estimate, state.keys


def _scored_rank(child: tuple) -> tuple[float, tuple[Key, ...]]:
    """A scored child's rank (`_Search._score_children`): its estimate, then its keys."""
    return child[0], child[1]


def _done(bag: Bag) -> bool:
    return all(k == INPUT_KEY for k, _ in bag)
