"""`kalg simulate LAYER.scamp5 --kernel FILE.kalg`: check a layer's sequence of programs.

A layer (a filter with more outputs than registers, `kalg optimize` of it) is printed as several
programs, each followed by a comment naming the registers read out there and the outputs they
hold (`layers.layer_text`). This runs the programs in order from the input, as the device does,
and at each readout point checks every register read out against its output's kernel, exactly
and on an image's interior; every output of the definition must be read out somewhere. A
readout that does not hold its kernel is the program's fault: exit 1, saying where.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kalg.diagnostics import ProgramMismatchError, UsageError


def run_layer(args: argparse.Namespace, program: list, readouts: list[tuple[int, dict]],
              checker: Callable, out) -> int:
    """Check every readout of the layer (`program`, `readouts` from `parse_layer_text`)
    against the definition of --kernel; report one line per readout on `out`. `checker()`
    gives (check(prefix, register → target) → errors, output → target, image label)."""
    from kalg.targets.scamp5.machine.isa import bus_steps

    if args.noise or args.write_result or args.write_error or args.report:
        raise UsageError("for a layer (several programs read out in turn), kalg simulate "
                         "checks every readout exactly and on an image (--image, --seed, "
                         "--size); --noise, --write-result, --write-error and --report take "
                         "one program")
    check, outputs, label = checker()
    _every_output_read_out(readouts, outputs, args.kernel)
    out.line(f"program  {args.program}: a layer of {len(readouts)} programs, {len(program)} "
             f"instructions, {bus_steps(program)} bus steps")
    out.line(f"kernel   {args.kernel}: outputs {' '.join(sorted(outputs))}")
    out.line(f"image    {label}")
    out.data |= {"file": str(args.program), "kernel": args.kernel, "layer": True,
                 "instructions": len(program), "bus_steps": bus_steps(program),
                 "program": "\n".join(map(str, program)) + "\n", "image": label}
    errors: dict[str, float] = {}
    for k, (after, registers) in enumerate(readouts, 1):
        worst = check(program[:after], {r: outputs[o] for r, o in registers.items()})
        out.line(f"readout  {k} of {len(readouts)} after instruction {after}: exact ok, "
                 + ", ".join(f"{r} = {registers[r]} max abs error {e:.3g}"
                             for r, e in worst.items()))
        errors |= {registers[r]: e for r, e in worst.items()}
    out.data |= {"verified": True, "max_abs_error": errors}
    out.finish()
    return 0


def _every_output_read_out(readouts: list[tuple[int, dict]], outputs: dict, kernel: str,
                           ) -> None:
    """ProgramMismatchError for a readout of an output the definition does not have, or an
    output no readout holds."""
    named = {o for _, registers in readouts for o in registers.values()}
    if unknown := sorted(named - set(outputs)):
        raise ProgramMismatchError(f"the layer reads out {', '.join(unknown)}, which {kernel} "
                                   f"does not define (its outputs: {' '.join(sorted(outputs))})")
    if missing := sorted(set(outputs) - named):
        raise ProgramMismatchError(f"no readout of the layer holds {', '.join(missing)} "
                                   f"(outputs of {kernel})")
