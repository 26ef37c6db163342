"""kalg: an equality-saturation compiler for constant-coefficient convolution kernels."""

__version__ = "0.1.0"
