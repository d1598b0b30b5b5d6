#!/usr/bin/python3
"""Decides which ONNX backend node-test cases are outside frame's scope, and why.

`classify(name)` takes a case directory name (e.g. "test_adagrad") and returns
None when the case is in scope, or a reason string "<category>: <why>" when it
is skipped; `classify_dir(path)` also looks at the model (no model.onnx, graph
inputs or outputs that are not numeric tensors). Every skip comes from the one
table SKIP_CATEGORIES below, limited to what no inference engine can be judged
on with this data (issue 9): training optimizers, RNG draws, strings, map
values, bfloat16 I/O. (Data-dependent output shapes, sequences and optionals
left this list when sessions began running them between stages, ADR 0008.) A
case that uses an op or dtype frame lacks stays in scope and counts as a
failure, so the pass rate is honest.

Run as a script over generated data (see generate_data.py) for a summary:
  classify.py DIR [--list] [--ops-scope docs/ops-scope.txt]
"""

import argparse
import collections
import os
import re
import sys

# (category, reason, patterns). Patterns are regexes matched with re.match against the case
# name without its "test_" prefix; the first matching category wins. This is the whole list:
# an op frame lacks, a dtype frame lacks, control flow, quantization, losses, recurrent and
# signal ops all stay in scope and count as failures until they pass (issue 9).
SKIP_CATEGORIES = (
    ("training", "training-only optimizer/gradient op, not an inference op",
     (r"adagrad", r"adam", r"momentum", r"nesterov_momentum", r"gradient")),
    ("rng_stream", "expected values are one draw of numpy's RNG, which no backend reproduces",
     # Bernoulli, Random*Like and training-mode Dropout with ratio > 0; the zero-ratio cases
     # are exact.
     (r"bernoulli", r"random(uniform|normal)", r"training_dropout(?!_zero_ratio)")),
    ("string", "string tensors (no string dtype)",
     # Also decided from the model: a STRING graph input or output (classify_dir).
     (r"strnorm", r"string_normalizer", r"regex", r"cast.*STRING")),
    ("map", "map values (tensors, sequences of tensors and optionals are values; maps are not)",
     # Decided from the model: a map-typed graph input or output (classify_dir).
     ()),
    ("bfloat16_io", "bfloat16 graph input or output, which .npy cannot carry",
     # Decided from the model (classify_dir); no name pattern.
     ()),
)

# TensorProto.DataType values decided from the model.
_STRING = 8
_BFLOAT16 = 16

_COMPILED = tuple((cat, why, re.compile("|".join("(?:%s)" % p for p in pats)))
                  for cat, why, pats in SKIP_CATEGORIES if pats)
_WHY = {cat: why for cat, why, _ in SKIP_CATEGORIES}


def classify(name):
    """Returns None if the case `name` (e.g. "test_abs") is in scope, else "<category>: <why>"."""
    base = os.path.basename(os.path.normpath(name))
    if base.startswith("test_"):
        base = base[len("test_"):]
    for cat, why, regex in _COMPILED:
        if regex.match(base):
            return "%s: %s" % (cat, why)
    return None


def _tensor_type(t):
    """The tensor type inside a TypeProto (itself, or a sequence's or optional's element), or
    None for a map or another non-tensor element."""
    for _ in range(3):
        kind = t.WhichOneof("value")
        if kind == "tensor_type":
            return t.tensor_type
        if kind == "sequence_type":
            t = t.sequence_type.elem_type
        elif kind == "optional_type":
            t = t.optional_type.elem_type
        else:
            return None
    return None


def _io_reason(model_path):
    """The category of a model whose graph inputs or outputs are outside the value types
    (maps, strings, bfloat16), or None."""
    import onnx

    graph = onnx.load(model_path, load_external_data=False).graph
    for v in list(graph.input) + list(graph.output):
        tt = _tensor_type(v.type)
        if tt is None:
            return "map"
        if tt.elem_type == _STRING:
            return "string"
        if tt.elem_type == _BFLOAT16:
            return "bfloat16_io"
    return None


def classify_dir(case_dir):
    """Like classify(), plus what the model itself shows: a case directory without model.onnx
    (the "real" kind only records a download URL in data.json) and graph inputs or outputs that
    are not numeric tensors .npy can carry (sequence/optional/map, string, bfloat16)."""
    model = os.path.join(case_dir, "model.onnx")
    if not os.path.isfile(model):
        return "no_model: no model.onnx in the case directory (real-model cases need a download)"
    reason = classify(case_dir)
    if reason is not None:
        return reason
    cat = _io_reason(model)
    return None if cat is None else "%s: %s" % (cat, _WHY[cat])


def category(case_dir):
    """Returns the category name for a skipped case directory, or None when in scope."""
    reason = classify_dir(case_dir)
    return None if reason is None else reason.split(":", 1)[0]


def _load_ops_scope(path):
    """Reads an op list (one or more names a line, '#' comments); names are compared
    case-insensitively with underscores removed so "conv_transpose" matches "ConvTranspose"."""
    ops = set()
    with open(path) as f:
        for line in f:
            for word in re.split(r"[\s,]+", line.split("#", 1)[0]):
                if word:
                    ops.add(word.lower().replace("_", ""))
    return ops


def _case_ops(case_dir):
    import onnx

    ops = set()

    def walk(graph):
        for node in graph.node:
            ops.add(node.op_type)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)

    walk(onnx.load(os.path.join(case_dir, "model.onnx")).graph)
    return ops


def main():
    parser = argparse.ArgumentParser(description="Summarize in-scope/skipped node-test cases.")
    parser.add_argument("data_dir", help="generated data dir (the one holding node/) or node/")
    parser.add_argument("--list", action="store_true", help="list every skipped case")
    parser.add_argument("--ops-scope", default=None,
                        help="op list; reports in-scope cases using ops outside it")
    args = parser.parse_args()

    node_dir = args.data_dir
    if os.path.isdir(os.path.join(node_dir, "node")):
        node_dir = os.path.join(node_dir, "node")
    cases = sorted(d for d in os.listdir(node_dir) if os.path.isdir(os.path.join(node_dir, d)))
    by_cat = collections.defaultdict(list)
    in_scope = []
    for case in cases:
        cat = category(os.path.join(node_dir, case))
        (by_cat[cat].append(case) if cat else in_scope.append(case))

    print("%d cases: %d in scope, %d skipped" % (len(cases), len(in_scope),
                                                 len(cases) - len(in_scope)))
    for cat in [c for c, _, _ in SKIP_CATEGORIES] + ["no_model"]:
        print("  %-22s %d" % (cat, len(by_cat.get(cat, []))))
        if args.list:
            for case in by_cat.get(cat, []):
                print("      " + case)

    if args.ops_scope:
        scope = _load_ops_scope(args.ops_scope)
        missing = collections.defaultdict(list)
        for case in in_scope:
            for op in _case_ops(os.path.join(node_dir, case)):
                if op.lower() not in scope:
                    missing[op].append(case)
        total = len({c for cs in missing.values() for c in cs})
        print("%d in-scope cases use ops outside %s (expected failures):" % (total,
                                                                             args.ops_scope))
        for op in sorted(missing, key=lambda o: -len(missing[o])):
            print("  %-28s %d" % (op, len(missing[op])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
