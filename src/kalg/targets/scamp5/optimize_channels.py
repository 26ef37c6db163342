"""The e-graph of a filter over several inputs: one e-graph per input channel.

A value of a channel filter is a kernel applied to ONE input (`K * A`), and values on different
inputs never share work (they read different images), while values on one input do. So each
channel gets its own e-graph whose roots are the kernels the outputs apply to that channel
(`optimize` with one root per output that reads it): a sub-kernel that several outputs apply to
the channel is one e-class, its work paid once by the DAG extraction, and every decomposition
the algebra finds (separable, factored, chains, Horner planes) is available for each
(output, channel) term. Sharing across channels is the distributive law
`G * R_A * A + G * R_B * B = G * (R_A * A + R_B * B)` (`kalg.algebra.channels.common_factor`), which
`kalg.targets.scamp5.channel_stages` applies to the outputs before their terms reach an e-graph.

`channel_terms` returns, for each output reading the channel, the part of the channel's joint
decomposition that computes it (extracted greedily where several outputs read the channel)
and the output's best variant alone (`Optimized.applied`), each as a one-output
`Decomposition` over the channel's input (value 0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from kalg.algebra.decomp import Decomposition
from kalg.algebra.kernel import Kernel
from kalg.targets.scamp5.optimize import Options, optimize


def channel_terms(channels: Mapping[str, Mapping[str, Kernel]], channel: str,
                  options: Options) -> dict[str, dict[str, Decomposition]]:
    """Output → candidate name → a decomposition of the kernel that output applies to
    `channel` (its one output named after the output register), from the channel's e-graph.
    Outputs that do not read `channel` are absent."""
    kernels = {out: parts[channel] for out, parts in channels.items()
               if channel in parts and parts[channel].trimmed().entries}
    if not kernels:
        return {}
    # outputs applying the same kernel to the channel are one root (the e-graph would bind
    # one term to two names)
    first = {k: out for out, k in sorted(kernels.items(), reverse=True)}
    same = {out: first[k] for out, k in kernels.items()}
    kernels = {out: k for out, k in kernels.items() if first[k] == out}
    if len(kernels) > 1:
        # the stages compile each output's terms on their own, so the joint DAG's sharing
        # across outputs is not kept between them: its exact ILP would cost seconds (three
        # 3x3 outputs: the full 3 s limit) for a candidate that is greedy's at best; each
        # output's own best variant (`applied`) does not depend on it
        options = dataclasses.replace(options, ilp_max_nodes=0)
    found = optimize(kernels, options)
    joint, alone = dict(found.decomposition.outputs), dict(found.applied.outputs)
    return {out: {"channel e-graph": _part(found.decomposition, out, joint[root]),
                  "channel e-graph, variant": _part(found.applied, out, alone[root])}
            for out, root in same.items()}


def _part(decomposition: Decomposition, out: str, index: int) -> Decomposition:
    """The values of `decomposition` that `out` needs, as a one-output decomposition."""
    return Decomposition(decomposition.values, ((out, index),))
