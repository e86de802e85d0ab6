"""The grouping helpers must agree with ``np.unique`` on every input."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trnscope.core.base.arrays import (
    equals_any,
    first_of_each,
    group_order,
    is_member,
    order_by_group_start_longest_first,
    order_by_group_then_value,
    running_max_per_group,
    sorted_unique,
    stable_argsort,
    unique_inverse,
    values_of_keys,
)

ints = st.lists(st.integers(-(2**40), 2**40), max_size=200)
small = st.lists(st.integers(-5, 30), max_size=200)


@settings(max_examples=200, deadline=None)
@given(st.one_of(ints, small))
def test_unique_inverse_matches_numpy(values: list[int]) -> None:
    keys = np.array(values, dtype=np.int64)
    unique, inverse = unique_inverse(keys)
    expected, expected_inverse = np.unique(keys, return_inverse=True)
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(inverse, np.asarray(expected_inverse).reshape(-1))
    np.testing.assert_array_equal(sorted_unique(keys), expected)
    order = group_order(inverse, unique.size)
    np.testing.assert_array_equal(order, np.argsort(inverse, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(st.one_of(ints, small))
def test_first_of_each_matches_numpy(values: list[int]) -> None:
    keys = np.sort(np.array(values, dtype=np.int64))
    unique, first = first_of_each(keys)
    expected, expected_first = np.unique(keys, return_index=True)
    np.testing.assert_array_equal(unique, expected)
    np.testing.assert_array_equal(first, expected_first)


@settings(max_examples=200, deadline=None)
@given(small, small)
def test_is_member_matches_isin(values: list[int], query: list[int]) -> None:
    pool = np.array(values, dtype=np.int64)
    asked = np.array(query, dtype=np.int64)
    np.testing.assert_array_equal(is_member(sorted_unique(pool), asked), np.isin(asked, pool))


def test_group_order_beyond_sixteen_bits() -> None:
    inverse = np.arange(70_000, dtype=np.int64)[::-1].copy()
    np.testing.assert_array_equal(group_order(inverse, 70_000), np.argsort(inverse, kind="stable"))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 70_000),
            st.one_of(st.integers(-3, 3), st.integers(-(2**62), 2**62), st.sampled_from([-(2**63), 2**63 - 1])),
        ),
        max_size=60,
    ),
    st.sampled_from([np.int64, np.uint32, np.uint8]),
)
def test_order_by_group_then_value_is_lexsort(pairs: list[tuple[int, int]], group_type: type) -> None:
    """The combined-key sort (values that fit) and its fallback (values that span more
    than 64 bits with their groups) give lexsort's order exactly, ties included."""
    group = np.array([g for g, _ in pairs], dtype=np.int64).astype(group_type)
    values = np.array([v for _, v in pairs], dtype=np.int64)
    np.testing.assert_array_equal(order_by_group_then_value(group, values), np.lexsort((values, group)))
    as_floats = values.astype(np.float64)
    np.testing.assert_array_equal(order_by_group_then_value(group, as_floats), np.lexsort((as_floats, group)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.one_of(st.integers(0, 6), st.integers(-(2**61), 2**61)), st.integers(0, 4)),
        max_size=80,
    ),
    st.booleans(),
)
def test_nesting_order_is_lexsort(events: list[tuple[int, int, int]], shuffled_rows: bool) -> None:
    """The start order of the nesting (by group and start, longest first, then row)
    equals the four-key lexsort, ties at every level included, with and without rows
    as the last key, and where (group, start) no longer fit one 64-bit key."""
    group = np.array([g for g, _, _ in events], dtype=np.int32)
    start = np.array([s for _, s, _ in events], dtype=np.int64)
    stop = start + np.array([d for _, _, d in events], dtype=np.int64)
    rows = np.arange(len(events), dtype=np.int64) * 3
    if shuffled_rows:
        rows = np.random.default_rng(len(events)).permutation(rows)
    np.testing.assert_array_equal(
        order_by_group_start_longest_first(group, start, stop, rows), np.lexsort((rows, -stop, start, group))
    )
    np.testing.assert_array_equal(
        order_by_group_start_longest_first(group, start, stop), np.lexsort((-stop, start, group))
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(-3, 3), st.integers(-(2**62), 2**62), st.sampled_from([-(2**63), 2**63 - 1])),
        max_size=60,
    ),
    st.sampled_from([np.int64, np.int32, np.uint32, np.uint8, np.uint64, np.float64]),
    st.booleans(),
)
def test_stable_argsort_is_numpys_stable_argsort(values: list[int], dtype: type, descending: bool) -> None:
    """The unique-key sort (values whose range fits with their count) and the fallbacks
    (a range over 63 bits, unsigned 64-bit, floats) give the stable order exactly, ties
    in their original order both ways."""
    column = np.array(values, dtype=np.int64).astype(dtype)
    if descending:  # largest first, ties in row order: the stable sort of a descending key
        ranks = np.unique(column, return_inverse=True)[1].reshape(-1)
        expected = np.argsort(-ranks, kind="stable")
    else:
        expected = np.argsort(column, kind="stable")
    np.testing.assert_array_equal(stable_argsort(column, descending=descending), expected)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.one_of(st.integers(-5, 5), st.integers(-(2**61), 2**61), st.just(-(2**63))),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_running_max_per_group_restarts_at_each_group(pairs: list[tuple[int, int]]) -> None:
    """One lifted running maximum (or the loop where the lift would overflow) equals a
    running maximum per group; the int64 minimum ("no value") included."""
    pairs.sort(key=lambda pair: pair[0])  # groups contiguous and ascending
    group = np.array([g for g, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.int64)
    before = values.copy()
    expected = np.concatenate([np.maximum.accumulate(values[group == g]) for g in np.unique(group)])
    np.testing.assert_array_equal(running_max_per_group(values, group), expected)
    np.testing.assert_array_equal(values, before)  # the caller's values untouched


def test_stable_argsort_keeps_ties_in_row_order_on_many_rows() -> None:
    rng = np.random.default_rng(7)
    durations = rng.integers(-1, 50, 100_000).astype(np.int64)  # many ties, and -1 (no duration)
    np.testing.assert_array_equal(stable_argsort(durations, descending=True), np.argsort(-durations, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=100), st.lists(st.integers(0, 25), max_size=4))
def test_equals_any_is_isin(column: list[int], wanted: list[int]) -> None:
    roles = np.array(column, dtype=np.uint8)
    np.testing.assert_array_equal(equals_any(roles, wanted), np.isin(roles, wanted))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-100, 100), st.integers(-5, 50)), max_size=40))
