#!/usr/bin/env python3
"""Runs a group of GoogleTest cases in one process as one CTest entry, and sums up the results.

  gtest_group.py run --binary B --filter F --entry NAME --results DIR [--case-timeout S]
  gtest_group.py summary --results DIR [--matrix FILE] [--entries N] [--entry-prefix P]

`run` (what every discovered CTest entry calls; cmake/frame_gtest_list.cmake) starts B with
`--gtest_filter=F --gtest_output=json:...` and follows its `[ RUN ]` lines:
- pass/fail is the outcome of the cases, never a regular expression on the log: an entry in
  which one case is skipped and another fails is a failure;
- a case that crashes the process (signal, sanitizer abort, exit) or runs longer than the
  per-case limit (FRAME_TEST_CASE_TIMEOUT seconds, default 300) is a failure naming that case,
  and the cases after it still run: B is started again with a negative filter of every case
  already done;
- a non-zero exit after the last case (LeakSanitizer at exit, a failing global TearDown) fails;
- case outcomes come from gtest's JSON report; skip reasons from the log (gtest 1.12's JSON
  carries none); both are written to DIR/<entry>.json for `summary`.
Exit status: 0 when no case failed and one passed, 77 when every case was skipped (the entry's
SKIP_RETURN_CODE: "not run" in ctest's summary), 1 otherwise. Only failing and crashing cases'
logs are printed (FRAME_TEST_VERBOSE=1 prints the whole log).

`summary` (scripts/test.sh, and the op_db_support_matrix entry) counts entries and cases over
DIR, prints the skip reasons with their counts and the failures, and writes the op database's
op x backend matrix (passed / declined / failed) to FILE from the OpDb.* entries.
docs/standards/build-and-test.md describes the scheme.
"""
import argparse
import collections
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

RUN = re.compile(r"^\[ RUN      \] (\S+)")
END = re.compile(r"^\[ +(OK|FAILED|SKIPPED) +\] (\S+) \(\d+ ms\)")


def _reader(stream, q):
    for line in iter(stream.readline, ""):
        q.put(line)
    q.put(None)


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _exit_text(rc):
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


def _skip_reason(lines):
    """The message of a GTEST_SKIP: the lines after "file:line: Skipped"."""
    for i, line in enumerate(lines):
        if line.rstrip().endswith(": Skipped"):
            rest = [l.strip() for l in lines[i + 1:] if l.strip() and not END.match(l)]
            return " ".join(rest) or "(no reason given)"
    return "(no reason given)"


