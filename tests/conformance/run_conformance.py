#!/usr/bin/python3
"""Runs the ONNX backend node-test suite through frame and writes a per-op report.

Usage:
  run_conformance.py --data DIR --runner PATH/frame_conformance --report FILE
                     [--min-pass-rate 0.793] [--filter SUBSTR] [--no-generate]

Steps: generate the node-test data into DIR (generate_data.sh, skipped when present);
classify every case with classify.py (its SKIP_CATEGORIES table is the one skip list);
run the in-scope cases with frame_conformance (cpu backend, or the chain in the environment
variable FRAME_CONFORMANCE_BACKENDS, e.g. "auto"; every input fed as the suite ships it,
through a runtime::Session; BUILD-011 op tolerance, one process per case); write FILE (Markdown: summary, per-op pass/fail table, every failure
with its stage and message, every skip with its reason); print the closing line
"N passed, N failed, N skipped". Exits 1 when the pass rate of in-scope cases is below
--min-pass-rate.
"""

import argparse
import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # keep the source tree clean when ctest runs this

import classify  # noqa: E402  (the one skip list)


def case_ops(model_path):
    """Op types of a case model's main graph (domain-qualified outside ai.onnx), Constant
    excluded unless it is the only op."""
    import onnx

    model = onnx.load(model_path, load_external_data=False)
    ops = []
    for n in model.graph.node:
        op = n.op_type if n.domain in ("", "ai.onnx") else n.domain + "::" + n.op_type
        if op not in ops:
            ops.append(op)
    rest = [o for o in ops if o != "Constant"]
    return rest or ops


def tested_op(case, model_ops, all_ops):
    """The op a node-test case is named for (test_<op>_<variant>): the model's only op, else
    (test_sce_*, test_nllloss_*, test_mvn_* by their short names) the op whose lower-case
    name shares the longest prefix with the case name without underscores (a whole-name match
    wins a tie, so test_cast_* is Cast, not CastLike). Ops of the case's model are tried first,
    then every ONNX op (an *_expanded case's model holds only the function body). Charging a
    case to this op alone keeps a failing composite case from marking Add or Mul as broken."""
    if len(model_ops) == 1:
        return model_ops[0]
    name = case[len("test_"):].replace("_", "").lower()
    for short, op in (("sce", "SoftmaxCrossEntropyLoss"), ("nllloss", "NegativeLogLikelihoodLoss"),
                      ("mvn", "MeanVarianceNormalization")):
        if name.startswith(short):
            return op

    def best(candidates):
        scored = []
        for op in candidates:
            low = op.split("::")[-1].lower()
            k = 0
            while k < min(len(low), len(name)) and low[k] == name[k]:
                k += 1
            if k >= 3 or k == len(low):
                scored.append((k, k == len(low), op))
        return max(scored)[2] if scored else None

    return best(model_ops) or best(all_ops) or "(other)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="generated data dir (holds node/)")
    ap.add_argument("--runner", required=True, help="path of the frame_conformance binary")
    ap.add_argument("--report", required=True, help="Markdown report to write")
    ap.add_argument("--min-pass-rate", type=float, default=0.793)
    ap.add_argument("--filter", default=None, help="only cases whose name contains this")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per case")
    ap.add_argument("--no-generate", action="store_true")
    args = ap.parse_args()

    if not args.no_generate:
        subprocess.run([os.path.join(HERE, "generate_data.sh"), args.data], check=True,
                       stdout=subprocess.DEVNULL)
    node_dir = os.path.join(args.data, "node")
    cases = sorted(d for d in os.listdir(node_dir) if os.path.isdir(os.path.join(node_dir, d)))
    if args.filter:
        cases = [c for c in cases if args.filter in c]

    skipped = {}
    in_scope = []
    for c in cases:
        reason = classify.classify_dir(os.path.join(node_dir, c))
        if reason is None:
            in_scope.append(c)
        else:
            skipped[c] = reason

    base = os.path.splitext(args.report)[0]
    cases_tsv = base + ".cases.tsv"
    results_tsv = base + ".results.tsv"
    with open(cases_tsv, "w") as f:
        for c in in_scope:
            f.write(os.path.join(node_dir, c) + "\n")
    subprocess.run([args.runner, "--cases", cases_tsv, "--results", results_tsv, "--timeout",
                    str(args.timeout)], check=True)

    results = {}
    with open(results_tsv) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t", 3)
            while len(parts) < 4:
                parts.append("")
            results[parts[0]] = (parts[1] == "pass", parts[2], parts[3])

    import onnx.defs

    all_ops = sorted({sch.name for sch in onnx.defs.get_all_schemas_with_history()})
    per_op = collections.defaultdict(lambda: [0, 0])
    for c in in_scope:
        ok = results.get(c, (False, "missing", ""))[0]
        op = tested_op(c, case_ops(os.path.join(node_dir, c, "model.onnx")), all_ops)
        per_op[op][0 if ok else 1] += 1

    passed = sum(1 for c in in_scope if results.get(c, (False,))[0])
    failed = len(in_scope) - passed
    rate = passed / len(in_scope) if in_scope else 1.0

    with open(args.report, "w") as f:
        backends = os.environ.get("FRAME_CONFORMANCE_BACKENDS") or "cpu"
        f.write("# ONNX node-test conformance (backends: %s)\n\n" % backends)
        f.write("%d cases: %d in scope, %d skipped. In scope: %d passed, %d failed "
                "(pass rate %.1f%%).\n\n" % (len(cases), len(in_scope), len(skipped), passed,
                                              failed, 100.0 * rate))
        f.write("## Per op\n\nEach case counts once, for the op it is named for "
                "(test_<op>_...), not for every op inside its model.\n\n"
                "| op | passed | failed |\n|---|---:|---:|\n")
        for op in sorted(per_op):
            f.write("| %s | %d | %d |\n" % (op, per_op[op][0], per_op[op][1]))
        f.write("\n## Failures\n\n| case | stage | message |\n|---|---|---|\n")
        for c in in_scope:
            ok, stage, msg = results.get(c, (False, "missing", "no result"))
            if not ok:
                f.write("| %s | %s | %s |\n" % (c, stage, msg.replace("|", "\\|")))
        f.write("\n## Skipped\n\n| case | reason |\n|---|---|\n")
        for c in sorted(skipped):
            f.write("| %s | %s |\n" % (c, skipped[c]))

    by_stage = collections.Counter(results.get(c, (False, "missing"))[1] for c in in_scope
                                   if not results.get(c, (False,))[0])
    if failed:
        print("failures by stage: " + ", ".join("%s %d" % kv for kv in by_stage.most_common()))
    print("report: %s (pass rate %.1f%%, required %.1f%%)" % (args.report, 100.0 * rate,
                                                             100.0 * args.min_pass_rate))
    print("%d passed, %d failed, %d skipped" % (passed, failed, len(skipped)))
    return 0 if rate >= args.min_pass_rate else 1


if __name__ == "__main__":
    sys.exit(main())
