"""Functional control flow: While as a Relay loop (recursion, not unrolled), If / Case as Relay
If, calls as global functions, TensorLists as stacked tensors."""

from __future__ import annotations

import numpy as np
import pytest

from converters.tensorflow import from_tensorflow  # noqa: E402
from relay_core.ir import Any, Call, GlobalVar, If, post_order  # noqa: E402

from .helpers import Case, assert_close, params, rand, relay_outputs, run_case, tf


def recursive_functions(mod) -> list[str]:
    """Global functions that call themselves."""
    out = []
    for gv, f in mod.functions.items():
        if any(isinstance(n, Call) and n.op == gv for n in post_order(f.body)):
            out.append(gv.name_hint)
    return out


def _count(mod, kind) -> int:
    return sum(isinstance(n, kind) for f in mod.functions.values() for n in post_order(f.body))


# -- a data-dependent while loop with a cond inside -----------------------------------------------
@tf.function(input_signature=[tf.TensorSpec([3]), tf.TensorSpec([], tf.int32)])
def loop_fn(x, n):
    def body(i, x):
        x = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 0.5 - 1.0, lambda: x * 2.0 + 1.0)
        return i + 1, x

    _, y = tf.while_loop(lambda i, x: i < n, body, [tf.constant(0), x])
    return y


@pytest.fixture(scope="module")
def loop_mod():
    return from_tensorflow(loop_fn)


def test_while_is_a_recursive_function(loop_mod):
    assert len(recursive_functions(loop_mod)) == 1
    assert _count(loop_mod, If) >= 2  # the loop test and the tf.cond


@pytest.mark.parametrize("n", [0, 1, 2, 7, 40])
def test_while_trip_counts(loop_mod, n):
    x = np.array([0.5, -2.0, 3.0], np.float32)
    want = loop_fn(x, np.int32(n)).numpy()
    assert_close(relay_outputs(loop_mod, [x, np.int32(n)]), [want], what=f"n={n}")


def test_loop_size_does_not_depend_on_trip_count(loop_mod):
    # Not unrolled: the program has a fixed number of nodes whatever n is.
    n_nodes = sum(len(post_order(f.body)) for f in loop_mod.functions.values())
    assert n_nodes < 200


@tf.function(input_signature=[tf.TensorSpec([4])])
def until_fn(x):
    steps = tf.constant(0)
    while tf.reduce_max(x) < 100.0:  # data-dependent trip count (autograph)
        x = x * 2.0 + 0.5
        steps += 1
    return x, steps


@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0, 500.0])
def test_data_dependent_trip_count(scale):
    mod = from_tensorflow(until_fn)
    assert recursive_functions(mod)
    x = (np.array([1.0, -3.0, 2.0, 0.5]) * scale).astype(np.float32)
    want = [t.numpy() for t in until_fn(x)]
    assert_close(relay_outputs(mod, [x]), want)


def test_if_nested_forty_deep():
    def build(d, x):
        if d == 0:
            return x * 1.5 + 1.0
        return tf.cond(tf.reduce_sum(x) > float(d), lambda: build(d - 1, x - 1.0), lambda: x + 0.5)

    f = tf.function(lambda x: build(40, x), input_signature=[tf.TensorSpec([3])])
    mod = from_tensorflow(f)
    assert _count(mod, If) == 40
    for v in (5.0, 30.0, 500.0):
        x = np.array([v, 9.0, 30.0], np.float32)
        assert_close(relay_outputs(mod, [x]), [f(x).numpy()])


@pytest.mark.parametrize("n", [0, 3, 17])
def test_compiled_loop_trip_counts(loop_mod, n):
    from .helpers import compiled_outputs

    x = np.array([0.5, -2.0, 3.0], np.float32)
    got = compiled_outputs(loop_mod, [x, np.int32(n)])
    assert_close(got, [loop_fn(x, np.int32(n)).numpy()], what=f"compiled n={n}")


# -- more shapes of control flow ------------------------------------------------------------------
def _nested(x):
    def outer(i, acc):
        def inner(j, a):
            return j + 1, a + tf.cast(i * j, tf.float32)

        _, acc = tf.while_loop(lambda j, a: j < i, inner, [0, acc])
        return i + 1, acc

    return tf.while_loop(lambda i, a: i < 5, outer, [0, x])[1]


