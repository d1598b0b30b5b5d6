#!/usr/bin/env python3
"""Runs a group of GoogleTest cases in one process as one CTest entry, and sums up the results.

  gtest_group.py run --binary B --filter F --entry NAME --results DIR [--case-timeout S]
  gtest_group.py summary --results DIR [--matrix FILE] [--entries N] [--entry-prefix P]

`run` (what every discovered CTest entry calls; cmake/frame_gtest_list.cmake) starts B with
`--gtest_filter=F --gtest_output=json:...` and follows its `[ RUN ]` lines:
- pass/fail is the outcome of the cases, never a regular expression on the log: an entry in
  which one case is skipped and another fails is a failure;
- a case that crashes the process (signal, sanitizer abort, exit) or runs longer than the
  per-case limit (FRAME_TEST_CASE_TIMEOUT seconds, default 300; 0 = no limit) is a failure
  naming that case, and the cases after it still run: B is started again with a negative
  filter of every case already done;
- a non-zero exit after the last case (LeakSanitizer at exit, a failing global TearDown), a
  re-run that dies before its first case, and a hang outside any case (global set-up or
  tear-down, the same limit) fail the entry;
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
import math
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

RUN = re.compile(r"\[ RUN      \] (\S+)$")
END = re.compile(r"\[ +(OK|FAILED|SKIPPED) +\] (\S+) \(\d+ ms\)$")


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
            rest = [l.strip() for l in lines[i + 1:] if l.strip() and not END.search(l)]
            return " ".join(rest) or "(no reason given)"
    return "(no reason given)"


def _bounded_drain(q, into, seconds):
    """Appends what the reader still has to `into`, for at most `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            line = q.get(timeout=0.2)
        except queue.Empty:
            continue
        if line is None:
            return
        into.append(line)


def _segment(binary, positive, negatives, timeout, verbose, cases, out):
    """One process over positive minus negatives; records each case it ran into `cases`.

    Returns (exit code, the case in progress when the process ended or was killed, its output
    outside cases, whether it hung outside a case).
    """
    flt = positive + ("-" + ":".join(negatives) if negatives else "")
    fd, json_path = tempfile.mkstemp(prefix="gtest_", suffix=".json")
    os.close(fd)
    os.unlink(json_path)
    # gtest's own output flags pinned: the log format below must not follow GTEST_* settings.
    cmd = [binary, f"--gtest_filter={flt}", f"--gtest_output=json:{json_path}",
           "--gtest_color=no", "--gtest_brief=0", "--gtest_print_time=1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    q = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
    current, started, buf, pre = None, 0.0, [], []
    last_activity = time.monotonic()
    timed_out = hung_outside = False
    exited_at = None
    while True:
        try:
            line = q.get(timeout=0.5)
        except queue.Empty:
            line = ""
        if line is None:
            break
        now = time.monotonic()
        if exited_at is None and proc.poll() is not None:
            exited_at = now
            _kill(proc)  # children the test left behind hold the pipe open
        if exited_at is not None and now - exited_at > 5.0:
            break
        if exited_at is None and now - (started if current else last_activity) > timeout:
            timed_out = current is not None
            hung_outside = current is None
            _kill(proc)
            _bounded_drain(q, buf if current else pre, 5.0)
            break
        if not line:
            continue
        if verbose:
            out.write(line)
        m = RUN.search(line)
        if m:
            current, started, buf = m.group(1), now, [line]
            continue
        if current is None:
            pre.append(line)
            continue
        buf.append(line)
        e = END.search(line)  # also after a case's output that did not end its last line
        if e and e.group(2) == current:
            status = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[e.group(1)]
            rec = {"status": status, "seconds": round(now - started, 3)}
            if status == "skipped":
                rec["reason"] = _skip_reason(buf)
            if status == "failed":
                rec["log"] = "".join(buf)
            cases[current] = rec
            current, buf, last_activity = None, [], now
    rc = proc.wait()
    # JSON outcomes are authoritative where the process lived to write them.
    try:
        with open(json_path) as f:
            report = json.load(f)
        for suite in report.get("testsuites", []):
            for t in suite.get("testsuite", []):
                name = f"{t.get('classname', suite.get('name'))}.{t['name']}"
                if t.get("status") != "RUN":
                    continue
                rec = cases.setdefault(name, {"status": "passed"})
                if name == current and not timed_out:
                    current = None  # it completed: the log line was not recognised
                if t.get("failures"):
                    rec["status"] = "failed"
                    rec.setdefault("log", "\n".join(x.get("failure", "") for x in t["failures"]))
                elif t.get("result") == "SKIPPED":
                    rec["status"] = "skipped"
                    rec.setdefault("reason", "(no reason given)")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    finally:
        if os.path.exists(json_path):
            os.unlink(json_path)
    if current is not None:
        how = (f"timed out after {timeout:g} s (FRAME_TEST_CASE_TIMEOUT)" if timed_out
               else f"crashed the process ({_exit_text(rc)})")
        cases[current] = {"status": "failed", "reason": how, "log": "".join(buf),
                          "seconds": round(time.monotonic() - started, 3)}
    return rc, current, "".join(pre + buf), hung_outside


def _case_timeout(default):
    """FRAME_TEST_CASE_TIMEOUT in seconds; 0 or less: no limit."""
    v = os.environ.get("FRAME_TEST_CASE_TIMEOUT", "").strip()
    if not v:
        return default
    try:
        t = float(v)
    except ValueError:
        print(f"FRAME_TEST_CASE_TIMEOUT='{v}' is not a number of seconds; using {default:g}")
        return default
    return t if math.isfinite(t) and t > 0 else math.inf


# Linux limits one argument to 128 KiB; past this the rest of a group is reported, not run.
MAX_FILTER = 120_000


def cmd_run(a):
    timeout = _case_timeout(a.case_timeout)
    verbose = os.environ.get("FRAME_TEST_VERBOSE", "") not in ("", "0")
    out = sys.stdout
    positive, _, neg = a.filter.partition("-")
    base_negatives = [n for n in neg.split(":") if n]
    cases = {}
    problems = []
    t0 = time.monotonic()
    after = None  # the case whose crash or hang made this a re-run
    while True:
        seen = set(cases)
        negatives = base_negatives + sorted(cases)
        if len(positive) + sum(len(n) + 1 for n in negatives) > MAX_FILTER:
            problems.append(f"the cases after {after} were not run: the filter excluding the "
                            f"{len(seen)} cases already done is too long")
            break
        rc, current, tail, hung_outside = _segment(a.binary, positive, negatives, timeout,
                                                   verbose, cases, out)
        new_cases = len(cases) - len(seen)
        if current is not None:
            r = cases[current]
            if current in seen:
                problems.append(f"case {current} ran again after it was excluded")
                break
            out.write(f"\n*** {a.entry}: case {current} {r['reason']}; running the rest\n")
            out.write(r["log"])
            after = current
            continue  # the rest of the group, without what already ran
        if hung_outside:
            problems.append(f"the process hung outside a case for {timeout:g} s (global set-up "
                            "or tear-down, or a child holding it) and was killed")
            out.write(tail)
        elif rc != 0 and new_cases == 0:
            when = f"started again after case {after} ended it" if after else "started"
            problems.append(f"the binary was {when} and died before running a case "
                            f"({_exit_text(rc)})")
            out.write(tail)
        elif rc != 0 and (rc != 1 or not any(c["status"] == "failed" for c in cases.values())):
            # gtest exits 1 for failed cases; anything else (LeakSanitizer at exit) is a problem.
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
    fname = os.path.join(a.results, re.sub(r"[^A-Za-z0-9_.@-]", "_", a.entry) + ".json")
    with open(fname + ".tmp", "w") as f:  # renamed: a concurrent summary never reads half
        json.dump({"entry": a.entry, "binary": a.binary, "filter": a.filter,
                   "problems": problems,
                   "cases": {n: {k: v for k, v in c.items() if k != "log"}
                             for n, c in cases.items()}}, f, indent=0)
    os.replace(fname + ".tmp", fname)
    out.flush()
    if problems or counts["failed"]:
        return 1
    return 0 if counts["passed"] else 77


OPDB = re.compile(r"^OpDb\.[^/]+/([^/]+)/.*@([A-Za-z0-9_]+)$")


def cmd_summary(a):
    entries, damaged = [], []
    if os.path.isdir(a.results):
        for fn in sorted(os.listdir(a.results)):
            if not fn.endswith(".json") or not fn.startswith(a.entry_prefix):
                continue
            try:
                with open(os.path.join(a.results, fn)) as f:
                    e = json.load(f)
                if not isinstance(e.get("cases"), dict) or "entry" not in e:
                    raise ValueError("not a results file of gtest_group.py run")
                entries.append(e)
            except (OSError, ValueError, AttributeError) as err:
                damaged.append(f"{fn}: {err}")
    counts = collections.Counter()
    reasons = collections.Counter()
    failed = []
    matrix = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    backends = set()
    failed += [f"damaged results file {d}" for d in damaged]
    for e in entries:
        for p in e.get("problems", []):
            failed.append(f"{e['entry']}: {p}")
        for name, c in e["cases"].items():
            counts[c.get("status")] += 1
            if c.get("status") == "skipped":
                # One line per kind of decline, not per op: "kernel <op>@onednn does not ...".
                reason = str(c.get("reason", "(no reason given)"))
                reasons[re.sub(r"kernel [a-z0-9_]+@", "kernel <op>@", reason)] += 1
            if c.get("status") == "failed":
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
