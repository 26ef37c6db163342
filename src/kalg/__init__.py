"""kalg: an equality-saturation compiler for constant-coefficient convolution kernels.

`kalg.compile(source, **options)` and `kalg.simulate(program, kernel, image)` (see `kalg.api`),
and the errors they raise (`kalg.KalgError`, `kalg.ProgramMismatchError`, from
`kalg.diagnostics`), are loaded on first use, so `import kalg` and `kalg --version` stay fast.
"""

__version__ = "0.1.0"

__all__ = ["CompileResult", "KalgError", "ProgramMismatchError", "SimulationResult",
           "__version__", "compile", "simulate"]


def __getattr__(name: str):
    if name in ("compile", "simulate", "CompileResult", "SimulationResult"):
        from kalg import api

        return getattr(api, name)
    if name in ("KalgError", "ProgramMismatchError"):  # what compile and simulate raise
        from kalg import diagnostics

        return getattr(diagnostics, name)
    raise AttributeError(f"module 'kalg' has no attribute {name!r}")