def _growing(x):
    def body(i, acc):
        return i + 1, tf.concat([acc, acc[-1:] * 2.0], axis=0)

    return tf.while_loop(
        lambda i, a: i < 4,
        body,
        [0, x],
        shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, 2])],
    )[1]


def _tensor_array(x):
    ta = tf.TensorArray(tf.float32, size=tf.shape(x)[0])

    def body(i, ta, s):
        s = s + x[i]
        return i + 1, ta.write(i, s * s), s

    _, ta, _ = tf.while_loop(lambda i, *_: i < tf.shape(x)[0], body, [0, ta, tf.zeros_like(x[0])])
    return ta.stack()


def _dynamic_tensor_array(x):
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[3])
    for i in tf.range(tf.shape(x)[0]):
        ta = ta.write(i, x[i] * tf.cast(i, tf.float32))
    return ta.stack()


def _multi_cond(x, p):
    a, b = tf.cond(p, lambda: (x + 1.0, x * 3.0), lambda: (x - 1.0, -x))
    return a * b


def _switch(x, k):
    return tf.switch_case(k, [lambda: x * 2.0, lambda: x + 10.0, lambda: tf.sin(x)])


CASES = [
    Case("nested_while", _nested, [rand(3)], ("While|StatelessWhile",)),
    Case("growing_loop_var", _growing, [rand(1, 2)], ("While|StatelessWhile",)),
    Case(
        "tensor_array_in_while",
        _tensor_array,
        [rand(5, 3)],
        ("While|StatelessWhile", "TensorListReserve", "TensorListSetItem", "TensorListStack"),
    ),
    Case(
        "tensor_array_dynamic_batch",
        _tensor_array,
        [rand(5, 3)],
        ("While|StatelessWhile",),
        dynamic=(0,),
    ),
    Case(
        "tensor_array_dynamic_size",
        _dynamic_tensor_array,
        [rand(4, 3)],
        ("While|StatelessWhile",),
        autograph=True,  # a Python `for` over tf.range
    ),
    Case("cond_two_outputs_true", _multi_cond, [rand(3), np.array(True)], ("If|StatelessIf",)),
    Case("cond_two_outputs_false", _multi_cond, [rand(3), np.array(False)], ("If|StatelessIf",)),
    *[
        Case(f"switch_case_{k}", _switch, [rand(3), np.array(k, np.int32)], ("Case|StatelessCase",))
        for k in (0, 1, 2, 7)
    ],
]


@pytest.mark.parametrize("case", params(CASES))
def test_control_flow(case):
    run_case(case)


def test_asserts_off_the_data_path_are_not_converted():
    @tf.function(input_signature=[tf.TensorSpec([3])])
    def f(x):
        def body(i, x):
            with tf.control_dependencies([tf.debugging.assert_less(i, 100)]):
                return i + 1, x * 1.5

        return tf.while_loop(lambda i, x: i < 4, body, [0, x])[1]

    from .helpers import graph_ops

    assert "Assert" in graph_ops(f.get_concrete_function())
    x = rand(3)
    assert_close(relay_outputs(from_tensorflow(f), [x]), [f(x).numpy()])


def test_growing_loop_var_gets_any_dim():
    sig = [tf.TensorSpec([1, 2])]
    mod = from_tensorflow(tf.function(_growing, input_signature=sig))
    assert mod["main"].body.checked_type.shape == (Any, 2)


def _nested_growing(x):
    def outer(i, acc):
        inner = tf.while_loop(lambda j, a: j < 2, lambda j, a: (j + 1, a * 2.0), [0, acc])[1]
        return i + 1, tf.concat([acc, inner[-1:]], axis=0)

    return tf.while_loop(
        lambda i, a: i < 3,
        outer,
        [0, x],
        shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, 2])],
    )[1]


def test_retyped_loop_body_leaves_no_stale_functions():
    from converters.tensorflow.loader import load

    f = tf.function(_nested_growing, input_signature=[tf.TensorSpec([1, 2])])
    gd = load(f).graph_def
    # Without TF's shape invariants the growing variable is found by converting the outer body
    # again with a wider type (and its inner loop with it).
    for node in list(gd.node) + [n for fn in gd.library.function for n in fn.node_def]:
        if node.op in ("While", "StatelessWhile"):
            del node.attr["output_shapes"]
    outs = [n.name for n in gd.node if n.op == "Identity"]
    mod = from_tensorflow(gd, outputs=outs, cleanup=False)
    # outer and inner loop only; bodies converted again with wider types leave nothing behind
    assert len(mod.functions) == 3, [gv.name_hint for gv in mod.functions]
    x = rand(1, 2)
    assert_close(relay_outputs(mod, [x]), [f(x).numpy()])


