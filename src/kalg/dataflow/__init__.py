"""Image pipelines: a DAG of linear blocks (kernels applied to images) and pointwise stages.

* `graph`: the DAG (`Graph`, `Node`), built by `kalg.frontend.pipeline` from a `pipeline` block.
* `reference`: the numpy evaluator every compiled pipeline is checked against.
* `plan`: the linear blocks through the cpu target's e-graph search, as one shared program.

The cpu target lowers a planned graph to one fused Halide pipeline
(`kalg.targets.cpu.halide.compile_graph`, `kalg.targets.cpu.pipelines`).
"""
