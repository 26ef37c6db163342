"""The SCAMP-5 target: instruction model, program text, exact and numeric simulation.

* `isa` — registers, directions and one immutable type per macro, each stating its effect as data;
* `text` — the SCAMP-5d host form: `format_program` and `parse_program`;
* `symbolic` — exact execution on kernels and `verify_exact`;
* `simulator` — numpy execution on images, footprint/interior, `verify_numeric`;
* `noise` — the seeded analogue noise model and error statistics.
"""
