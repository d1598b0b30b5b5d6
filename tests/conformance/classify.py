#!/usr/bin/python3
"""Decides which ONNX backend node-test cases are outside frame's scope, and why.

`classify(name)` takes a case directory name (e.g. "test_adagrad") and returns
None when the case is in scope, or a reason string "<category>: <why>" when it
is skipped. Every skip comes from the single table SKIP_CATEGORIES below; a
case that uses an op frame lacks but matches no category stays in scope and
counts as a failure, so the pass rate is honest.

`_expanded` cases run an op's function body (a graph of simpler ops). They are
skipped only when the body itself still needs something out of scope (e.g. the
SoftmaxCrossEntropyLoss body calls NegativeLogLikelihoodLoss; the Range body
uses Loop); otherwise they stay in scope even when the folded op is skipped.

Run as a script over generated data (see generate_data.py) for a summary:
  classify.py DIR [--list] [--ops-scope docs/ops-scope.txt]
"""

import argparse
import collections
import os
import re
import sys

# (category, reason, patterns). Patterns are regexes matched with re.match against the case
# name without its "test_" prefix; the first matching category wins.
SKIP_CATEGORIES = (
    ("training", "training-only optimizer/gradient op, not an inference op",
     (r"adagrad", r"adam", r"momentum", r"nesterov_momentum", r"gradient")),
    ("loss", "training loss op (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) not in the "
     "op set",
     # nllloss_*_expanded bodies are Gather/Reduce/Where graphs: kept in scope. The sce bodies
     # call NegativeLogLikelihoodLoss, so all sce cases are skipped.
     (r"nllloss_(?!.*_expanded$)", r"sce_")),
    ("rng_stream", "expected values are one draw of numpy's RNG, which no backend reproduces",
     # Bernoulli and training-mode Dropout with ratio > 0; the zero-ratio cases are exact.
     (r"bernoulli", r"training_dropout(?!_zero_ratio)")),
    ("string", "string tensors and string ops are not supported (no string dtype)",
     (r"strnorm", r"string_normalizer", r"regex", r"tfidfvectorizer", r"cast.*STRING",
      r".*_string")),
    ("sequence", "sequence-typed values (SequenceProto) are not supported",
     (r"sequence_", r"split_to_sequence", r"concat_from_sequence", r"identity_sequence",
      r"(if|loop\d+)_seq", r"optional_.*_sequence")),
    ("optional", "optional-typed values (OptionalProto) are not supported",
     (r"optional_", r".*_opt$")),
    ("control_flow", "control-flow ops (If, Loop, Scan) are not in the op set",
     (r"if($|_)", r"loop\d+", r"scan\d*_", r"range_.*_expanded$")),
    ("data_dependent_shape", "output shape depends on input values",
     (r"nonzero", r"unique", r"compress", r"nonmaxsuppression")),
    ("recurrent", "recurrent ops not in the v0 op set",
     (r"simple_rnn", r"rnn_", r"gru_", r"lstm_")),
    ("quantization", "quantized ops (QuantizeLinear family, *Integer, QLinear*) not in the op "
     "set",
     # The DynamicQuantizeLinear bodies call QuantizeLinear, so they are skipped too.
     (r"dequantizelinear", r"quantizelinear", r"dynamicquantizelinear", r"qlinear",
      r"convinteger", r"matmulinteger")),
    ("signal", "signal-processing ops (DFT, STFT, windows, MelWeightMatrix) not in the op set",
     # Window bodies are Range/Cos/arithmetic graphs: kept in scope.
     (r"dft", r"stft", r"melweightmatrix",
      r"(blackman|hamming|hann)window(?!.*_expanded$)")),
    ("ml_domain", "ai.onnx.ml operators are not in the op set",
     (r"ai_onnx_ml_",)),
    ("dtype", "element type outside frame's dtypes (f32 f64 f16 bf16 i8 i16 i32 i64 u8 bool)",
     (r".*uint(16|32|64)", r".*float8", r".*e4m3", r".*e5m2", r".*u?int4(_|$)")),
)

_COMPILED = tuple((cat, why, re.compile("|".join("(?:%s)" % p for p in pats)))
                  for cat, why, pats in SKIP_CATEGORIES)


def classify(name):
    """Returns None if the case `name` (e.g. "test_abs") is in scope, else "<category>: <why>"."""
    base = os.path.basename(os.path.normpath(name))
    if base.startswith("test_"):
        base = base[len("test_"):]
    for cat, why, regex in _COMPILED:
        if regex.match(base):
            return "%s: %s" % (cat, why)
    return None


def classify_dir(case_dir):
    """Like classify(), but also skips a case directory without model.onnx (the "real" kind
    only records a download URL in data.json)."""
    if not os.path.isfile(os.path.join(case_dir, "model.onnx")):
        return "no_model: no model.onnx in the case directory (real-model cases need a download)"
    return classify(case_dir)


def category(name):
    """Returns the category name for a skipped case, or None when in scope."""
    reason = classify(name)
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
        cat = category(case)
        (by_cat[cat].append(case) if cat else in_scope.append(case))

    print("%d cases: %d in scope, %d skipped" % (len(cases), len(in_scope),
                                                 len(cases) - len(in_scope)))
    for cat, _, _ in SKIP_CATEGORIES:
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
