"""Equality saturation: kernels become e-graph terms, rule families saturate, DAG extraction."""
