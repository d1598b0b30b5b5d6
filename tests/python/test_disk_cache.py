"""The compile cache on disk across processes (SessionOptions.cache_dir, `frame compile`,
`frame run --cache-dir`; docs/architecture/execution-model.md, "Compile cache on disk").

A torch export with dynamic H/W is run at several image sizes in one process, which writes an
entry per size; a second process reads every size from the directory without importing the
model or running a pass, and its outputs equal the first process's bit for bit and PyTorch's
within tolerance. `frame compile` fills a directory ahead of time; `frame run --cache-dir`
then runs no pass. Cost: about 4 s (torch import, one export, four short processes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

SIZES = [(16, 16), (24, 20), (9, 31)]
NEW = (13, 7)  # seen only by the second process


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 4, 3, stride=2, padding=1)

    def forward(self, x):
        y = torch.relu(self.bn(self.c1(x)))
        return nn.functional.interpolate(self.c2(y), scale_factor=2.0, mode="nearest")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    torch.manual_seed(0)
    net = Net().eval()
    path = tmp_path_factory.mktemp("disk_cache") / "net.onnx"
    torch.onnx.export(net, torch.randn(1, 3, 16, 16), str(path), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {2: "h", 3: "w"}}, opset_version=14)
    return net, str(path)


# Runs in a fresh interpreter: one session over the cache directory, every size once; writes
# each output and the session's counters and last report.
CHILD = textwrap.dedent("""
    import ast, json, sys
    import numpy as np
    import frame
    path, cache, out, sizes = sys.argv[1], sys.argv[2], sys.argv[3], ast.literal_eval(sys.argv[4])
    opts = frame.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.cache_dir = cache
    sess = frame.InferenceSession(path, sess_options=opts)
    rng = np.random.default_rng(0)
    result = {"outputs": []}
    for h, w in sizes:
        x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
        (y,) = sess.run(None, {"x": x})
        np.save(f"{out}_{h}x{w}.npy", y)
    result["stats"] = sess.cache_stats()
    result["report"] = sess.report()
    print(json.dumps(result))
""")


def child(path, cache, out, sizes):
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", CHILD, path, cache, out, repr(sizes)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_second_process_reads_every_shape_and_runs_no_pass(model, tmp_path):
    net, path = model
    cache = str(tmp_path / "cache")
    first, err1 = child(path, cache, str(tmp_path / "a"), SIZES)
    assert first["stats"]["disk_writes"] == len(SIZES)
    assert first["stats"]["disk_hits"] == 0
    assert first["report"]["pass_times_ms"], "the cold process ran the pipeline"
    second, err2 = child(path, cache, str(tmp_path / "b"), SIZES)
    assert "warning" not in err1 + err2
    assert second["stats"]["disk_hits"] == len(SIZES)
    assert second["stats"]["disk_misses"] == 0
    assert second["stats"]["disk_writes"] == 0
    assert second["report"]["disk_cache_hit"] is True
    assert second["report"]["pass_times_ms"] == []
    # A size the directory lacks is compiled (and stored) by a third process.
    third, _ = child(path, cache, str(tmp_path / "c"), SIZES[:1] + [NEW])
    assert third["stats"]["disk_hits"] == 1
    assert third["stats"]["disk_writes"] == 1
    rng = np.random.default_rng(0)
    rng.standard_normal((1, 3) + SIZES[0])  # the third process's first draw
    xn = rng.standard_normal((1, 3) + NEW).astype(np.float32)
    with torch.no_grad():
        np.testing.assert_allclose(np.load(tmp_path / ("c_%dx%d.npy" % NEW)),
                                   net(torch.from_numpy(xn)).numpy(), rtol=1e-3, atol=1e-4)
    rng = np.random.default_rng(0)
    for h, w in SIZES:
        x = rng.standard_normal((1, 3, h, w)).astype(np.float32)
        a = np.load(tmp_path / f"a_{h}x{w}.npy")
        b = np.load(tmp_path / f"b_{h}x{w}.npy")
        assert a.tobytes() == b.tobytes(), f"{h}x{w}: the entry's output differs from a compile"
        with torch.no_grad():
            ref = net(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(b, ref, rtol=1e-3, atol=1e-4)


def test_frame_compile_fills_the_directory_for_frame_run(model, tmp_path):
    cli = os.environ.get("FRAME_CLI")
    if not cli:
        pytest.skip("FRAME_CLI is not set (ctest sets it)")
    _, path = model
    cache = str(tmp_path / "cache")
    done = subprocess.run([cli, "compile", path, "--cache-dir", cache, "--shape", "x=1,3,20,12",
                           "--threads", "1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "stored" in done.stdout
    run = subprocess.run([cli, "run", path, "--cache-dir", cache, "--shape", "x=1,3,20,12",
                          "--threads", "1", "--json"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    j = json.loads(run.stdout)
    assert j["cache_dir"]["hits"] == 1
    assert j["cache_dir"]["pass_count"] == 0
    assert "specialize" not in j["compile_stages_ms"]
    assert j["outputs"][0]["shape"] == [1, 4, 20, 12]
    # Another thread count is another entry: compiled and stored, not read.
    other = subprocess.run([cli, "run", path, "--cache-dir", cache, "--shape", "x=1,3,20,12",
                            "--threads", "2", "--json"], capture_output=True, text=True,
                           timeout=120)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["cache_dir"]["writes"] == 1
