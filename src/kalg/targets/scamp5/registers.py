"""SCAMP-5's register files, in a light module (no numpy): the command line, the front end's
target block and the machine model (`machine.isa`) all read them here."""

REGISTERS = ("A", "B", "C", "D", "E", "F")
"""The analogue registers a program for the real SCAMP-5 may name."""

SIMULATED_REGISTERS = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""The register file of the hypothetical wider SCAMP-5 (target `scamp5_wide`): A..F and then
G..Z, for studies such as Cain's 18-register one. It exists only in kalg's simulators; programs
that name a register beyond F cannot run on the device."""

WIDE = "scamp5_wide"
"""The target name of the simulated wider register file."""
