"""The e-graph engine: the only module that imports egglog.

Input: egglog text for the facts (terms, seeded unions, `let`s) and a schedule of rule families from
`rules/*.egg`. Output: the serialised e-graph (egraph-serialize JSON) and a `SaturationReport`.

One egglog iteration cannot be interrupted and can use tens of GiB, so saturation runs in a child
process (forked; a fresh interpreter where this process has other threads) under an address-space
limit (RLIMIT_AS) and a wall-clock watchdog; node and time caps are checked between iterations.
A child that runs out of memory or time becomes a clear `ResourceLimitError`, never a crashed
machine.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import multiprocessing as mp
import pickle
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kalg.diagnostics import KalgError, ResourceLimitError
from kalg.resources import cap_address_space, rules_dir, threads

HEADER = "kernel.egg"
"""Declares the sorts; loaded before every family."""


class RuleLoadError(KalgError):
    """A rule file does not load (egglog's parse or type error, with the file's name)."""


@dataclass(frozen=True, slots=True)
class SaturationLimits:
    """Bounds on one saturation. The counts (`iterations`, `nodes`) and the memory cap decide
    where it stops, so the e-graph is the same on any machine. `seconds` (None by default) is
    a wall-clock cap asked for by the user (`--time-limit`, `--timeout`): checked between
    iterations, and the child is killed at `seconds` × 3 + 5 whatever happens."""

    iterations: int = 12
    nodes: int = 30_000
    seconds: float | None = None
    memory_mib: int = 3072

    def kill_after(self) -> float | None:
        """Seconds after which the child is killed (None: never, it ends by its counts)."""
        return None if self.seconds is None else self.seconds * 3 + 5


@dataclass(frozen=True, slots=True)
class Phase:
    """Run `rulesets` (one iteration of each, in order) up to `iterations` times."""

    rulesets: tuple[str, ...]
    iterations: int


@dataclass
class SaturationReport:
    """How a saturation went: `stop_reason` is why its last stage ended ("saturated", or the
    iteration, node or time limit that stopped it); sizes are e-nodes after each iteration."""

    stop_reason: str = "saturated"
    iterations: int = 0
    nodes: int = 0
    seconds: float = 0.0
    sizes: list[int] = field(default_factory=list)


def preload() -> None:
    """Load egglog's compiled core now (`_bindings`): an import cannot be interrupted, so a
    compile under --timeout loads it before its clock starts."""
    _bindings()


def _bindings():
    """egglog's compiled core, `egglog.bindings`, loaded without egglog's Python layer.

    kalg uses only the bindings (text programs in, serialised graphs out). Importing them the
    usual way runs `egglog/__init__` first, which builds egglog's Python DSL (and imports
    black): about 0.33 s of CPU every compile pays, against 0.01 s for the extension alone. The
    module is registered under its own name, so a later `import egglog` reuses it; if egglog's
    layout ever changes, the ordinary import is the fallback."""
    if (module := sys.modules.get("egglog.bindings")) is not None:
        return module
    package = importlib.util.find_spec("egglog")
    folder = Path(next(iter(package.submodule_search_locations or []), ""))
    found = [p for p in folder.glob("bindings.*")
             if any(p.name.endswith(s) for s in importlib.machinery.EXTENSION_SUFFIXES)]
    if len(found) != 1:
        import egglog.bindings

        return egglog.bindings
    loader = importlib.machinery.ExtensionFileLoader("egglog.bindings", str(found[0]))
    spec = importlib.util.spec_from_file_location("egglog.bindings", found[0], loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["egglog.bindings"] = module
    loader.exec_module(module)
    return module


def rule_files(families: tuple[str, ...]) -> list[Path]:
    """The header and the files of `families` (file stems), in order."""
    root = rules_dir()
    return [root / HEADER] + [root / f"{name}.egg" for name in families]


def load_rules(families: tuple[str, ...]) -> str:
    """The text of the header plus the named families; raise RuleLoadError if one is missing."""
    parts = []
    for path in rule_files(families):
        if not path.is_file():
            raise RuleLoadError(f"rule family '{path.stem}' not found in {path.parent}")
        parts.append(path.read_text())
    return "\n".join(parts)


def check_rules(families: tuple[str, ...]) -> None:
    """Load the families into a fresh e-graph, so a broken rule file fails here with its name."""
    eb = _bindings()
    egraph = eb.EGraph()
    for path in rule_files(families):
        try:
            egraph.parse_and_run_program(path.read_text(), filename=str(path))
        except eb.EggSmolError as err:
            raise RuleLoadError(f"{path.name}: {err}") from None


def run_program(text: str) -> list[str]:
    """Run an egglog text program in this process and return its printed outputs (for tests)."""
    eb = _bindings()
    egraph = eb.EGraph()
    try:
        return [str(o) for o in egraph.parse_and_run_program(text)]
    except eb.EggSmolError as err:
        raise RuleLoadError(str(err)) from None


def saturate(families: tuple[str, ...], facts: str, stages: tuple[Phase, ...],
             limits: SaturationLimits) -> tuple[dict, SaturationReport]:
    """Load rules and facts, run the stages within `limits`, return (serialised graph, report)."""
    rules = load_rules(families)
    # Load egglog here, before forking, once per process: every child inherits the loaded
    # module instead of loading it again.
    _bindings()

    # A fork is cheapest (the child has egglog loaded already), but forking a process with
    # other threads (Halide's, numpy's OpenBLAS, a host application's) can deadlock the child:
    # there the child is a fresh interpreter instead (`_fresh_child`).
    if threads() > 1:
        return _fresh_child(rules, facts, stages, limits)
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, rules, facts, stages, limits), daemon=True)
    proc.start()
    child.close()
    deadline = limits.kill_after()
    payload = None
    try:
        if parent.poll(deadline):
            payload = parent.recv()
    except EOFError:  # the child died (out of memory: Rust aborts) before it could answer
        payload = None
    except BaseException:  # --timeout's alarm, Ctrl-C: the child must not run on
        proc.kill()
        proc.join()
        raise
    proc.join(1)
    killed = proc.is_alive()
    if killed:
        proc.kill()
        proc.join()
    return _answer(payload, None if killed else proc.exitcode, limits, deadline)


def _answer(payload: dict | None, exitcode: int | None, limits: SaturationLimits,
            deadline: float | None) -> tuple[dict, SaturationReport]:
    """The child's answer as `saturate` returns it; `exitcode` None: it was killed."""
    if payload is None:
        raise ResourceLimitError(_death_message(exitcode, limits, deadline))
    if "error" in payload:
        raise RuleLoadError(payload["error"])
    return json.loads(payload["graph"]), SaturationReport(**payload["report"])


