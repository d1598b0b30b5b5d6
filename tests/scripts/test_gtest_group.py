#!/usr/bin/env python3
"""Checks tests/scripts/gtest_group.py against a fixture binary whose cases pass, skip, fail,
crash or hang on request (tests/scripts/gtest_group_fixture.cpp).

Usage: test_gtest_group.py FIXTURE_BINARY WORK_DIR
Each scenario runs the runner as ctest would and checks its exit status and the per-case
outcomes it records, which follow from what the fixture was asked to do.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "gtest_group.py")


def run(fixture, work, entry, flt, env=None, timeout=None):
    results = os.path.join(work, "results")
    e = dict(os.environ)
    for k in ("FIXTURE_FAIL", "FIXTURE_CRASH", "FIXTURE_HANG", "FIXTURE_LEAK_EXIT",
              "FIXTURE_SETUP_HANG", "FRAME_TEST_CASE_TIMEOUT", "FRAME_TEST_VERBOSE"):
        e.pop(k, None)
    e.update(env or {})
    if timeout is not None:
        e["FRAME_TEST_CASE_TIMEOUT"] = str(timeout)
    p = subprocess.run([sys.executable, RUNNER, "run", "--binary", fixture, "--filter", flt,
                        "--entry", entry, "--results", results],
                       env=e, capture_output=True, text=True, timeout=120)
    with open(os.path.join(results, entry + ".json")) as f:
        rec = json.load(f)
    status = {n.split(".", 1)[1] if n.startswith("Fixture.") else n: c["status"]
              for n, c in rec["cases"].items()}
    return p.returncode, status, rec, p.stdout


def expect(cond, what, out=""):
    if not cond:
        print(out)
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


def main():
    fixture, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    everything = {"APasses": "passed", "BSkips": "skipped", "CFails": "passed",
                  "DCrashes": "passed", "EHangs": "passed", "FSkipsToo": "skipped",
                  "GLastPasses": "passed"}

    rc, st, rec, out = run(fixture, work, "clean", "Fixture.*")
    expect(rc == 0 and st == everything, "a clean group passes; skips are counted", out)
    reasons = {c.get("reason") for c in rec["cases"].values() if c["status"] == "skipped"}
    expect(reasons == {"no device here"}, "the skip reason is recorded", out)
    expect("5 passed, 2 skipped, 0 failed" in out, "the summary line counts outcomes", out)

    rc, st, _, out = run(fixture, work, "gtest_env", "Fixture.*",
                         {"GTEST_PRINT_TIME": "0", "GTEST_BRIEF": "1", "GTEST_COLOR": "yes"})
    expect(rc == 0 and st == everything, "GTEST_* output settings do not change the outcome",
           out)

    rc, st, rec, out = run(fixture, work, "setup_hang", "Fixture.*",
                           {"FIXTURE_SETUP_HANG": "1"}, 2)
    expect(rc == 1 and "hung outside a case" in " ".join(rec["problems"]),
           "a hang in global set-up (outside every case) fails after the limit", out)

    rc, st, _, out = run(fixture, work, "skips", "Fixture.BSkips:Fixture.FSkipsToo")
    expect(rc == 77, "a group where every case skips exits 77 (ctest: not run)", out)

    rc, st, _, out = run(fixture, work, "fail", "Fixture.*", {"FIXTURE_FAIL": "1"})
    expect(rc == 1 and st["CFails"] == "failed" and st["BSkips"] == "skipped",
           "one failing case fails the entry even with skipped cases in it", out)
    expect("asked to fail" in out, "the failing case's message is printed", out)

    rc, st, rec, out = run(fixture, work, "crash", "Fixture.*", {"FIXTURE_CRASH": "1"})
    expect(rc == 1 and st["DCrashes"] == "failed", "a crash fails the entry", out)
    expect("crashed the process" in rec["cases"]["Fixture.DCrashes"]["reason"] and
           "SIGABRT" in rec["cases"]["Fixture.DCrashes"]["reason"],
           "the crash is charged to the case it happened in, with the signal", out)
    expect(st["EHangs"] == "passed" and st["GLastPasses"] == "passed" and len(st) == 7,
           "the cases after the crash still run, each once", out)

    rc, st, rec, out = run(fixture, work, "hang", "Fixture.*", {"FIXTURE_HANG": "1"}, 3)
    expect(rc == 1 and st["EHangs"] == "failed" and
           "timed out after 3 s" in rec["cases"]["Fixture.EHangs"]["reason"],
           "a hang becomes a failure naming the case after the per-case limit", out)
    expect(st["GLastPasses"] == "passed", "the cases after the hang still run", out)

    rc, st, rec, out = run(fixture, work, "leak", "Other.*", {"FIXTURE_LEAK_EXIT": "1"})
    expect(rc == 1 and st == {"Other.Passes": "passed"} and rec["problems"],
           "a non-zero exit after the last case fails the entry", out)

    rc, st, rec, out = run(fixture, work, "rest", "*-Fixture.*")
    expect(rc == 0 and st == {"Other.Passes": "passed"}, "a negative filter is honoured", out)

    rc, st, rec, out = run(fixture, work, "none", "NoSuch.*")
    expect(rc == 1 and rec["problems"], "a filter that selects nothing fails", out)

    p = subprocess.run([sys.executable, RUNNER, "summary", "--results",
                        os.path.join(work, "results")], capture_output=True, text=True)
    expect("gtest cases: " in p.stdout and "no device here" in p.stdout,
           "summary counts cases over the entries and lists skip reasons", p.stdout)


if __name__ == "__main__":
    main()
