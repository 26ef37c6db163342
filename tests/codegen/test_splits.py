"""`splits.balanced_three_way`: the centre-difference 3-way splits of long goals."""

from __future__ import annotations

from kalg.targets.scamp5.codegen.splits import balanced_three_way

CENTRE = (0, 0, 0, -1)
LAPLACIAN = tuple(sorted([(0, 0, 1, 1), (0, 1, 0, 1), (0, 0, -1, 1), (0, -1, 0, 1)]
                         + [CENTRE] * 4))


def _parts(terms, split):
    return [tuple(terms[i] for i in block) for block in split]


def test_laplacian_splits_share_the_centre_in_proportion():
    splits = balanced_three_way(LAPLACIAN)
    assert len(splits) == 6  # the 3-block partitions of N, E, S, W (sizes 1, 1, 2)
    for split in splits:
        assert sorted(i for block in split for i in block) == list(range(len(LAPLACIAN)))
        for part in _parts(LAPLACIAN, split):  # each part a difference: signs sum to zero
            assert sum(t[3] for t in part) == 0
            assert part.count(CENTRE) == len(part) - part.count(CENTRE)


def test_no_split_where_the_shares_are_not_whole():
    odd = tuple(sorted([(0, 0, 1, 1), (0, 1, 0, 1), (0, 0, -1, 1), (0, -1, 0, 1)]
                       + [CENTRE] * 3 + [(0, 1, 1, 1)]))  # 5 others, 3 centres: 3·k/5 never whole
    assert balanced_three_way(odd) == ()


def test_no_split_for_short_goals_or_without_a_repeated_term():
    assert balanced_three_way(LAPLACIAN[:7]) == ()  # short goals get every 3-way split anyway
    distinct = tuple(sorted((0, x, y, 1) for x in (-1, 0, 1) for y in (-1, 0, 1)))
    assert balanced_three_way(distinct) == ()
