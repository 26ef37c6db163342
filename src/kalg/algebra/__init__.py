"""The algebra, tied to no target: exact kernels over semirings (`kernel`), their power-of-two
approximation (`approx`), filters over several input channels (`channels`), the decomposition IR
that extraction chooses and code generation lowers (`decomp`), and seeded random kernels for
studies (`random_kernels`)."""
