"""The exact search for SCAMP-5 programs: `exhaustive` (every program up to a length, or a proof
that none is shorter) and the searches built on it (`kept`, `factored`), with its pieces
(`twostep`, `norms`, `dihedral`)."""