# -- TensorList ops directly ----------------------------------------------------------------------
R = tf.raw_ops


def _list_ops(x):
    lst = R.TensorListFromTensor(tensor=x, element_shape=[3])
    lst = R.TensorListSetItem(input_handle=lst, index=1, item=x[0] * 10.0)
    n = R.TensorListLength(input_handle=lst)
    es = R.TensorListElementShape(input_handle=lst, shape_type=tf.int32)
    g = R.TensorListGather(
        input_handle=lst, indices=[2, 0], element_shape=[3], element_dtype=tf.float32
    )
    lst = R.TensorListPushBack(input_handle=lst, tensor=x[1] + 1.0)
    lst, last = R.TensorListPopBack(input_handle=lst, element_shape=[3], element_dtype=tf.float32)
    item = R.TensorListGetItem(
        input_handle=lst, index=-1 + n, element_shape=[3], element_dtype=tf.float32
    )
    st = R.TensorListStack(input_handle=lst, element_shape=[3], element_dtype=tf.float32)
    cat, lens = R.TensorListConcatV2(
        input_handle=lst,
        element_shape=[3],
        leading_dims=tf.zeros([0], tf.int64),
        element_dtype=tf.float32,
    )
    return n, es, g, last, item, st, cat, lens


def _empty_list(x):
    lst = R.EmptyTensorList(element_shape=[-1, 2], max_num_elements=-1, element_dtype=tf.float32)
    lst = R.TensorListPushBack(input_handle=lst, tensor=x)
    lst = R.TensorListPushBack(input_handle=lst, tensor=x * 2.0)
    return R.TensorListStack(input_handle=lst, element_shape=[-1, 2], element_dtype=tf.float32)


def _scatter_list(x):
    lst = R.TensorListReserve(element_shape=[2], num_elements=4, element_dtype=tf.float32)
    lst = R.TensorListScatterIntoExistingList(input_handle=lst, tensor=x, indices=[3, 0])
    return R.TensorListStack(input_handle=lst, element_shape=[2], element_dtype=tf.float32)


LIST_CASES = [
    Case(
        "tensor_list_ops",
        _list_ops,
        [rand(4, 3)],
        (
            "TensorListFromTensor",
            "TensorListSetItem",
            "TensorListLength",
            "TensorListElementShape",
            "TensorListGather",
            "TensorListPushBack",
            "TensorListPopBack",
            "TensorListGetItem",
            "TensorListStack",
            "TensorListConcatV2",
        ),
    ),
    Case(
        "empty_tensor_list",
        _empty_list,
        [rand(3, 2)],
        ("EmptyTensorList", "TensorListPushBack"),
        dynamic=(0,),
    ),
    Case(
        "tensor_list_scatter",
        _scatter_list,
        [rand(2, 2)],
        ("TensorListReserve", "TensorListScatterIntoExistingList"),
    ),
]


@pytest.mark.parametrize("case", params(LIST_CASES))
def test_tensor_list(case):
    run_case(case)


# -- calls ----------------------------------------------------------------------------------------
def test_partitioned_call_becomes_a_global_function():
    @tf.function
    def inner(x):
        return tf.tanh(x) * 2.0 + 1.0

    @tf.function(input_signature=[tf.TensorSpec([2, 3])])
    def outer(x):
        return inner(x) + inner(x * 3.0)

    gd = outer.get_concrete_function().graph.as_graph_def()
    ops = {n.op for n in gd.node}
    assert ops & {"PartitionedCall", "StatefulPartitionedCall"}
    mod = from_tensorflow(gd)
    names = [gv.name_hint for gv in mod.functions]
    assert any("inner" in n for n in names), names
    calls = [
        n
        for n in post_order(mod["main"].body)
        if isinstance(n, Call) and isinstance(n.op, GlobalVar)
    ]
    assert len(calls) == 2 and calls[0].op == calls[1].op  # converted once, called twice
    x = rand(2, 3)
    assert_close(relay_outputs(mod, [x]), [outer(x).numpy()])