def test_unions_of_sorted_groups_skip_the_sort_alike(spec: list[tuple[int, int, int]]) -> None:
    """The timeline hands its lanes over already sorted by (lane, start): the same runs."""
    from trnscope.core.base.intervals import unions_of_groups

    group = np.array([g for g, _, _ in spec], dtype=np.int64)
    start = np.array([s for _, s, _ in spec], dtype=np.int64)
    end = start + np.array([d for _, _, d in spec], dtype=np.int64)
    order = np.lexsort((start, group))
    plain = unions_of_groups(group, start, end, 4)
    given_sorted = unions_of_groups(group[order], start[order], end[order], 4, presorted=True)
    for one, other in zip(plain, given_sorted):
        np.testing.assert_array_equal(one.start, other.start)
        np.testing.assert_array_equal(one.end, other.end)
        np.testing.assert_array_equal(one.prefix, other.prefix)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 40), max_size=60),
    st.lists(st.one_of(st.integers(-3, 45), st.sampled_from([2**31, 2**40, -(2**33)])), max_size=12),
    st.sampled_from([np.int32, np.int64]),
)
def test_values_of_keys_is_a_membership_test(keys: list[int], wanted: list[int], key_type: type) -> None:
    """Rows by key looked up in an index equal the rows a whole-column membership test
    finds (wanted keys the index's type cannot hold match nothing)."""
    column = np.array(keys, dtype=np.int64)
    order = np.argsort(column, kind="stable")
    index = column[order].astype(key_type)
    asked = np.array(sorted(set(wanted)), dtype=np.int64)
    found = values_of_keys(index, order, asked)
    np.testing.assert_array_equal(np.sort(found), np.flatnonzero(np.isin(column, asked)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 40), st.sampled_from([10**6, 2**40])), max_size=40),
    st.lists(st.one_of(st.integers(-3, 45), st.sampled_from([10**6, 2**40])), max_size=40),
    st.booleans(),
)
def test_values_of_keys_in_order_whichever_way_it_looks(keys: list[int], wanted: list[int], ascending: bool) -> None:
    """Grouped by wanted key, in the index's order within a key: the binary searches and
    the flags for many ascending keys of a small range give the same rows in the same
    order (wanted keys out of order or repeated keep their own order)."""
    column = np.array(keys, dtype=np.int64)
    order = np.argsort(column, kind="stable")
    index = column[order]
    asked = np.array(sorted(set(wanted)) if ascending else wanted, dtype=np.int64)
    expected = [int(order[i]) for w in asked.tolist() for i, k in enumerate(index.tolist()) if k == w]
    assert values_of_keys(index, order, asked).tolist() == expected