def _segment(binary, positive, negatives, timeout, verbose, cases, out):
    """One process over positive minus negatives; records each case it ran into `cases`.

    Returns (exit code, the case in progress when the process ended or was killed, timed out).
    """
    flt = positive + ("-" + ":".join(negatives) if negatives else "")
    fd, json_path = tempfile.mkstemp(prefix="gtest_", suffix=".json")
    os.close(fd)
    os.unlink(json_path)
    cmd = [binary, f"--gtest_filter={flt}", f"--gtest_output=json:{json_path}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    q = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
    current, started, buf, pre = None, 0.0, [], []
    timed_out = False
    while True:
        try:
            line = q.get(timeout=1.0)
        except queue.Empty:
            line = ""
        if line is None:
            break
        if current is not None and time.monotonic() - started > timeout:
            timed_out = True
            _kill(proc)
            # Drain what the process still wrote, then stop.
            while q.get() is not None:
                pass
            break
        if not line:
            continue
        if verbose:
            out.write(line)
        m = RUN.match(line)
        if m:
            current, started, buf = m.group(1), time.monotonic(), [line]
            continue
        if current is None:
            pre.append(line)
            continue
        buf.append(line)
        e = END.match(line)
        if e and e.group(2) == current:
            status = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[e.group(1)]
            rec = {"status": status, "seconds": round(time.monotonic() - started, 3)}
            if status == "skipped":
                rec["reason"] = _skip_reason(buf)
            if status == "failed":
                rec["log"] = "".join(buf)
            cases[current] = rec
            current, buf = None, []
    rc = proc.wait()
    # JSON outcomes are authoritative where the process lived to write them.
    try:
        with open(json_path) as f:
            report = json.load(f)
        os.unlink(json_path)
        for suite in report.get("testsuites", []):
            for t in suite.get("testsuite", []):
                name = f"{t.get('classname', suite.get('name'))}.{t['name']}"
                if t.get("status") != "RUN" or name not in cases:
                    continue
                if t.get("failures"):
                    cases[name]["status"] = "failed"
                    cases[name].setdefault(
                        "log", "\n".join(x.get("failure", "") for x in t["failures"]))
                elif t.get("result") == "SKIPPED":
                    cases[name]["status"] = "skipped"
                    cases[name].setdefault("reason", "(no reason given)")
    except (OSError, ValueError):
        pass
    if current is not None:
        how = (f"timed out after {timeout:g} s (FRAME_TEST_CASE_TIMEOUT)" if timed_out
               else f"crashed the process ({_exit_text(rc)})")
        cases[current] = {"status": "failed", "reason": how, "log": "".join(buf),
                          "seconds": round(time.monotonic() - started, 3)}
    return rc, current, "".join(pre + buf)


def cmd_run(a):
    timeout = float(os.environ.get("FRAME_TEST_CASE_TIMEOUT", a.case_timeout))
    verbose = os.environ.get("FRAME_TEST_VERBOSE", "") not in ("", "0")
    out = sys.stdout
    positive, _, neg = a.filter.partition("-")
    base_negatives = [n for n in neg.split(":") if n]
    cases = {}
    problems = []
    t0 = time.monotonic()
    while True:
        done_before = len(cases)
        seen = set(cases)
        rc, current, tail = _segment(a.binary, positive, base_negatives + sorted(cases), timeout,
                                     verbose, cases, out)
        if current is not None:
            r = cases[current]
            if current in seen:
                problems.append(f"case {current} ran again after it was excluded")
                break
            out.write(f"\n*** {a.entry}: case {current} {r['reason']}; running the rest\n")
            out.write(r["log"])
            continue  # the rest of the group, without what already ran
        if rc != 0:
            failed_cases = any(c["status"] == "failed" for c in cases.values())
            if len(cases) == done_before and done_before == 0:
                problems.append(f"the binary died before running a case ({_exit_text(rc)})")
                out.write(tail)
            elif not failed_cases:
                problems.append(f"the process ended with {_exit_text(rc)} after its last case")
                out.write(tail)
        break
    counts = collections.Counter(c["status"] for c in cases.values())
    reasons = collections.Counter(c["reason"] for c in cases.values()
                                  if c["status"] == "skipped")
    for name, c in sorted(cases.items()):
        if c["status"] == "failed" and "reason" not in c:
            out.write(f"\n*** FAILED {name}\n{c.get('log', '')}")
    out.write(f"\n{a.entry}: {len(cases)} cases in {time.monotonic() - t0:.1f} s: "
              f"{counts['passed']} passed, {counts['skipped']} skipped, "
              f"{counts['failed']} failed\n")
    for reason, n in reasons.most_common(10):
        out.write(f"  skipped {n} x: {reason[:200]}\n")
    for name, c in sorted(cases.items()):
        if c["status"] == "failed":
            out.write(f"  FAILED {name}{': ' + c['reason'] if 'reason' in c else ''}\n"
                      f"    again alone: {a.binary} --gtest_filter='{name}'\n")
    for p in problems:
        out.write(f"  FAILED {a.entry}: {p}\n")
    if not cases and not problems:
        problems.append(f"the filter '{a.filter}' selected no case")
        out.write(f"  FAILED {a.entry}: {problems[-1]}\n")
    os.makedirs(a.results, exist_ok=True)
    fname = re.sub(r"[^A-Za-z0-9_.@-]", "_", a.entry) + ".json"
    with open(os.path.join(a.results, fname), "w") as f:
        json.dump({"entry": a.entry, "binary": a.binary, "filter": a.filter,
                   "problems": problems,
                   "cases": {n: {k: v for k, v in c.items() if k != "log"}
                             for n, c in cases.items()}}, f, indent=0)
    out.flush()
    if problems or counts["failed"]:
        return 1
    return 0 if counts["passed"] else 77


OPDB = re.compile(r"^OpDb\.[^/]+/([^/]+)/.*@([A-Za-z0-9_]+)$")


def cmd_summary(a):
    entries = []
    if os.path.isdir(a.results):
        for fn in sorted(os.listdir(a.results)):
            if fn.endswith(".json"):
                with open(os.path.join(a.results, fn)) as f:
                    entries.append(json.load(f))
    counts = collections.Counter()
    reasons = collections.Counter()
    failed = []
    matrix = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    backends = set()
    entries = [e for e in entries if e["entry"].startswith(a.entry_prefix)]
    for e in entries:
        for p in e["problems"]:
            failed.append(f"{e['entry']}: {p}")
        for name, c in e["cases"].items():
            counts[c["status"]] += 1
            if c["status"] == "skipped":
                # One line per kind of decline, not per op: "kernel <op>@onednn does not ...".
                reasons[re.sub(r"kernel [a-z0-9_]+@", "kernel <op>@", c["reason"])] += 1
            if c["status"] == "failed":
                failed.append(f"{name}: {c.get('reason', 'failed')}")
            m = OPDB.match(name)
            if m:
                op, backend = m.groups()
                backends.add(backend)
                matrix[op][backend][c["status"]] += 1
    total = sum(counts.values())
    print(f"gtest cases: {total} run in {len(entries)} grouped ctest entries"
          f"{f' (of {a.entries} ctest entries in all)' if a.entries else ''}: "
          f"{counts['passed']} passed, {counts['skipped']} skipped, {counts['failed']} failed")
    if reasons:
        print(f"skip reasons ({len(reasons)} distinct; the 15 most frequent):")
        for reason, n in reasons.most_common(15):
            print(f"  {n:5d} x {reason[:160]}")
    for f in failed:
        print(f"  FAILED {f}")
    if a.matrix and matrix:
        cols = sorted(backends, key=lambda b: (b != "cpu", b))
        lines = ["# Op database support matrix (passed / declined / failed cases)", "",
                 "| op | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
        for op in sorted(matrix):
            cells = []
            for b in cols:
                c = matrix[op].get(b)
                cells.append("-" if c is None else
                             f"{c['passed']} / {c['skipped']} / {c['failed']}")
            lines.append(f"| {op} | " + " | ".join(cells) + " |")
        with open(a.matrix, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"op database support matrix: {len(matrix)} ops x {len(cols)} backends -> "
              f"{a.matrix}")
    return 1 if failed and a.fail_on_failure else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--binary", required=True)
    r.add_argument("--filter", required=True)
    r.add_argument("--entry", required=True)
    r.add_argument("--results", required=True)
    r.add_argument("--case-timeout", type=float, default=300.0)
    s = sub.add_parser("summary")
    s.add_argument("--results", required=True)
    s.add_argument("--matrix")
    s.add_argument("--entries", type=int, default=0)
    s.add_argument("--entry-prefix", default="")
    s.add_argument("--fail-on-failure", action="store_true")
    a = ap.parse_args()
    return cmd_run(a) if a.cmd == "run" else cmd_summary(a)


if __name__ == "__main__":
    sys.exit(main())
