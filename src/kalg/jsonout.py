"""The one JSON schema of `--json` (check, optimize, simulate, bench; docs/json.md).

Every object has "kalg" (version), "command", "ok", "exit_code", "errors" (a list of
{"message", "file", "line", "column", "hint"}: null where unknown) and "warnings"; the compile
and program keys are always present, null where they do not apply: "program" (the text),
"instructions", "bus_steps", "registers" (used, sorted), "verified", "seconds" (per stage),
"stop_reason". Commands add their own keys (documented in docs/json.md).
"""

from __future__ import annotations

from typing import Any

from kalg import __version__
from kalg.diagnostics import KalgError

PROGRAM_KEYS = ("program", "instructions", "bus_steps", "registers", "verified", "seconds",
                "stop_reason")


def base(command: str, **fields: Any) -> dict[str, Any]:
    """The common object for `command`, successful, with `fields` on top."""
    obj: dict[str, Any] = {"kalg": __version__, "command": command, "ok": True, "exit_code": 0,
                           "errors": [], "warnings": []}
    obj |= dict.fromkeys(PROGRAM_KEYS)
    return obj | fields


def error_entry(message: str, err: KalgError | None = None) -> dict[str, Any]:
    span = err.span if err is not None else None
    return {"message": message,
            "file": span.path if span else None, "line": span.line if span else None,
            "column": span.column if span else None,
            "hint": err.hint if err is not None else None}


def error_object(command: str, message: str, code: int,
                 err: KalgError | None = None) -> dict[str, Any]:
    """The object printed when `command` fails (the message is also on stderr)."""
    obj = base(command, ok=False, exit_code=code, errors=[error_entry(message, err)])
    program_text = getattr(err, "program_text", None)
    if program_text:
        obj["program"] = program_text
    return obj


def compile_fields(result: Any) -> dict[str, Any]:
    """The program keys of an `api.CompileResult` (or a pipeline Result)."""
    program = result.program if isinstance(result.program, list) else []
    has_program = bool(program)
    stats = result.stats or {}
    return {
        "stage": str(getattr(result.stage, "value", result.stage)),
        "program": result.text if has_program else None,
        "output": result.text,
        "instructions": len(program) if has_program else None,
        "bus_steps": stats.get("bus steps") if has_program else None,
        "registers": sorted({r for i in program for r in i.registers()}) if has_program else None,
        "verified": bool(result.verified),
        "seconds": stats.get("seconds"),
        "stop_reason": stats.get("stop reason"),
        "warnings": list(getattr(result, "warnings", []) or []),
        "stats": {k: _plain(v) for k, v in stats.items()},
    }


def _plain(value: Any) -> Any:
    """JSON-safe copy: containers kept, everything else as its text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def layer_fields(result: Any) -> dict[str, Any]:
    """The `layer` key of a layer's object (docs/json.md): its programs (`result.readouts`,
    `kalg.targets.scamp5.layers.Readout`) and where the input was kept; {} for one program."""
    readouts = getattr(result, "readouts", None)
    if not readouts:
        return {}
    return {"layer": {
        "programs": [{"program": r.program, "outputs": r.registers,
                      "after_instruction": r.after, "instructions": r.instructions,
                      "bus_steps": r.bus_steps, "writes": list(r.writes),
                      "inputs": list(r.inputs), "candidate": r.candidate} for r in readouts],
        "kept": result.kept, "instructions": sum(r.instructions for r in readouts),
        "bus_steps": sum(r.bus_steps for r in readouts)}}