def _plain_union(pairs: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for start, end in sorted(pairs):
        end = max(end, start)
        if reach is None or start >= reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-(2**61), 2**61), st.integers(-5, 10**6)), max_size=60))
def test_the_one_union_equals_a_plain_merge(spec: list[tuple[int, int, int]]) -> None:
    """Every busy figure goes through ``core.base.intervals``: grouped lengths, one
    union, Union's runs — all equal a plain merge, overlaps counted once."""
    from trnscope.core.base.intervals import Union, grouped_union, union_length

    group = np.array([g for g, _, _ in spec], dtype=np.int64)
    start = np.array([s for _, s, _ in spec], dtype=np.int64)
    end = start + np.array([d for _, _, d in spec], dtype=np.int64)
    lengths = grouped_union(group, start, end, 5)
    for g in range(5):
        pairs = [(int(s), int(e)) for s, e, k in zip(start, end, group) if k == g]
        assert lengths[g] == _plain_union(pairs)
        assert union_length([p[0] for p in pairs], [p[1] for p in pairs]) == _plain_union(pairs)
        assert Union(start[group == g], end[group == g]).length == _plain_union(pairs)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 20)), max_size=25),
    st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 20)), max_size=25),
    st.lists(st.tuples(st.integers(-60, 60), st.integers(-5, 40)), max_size=10),
)
def test_intersections_and_windows_equal_counting_points(
    a_spec: list[tuple[int, int]], b_spec: list[tuple[int, int]], windows: list[tuple[int, int]]
) -> None:
    """``intersection`` covers exactly the integer points both unions cover, and
    ``covered_in`` of many windows equals ``covered`` of each (on small integer spans,
    where every point can be counted)."""
    from trnscope.core.base.intervals import Union, intersection

    def union(spec: list[tuple[int, int]]) -> Union:
        return Union(np.array([s for s, _ in spec], np.int64), np.array([s + d for s, d in spec], np.int64))

    def points(spec: list[tuple[int, int]]) -> set[int]:
        return {t for s, d in spec for t in range(s, s + d)}

    a, b = union(a_spec), union(b_spec)
    both = intersection(a, b)
    assert {t for s, e in zip(both.start.tolist(), both.end.tolist()) for t in range(s, e)} == points(a_spec) & points(
        b_spec
    )
    assert both.length == len(points(a_spec) & points(b_spec))
    starts = np.array([s for s, _ in windows], np.int64)
    ends = np.array([s + d for s, d in windows], np.int64)
    assert both.covered_in(starts, ends).tolist() == [both.covered(int(s), int(e)) for s, e in zip(starts, ends)]
    assert a.covered_in(starts, ends).tolist() == [
        len({t for t in points(a_spec) if s <= t < e}) for s, e in zip(starts.tolist(), ends.tolist())
    ]