_FRESH = ("import pickle, sys; sys.path[:] = pickle.load(sys.stdin.buffer); "
          "from kalg.eqsat.engine import _fresh_main; _fresh_main()")
"""The program of `_fresh_child`'s interpreter: kalg's import path first, then the job."""


def _fresh_child(rules: str, facts: str, stages: tuple[Phase, ...], limits: SaturationLimits,
                 ) -> tuple[dict, SaturationReport]:
    """`saturate`'s child as a new interpreter (`_FRESH`), the job and the answer pickled
    through its standard streams. Not a fork server or spawn: those import the caller's
    main module again in the child, which fails in a script without a main guard."""
    deadline = limits.kill_after()
    job = pickle.dumps(sys.path) + pickle.dumps((rules, facts, stages, limits))
    proc = subprocess.Popen([sys.executable, "-c", _FRESH], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        out, _ = proc.communicate(job, timeout=deadline)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return _answer(None, None, limits, deadline)
    except BaseException:  # --timeout's alarm, Ctrl-C: the child must not run on
        proc.kill()
        proc.communicate()
        raise
    payload = pickle.loads(out) if proc.returncode == 0 and out else None
    return _answer(payload, proc.returncode, limits, deadline)


def _fresh_main() -> None:
    """The job of `_fresh_child`, read from stdin; its answer to stdout."""
    rules, facts, stages, limits = pickle.load(sys.stdin.buffer)
    _child(_Reply(), rules, facts, stages, limits)


class _Reply:
    """`_child`'s connection in a fresh interpreter: its answer pickled to stdout."""

    def send(self, payload: dict) -> None:
        sys.stdout.buffer.write(pickle.dumps(payload))
        sys.stdout.buffer.flush()


def _death_message(exitcode: int | None, limits: SaturationLimits, deadline: float | None,
                   ) -> str:
    if exitcode is None:
        return (f"e-graph saturation did not finish within {deadline:.0f} s (one iteration "
                f"cannot be interrupted); lower --node-limit or --time-limit")
    return (f"e-graph saturation ran out of memory (limit {limits.memory_mib} MiB, exit code "
            f"{exitcode}); lower --node-limit")


def _child(conn, rules: str, facts: str, stages: tuple[Phase, ...],
           limits: SaturationLimits) -> None:
    # The limit is on address space, which the fork inherits: allow the budget on top of it.
    cap_address_space(limits.memory_mib)
    eb = _bindings()

    try:
        egraph = eb.EGraph()
        egraph.parse_and_run_program(rules)
        egraph.parse_and_run_program(facts)
        report = _run_stages(egraph, stages, limits)
        graph = egraph.serialize([]).to_json()
    except eb.EggSmolError as err:
        conn.send({"error": str(err)})
        return
    conn.send({"graph": graph, "report": report.__dict__})


def _size(egraph) -> int:
    (out,) = egraph.parse_and_run_program("(print-size)")
    return sum(n for _, n in out.sizes)


def _run_stages(egraph, stages: tuple[Phase, ...], limits: SaturationLimits) -> SaturationReport:
    report = SaturationReport()
    start = time.perf_counter()
    for stage in stages:
        report.stop_reason = "saturated"  # the reason is the last stage's: the one that ended it
        step = "(run-schedule " + " ".join(f"(run {r})" for r in stage.rulesets) + ")"
        for _ in range(stage.iterations):
            (out,) = egraph.parse_and_run_program(step)
            report.iterations += 1
            report.nodes = _size(egraph)
            report.sizes.append(report.nodes)
            report.seconds = time.perf_counter() - start
            if out.report.can_stop:
                break
            if report.nodes > limits.nodes:
                report.stop_reason = f"node limit ({limits.nodes})"
                return report
            if limits.seconds is not None and report.seconds > limits.seconds:
                report.stop_reason = f"time limit ({limits.seconds:g} s)"
                return report
        else:
            report.stop_reason = f"iteration limit ({stage.iterations})"
    return report
