"""Op database: the recurrent ops lstm, gru and rnn (ONNX LSTM / GRU / RNN, opset 14).

References: a float64 numpy transcription of the operator spec's equations (one step, one batch
row at a time, written from the spec, not from the kernel), and torch.nn.LSTM / GRU / RNN for
the cases whose conventions torch shares (torch's GRU is linear_before_reset=1; torch's gate
orders i f g o / r z n are permuted into ONNX's i o f c / z r h). sequence_lens is fed as a
run-time input, as it does not decide any output shape. W, R, B and P are constants (as the
initializers of a model) except in the `*_runtime_weights` cases; backends that reorder weights
at prepare time (onednn) take only the constant ones.
"""
from __future__ import annotations

import numpy as np

from op_db.common import Case

try:
    import torch
except ImportError:  # the numpy references still cover every case
    torch = None

GATES = {"lstm": 4, "gru": 3, "rnn": 1}
DEFAULT_ACTS = {"lstm": ["Sigmoid", "Tanh", "Tanh"], "gru": ["Sigmoid", "Tanh"], "rnn": ["Tanh"]}
# Activation -> (function of x, alpha, beta; number of parameters, default alpha, beta).
ACTS = {
    "relu": (lambda x, a, b: np.maximum(x, 0), 0, 0.0, 0.0),
    "tanh": (lambda x, a, b: np.tanh(x), 0, 0.0, 0.0),
    "sigmoid": (lambda x, a, b: 1.0 / (1.0 + np.exp(-x)), 0, 0.0, 0.0),
    "affine": (lambda x, a, b: a * x + b, 2, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 1, 0.01, 0.0),
    "thresholdedrelu": (lambda x, a, b: np.where(x > a, x, 0.0), 1, 1.0, 0.0),
    "scaledtanh": (lambda x, a, b: a * np.tanh(b * x), 2, 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: np.clip(a * x + b, 0.0, 1.0), 2, 0.2, 0.5),
    "elu": (lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1.0)), 1, 1.0, 0.0),
    "softsign": (lambda x, a, b: x / (1.0 + np.abs(x)), 0, 0.0, 0.0),
    "softplus": (lambda x, a, b: np.log1p(np.exp(x)), 0, 0.0, 0.0),
}


def resolve_acts(names, alphas, betas):
    """Per name a callable; alpha/beta lists are consumed in order by the activations that
    take them (the convention of ONNX Runtime's recurrent kernels)."""
    out, ai, bi = [], 0, 0
    for n in names:
        f, nparams, a, b = ACTS[n.lower()]
        if nparams >= 1 and alphas and ai < len(alphas):
            a, ai = alphas[ai], ai + 1
        if nparams >= 2 and betas and bi < len(betas):
            b, bi = betas[bi], bi + 1
        out.append(lambda x, f=f, a=a, b=b: f(x, a, b))
    return out


def reference(op, X, W, R, B=None, lens=None, h0=None, c0=None, P=None, direction="forward",
              layout=0, clip=None, acts=None, alphas=None, betas=None, input_forget=0, lbr=0):
    """Returns (Y, Y_h, Y_c) in float64 following the ONNX equations."""
    X = X.astype(np.float64)
    if layout == 1:
        X = X.transpose(1, 0, 2)
    S, N, _ = X.shape
    D = 2 if direction == "bidirectional" else 1
    H = R.shape[-1]
    G = GATES[op]
    W, R = W.astype(np.float64), R.astype(np.float64)
    B = np.zeros((D, 2 * G * H)) if B is None else B.astype(np.float64)
    P = np.zeros((D, 3 * H)) if P is None else P.astype(np.float64)
    if h0 is not None and layout == 1:
        h0 = h0.transpose(1, 0, 2)
    if c0 is not None and layout == 1:
        c0 = c0.transpose(1, 0, 2)
    h0 = np.zeros((D, N, H)) if h0 is None else h0.astype(np.float64)
    c0 = np.zeros((D, N, H)) if c0 is None else c0.astype(np.float64)
    lens = [S] * N if lens is None else [int(v) for v in lens]
    names = acts or DEFAULT_ACTS[op] * D
    fns = resolve_acts(names, alphas, betas)
    per = len(DEFAULT_ACTS[op])
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    Y = np.zeros((S, D, N, H))
    Yh = np.zeros((D, N, H))
    Yc = np.zeros((D, N, H))
    for d in range(D):
        rev = direction == "reverse" or d == 1
        f = fns[d * per:(d + 1) * per]
        Wd, Rd, Wb, Rb = W[d], R[d], B[d, :G * H], B[d, G * H:]
        for n in range(N):
            h, c = h0[d, n].copy(), c0[d, n].copy()
            steps = range(lens[n] - 1, -1, -1) if rev else range(lens[n])
            for t in steps:
                x = X[t, n]
                if op == "lstm":
                    pi, po, pf = P[d, :H], P[d, H:2 * H], P[d, 2 * H:]
                    pre = [x @ Wd[k * H:(k + 1) * H].T + h @ Rd[k * H:(k + 1) * H].T +
                           Wb[k * H:(k + 1) * H] + Rb[k * H:(k + 1) * H] for k in range(4)]
                    i = f[0](cl(pre[0] + pi * c))
                    fg = 1.0 - i if input_forget else f[0](cl(pre[2] + pf * c))
                    cc = f[1](cl(pre[3]))
                    c = fg * c + i * cc
                    o = f[0](cl(pre[1] + po * c))
                    h = o * f[2](c)
                elif op == "gru":
                    def lin(k, v):
                        return v @ Rd[k * H:(k + 1) * H].T
                    xw = [x @ Wd[k * H:(k + 1) * H].T + Wb[k * H:(k + 1) * H] for k in range(3)]
                    rb = [Rb[k * H:(k + 1) * H] for k in range(3)]
                    z = f[0](cl(xw[0] + lin(0, h) + rb[0]))
                    r = f[0](cl(xw[1] + lin(1, h) + rb[1]))
                    if lbr:
                        hh = f[1](cl(xw[2] + r * (lin(2, h) + rb[2])))
                    else:
                        hh = f[1](cl(xw[2] + lin(2, r * h) + rb[2]))
                    h = (1.0 - z) * hh + z * h
                else:
                    h = f[0](cl(x @ Wd.T + h @ Rd.T + Wb + Rb))
                Y[t, d, n] = h
            Yh[d, n], Yc[d, n] = h, c
    if layout == 1:
        return Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, Yc


def make_inputs(rng, op, S, N, I, H, D, layout=0, dt=np.float32, bias=True, h0=False, c0=False,
                peep=False, lens=None):
    G = GATES[op]
    u = lambda *s: rng.uniform(-0.6, 0.6, s).astype(dt)  # noqa: E731
    X = u(S, N, I) if layout == 0 else u(N, S, I)
    st = (D, N, H) if layout == 0 else (N, D, H)
    return {
        "X": X, "W": u(D, G * H, I), "R": u(D, G * H, H), "B": u(D, 2 * G * H) if bias else None,
        "lens": None if lens is None else np.array(lens, np.int32),
        "h0": u(*st) if h0 else None, "c0": u(*st) if c0 else None,
        "P": u(D, 3 * H) if peep else None,
    }


def case(op, name, inp, n_out=None, dt=np.float32, rtol=None, atol=None, why="", const_w=True,
         **attrs):
    """A Case with expected outputs from `reference`; attrs are the node's ONNX attributes."""
    ref_kw = {"direction": attrs.get("direction", "forward"), "layout": attrs.get("layout", 0),
              "clip": attrs.get("clip"), "acts": attrs.get("activations"),
              "alphas": attrs.get("activation_alpha"), "betas": attrs.get("activation_beta"),
              "input_forget": attrs.get("input_forget", 0),
              "lbr": attrs.get("linear_before_reset", 0)}
    Y, Yh, Yc = reference(op, inp["X"], inp["W"], inp["R"], inp["B"], inp["lens"], inp["h0"],
                          inp["c0"], inp["P"], **ref_kw)
    ins = [inp["X"], inp["W"], inp["R"], inp["B"], inp["lens"], inp["h0"]]
    if op == "lstm":
        ins += [inp["c0"], inp["P"]]
    while ins[-1] is None:
        ins.pop()
    outs = [Y, Yh, Yc][:n_out or (3 if op == "lstm" else 2)]
    attrs = dict(attrs)
    attrs.setdefault("hidden_size", int(inp["R"].shape[-1]))
    const = [i for i in (1, 2, 3, 7) if const_w and i < len(ins) and ins[i] is not None]
    return Case(op, ins, [o.astype(dt) for o in outs], attrs, name, rtol=rtol, atol=atol, why=why,
                constant_inputs=const)


def lstm_cases(rng):
    out = []
    out.append(case("lstm", "defaults_f32", make_inputs(rng, "lstm", 4, 2, 3, 5, 1, bias=False)))
    out.append(case("lstm", "bidirectional_runtime_weights",
                    make_inputs(rng, "lstm", 4, 2, 3, 3, 2, h0=True, c0=True, peep=True),
                    const_w=False, direction="bidirectional"))
    out.append(case("lstm", "bias_states_peep", make_inputs(rng, "lstm", 5, 3, 4, 3, 1, h0=True,
                                                            c0=True, peep=True)))
    out.append(case("lstm", "reverse", make_inputs(rng, "lstm", 4, 2, 3, 4, 1, h0=True, c0=True),
                    direction="reverse"))
    out.append(case("lstm", "bidirectional_all", make_inputs(rng, "lstm", 5, 3, 4, 3, 2, h0=True,
                                                             c0=True, peep=True),
                    direction="bidirectional"))
    out.append(case("lstm", "layout1_bidirectional",
                    make_inputs(rng, "lstm", 4, 3, 2, 3, 2, layout=1, h0=True, c0=True, peep=True),
                    direction="bidirectional", layout=1))
    out.append(case("lstm", "seq_lens_bidirectional",
                    make_inputs(rng, "lstm", 5, 4, 3, 3, 2, h0=True, c0=True, lens=[5, 2, 1, 4]),
                    direction="bidirectional"))
    out.append(case("lstm", "seq_lens_layout1_reverse",
                    make_inputs(rng, "lstm", 4, 3, 3, 2, 1, layout=1, lens=[1, 4, 3]),
                    direction="reverse", layout=1))
    big = make_inputs(rng, "lstm", 4, 2, 3, 4, 1)
    big["X"] = (big["X"] * 8).astype(np.float32)
    out.append(case("lstm", "clip", big, clip=0.7))
    out.append(case("lstm", "input_forget", make_inputs(rng, "lstm", 4, 2, 3, 4, 1, peep=True),
                    input_forget=1))
    out.append(case("lstm", "activations_alpha_beta",
                    make_inputs(rng, "lstm", 4, 2, 3, 4, 2, h0=True),
                    direction="bidirectional",
                    activations=["HardSigmoid", "ScaledTanh", "LeakyRelu",
                                 "Sigmoid", "Affine", "Softsign"],
                    activation_alpha=[0.3, 0.9, 0.05, 0.7],
                    activation_beta=[0.4, 1.2, 0.1]))
    out.append(case("lstm", "only_y_h", make_inputs(rng, "lstm", 3, 2, 3, 2, 1), n_out=2))
    out.append(case("lstm", "only_y", make_inputs(rng, "lstm", 3, 2, 3, 2, 1), n_out=1))
    out.append(case("lstm", "f64", make_inputs(rng, "lstm", 4, 2, 3, 3, 2, dt=np.float64,
                                               h0=True, c0=True, peep=True),
                    dt=np.float64, direction="bidirectional"))
    out.append(case("lstm", "f16", make_inputs(rng, "lstm", 3, 2, 3, 3, 1, dt=np.float16,
                                               h0=True, c0=True),
                    dt=np.float16, rtol=5e-3, atol=2e-3,
                    why="reference in float64 from f16 inputs; kernel computes in float and "
                        "rounds to f16 once per output"))
    return out


def gru_cases(rng):
    out = []
    for lbr in (0, 1):
        out.append(case("gru", f"defaults_lbr{lbr}",
                        make_inputs(rng, "gru", 4, 2, 3, 5, 1, bias=False),
                        linear_before_reset=lbr))
        out.append(case("gru", f"bias_h0_lbr{lbr}",
                        make_inputs(rng, "gru", 5, 3, 4, 3, 1, h0=True),
                        linear_before_reset=lbr))
        out.append(case("gru", f"reverse_lbr{lbr}",
                        make_inputs(rng, "gru", 4, 2, 3, 4, 1, h0=True),
                        direction="reverse", linear_before_reset=lbr))
        out.append(case("gru", f"bidirectional_lbr{lbr}",
                        make_inputs(rng, "gru", 5, 3, 4, 3, 2, h0=True),
                        direction="bidirectional", linear_before_reset=lbr))
        out.append(case("gru", f"layout1_seq_lens_lbr{lbr}",
                        make_inputs(rng, "gru", 4, 3, 2, 3, 2, layout=1, h0=True,
                                    lens=[2, 4, 3]),
                        direction="bidirectional", layout=1, linear_before_reset=lbr))
    out.append(case("gru", "bidirectional_runtime_weights",
                    make_inputs(rng, "gru", 4, 2, 3, 3, 2, h0=True), const_w=False,
                    direction="bidirectional", linear_before_reset=1))
    out.append(case("gru", "seq_lens_forward",
                    make_inputs(rng, "gru", 5, 4, 3, 3, 1, lens=[5, 1, 3, 2])))
    big = make_inputs(rng, "gru", 4, 2, 3, 4, 1)
    big["X"] = (big["X"] * 8).astype(np.float32)
    out.append(case("gru", "clip", big, clip=0.5))
    out.append(case("gru", "activations", make_inputs(rng, "gru", 4, 2, 3, 4, 2, h0=True),
                    direction="bidirectional",
                    activations=["HardSigmoid", "Elu", "Sigmoid", "ThresholdedRelu"],
                    activation_alpha=[0.25, 0.8, 0.1], activation_beta=[0.45]))
    out.append(case("gru", "only_y", make_inputs(rng, "gru", 3, 2, 3, 2, 1), n_out=1))
    out.append(case("gru", "f64", make_inputs(rng, "gru", 4, 2, 3, 3, 2, dt=np.float64, h0=True),
                    dt=np.float64, direction="bidirectional", linear_before_reset=1))
    return out


def rnn_cases(rng):
    out = []
    out.append(case("rnn", "defaults", make_inputs(rng, "rnn", 4, 2, 3, 5, 1, bias=False)))
    out.append(case("rnn", "bias_h0", make_inputs(rng, "rnn", 5, 3, 4, 3, 1, h0=True)))
    out.append(case("rnn", "runtime_weights", make_inputs(rng, "rnn", 4, 2, 3, 3, 1, h0=True),
                    const_w=False))
    out.append(case("rnn", "bidirectional_sigmoid", make_inputs(rng, "rnn", 4, 2, 3, 3, 2),
                    direction="bidirectional", activations=["Sigmoid", "Sigmoid"]))
    out.append(case("rnn", "reverse", make_inputs(rng, "rnn", 4, 2, 3, 4, 1, h0=True),
                    direction="reverse"))
    out.append(case("rnn", "bidirectional_relu",
                    make_inputs(rng, "rnn", 5, 3, 4, 3, 2, h0=True),
                    direction="bidirectional", activations=["Relu", "Softplus"]))
    out.append(case("rnn", "layout1_seq_lens",
                    make_inputs(rng, "rnn", 4, 3, 2, 3, 2, layout=1, h0=True, lens=[3, 1, 4]),
                    direction="bidirectional", layout=1))
    big = make_inputs(rng, "rnn", 4, 2, 3, 4, 1)
    big["X"] = (big["X"] * 8).astype(np.float32)
    out.append(case("rnn", "clip_leaky", big, clip=0.6, activations=["LeakyRelu"],
                    activation_alpha=[0.2]))
    return out


def torch_cases(rng):
    """Expected values from torch.nn.LSTM / GRU / RNN (single layer), weights converted to
    ONNX gate order."""
    if torch is None:
        return []
    out = []
    S, N, I, H = 5, 3, 4, 6
    torch.manual_seed(0)
    for op, mod in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU), ("rnn", torch.nn.RNN)):
        for bidir in (False, True):
            m = mod(I, H, bidirectional=bidir).double()
            D = 2 if bidir else 1
            # torch row blocks -> ONNX row blocks
            perm = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2], "rnn": [0]}[op]
            G = len(perm)

            def reorder(a):
                return np.concatenate([a[k * H:(k + 1) * H] for k in perm], axis=0)

            Ws, Rs, Bs = [], [], []
            for d in range(D):
                sfx = "_reverse" if d == 1 else ""
                g = lambda n: getattr(m, n + "_l0" + sfx).detach().numpy()  # noqa: E731
                Ws.append(reorder(g("weight_ih")))
                Rs.append(reorder(g("weight_hh")))
                Bs.append(np.concatenate([reorder(g("bias_ih")), reorder(g("bias_hh"))]))
            X = rng.uniform(-1, 1, (S, N, I))
            h0 = rng.uniform(-1, 1, (D, N, H))
            c0 = rng.uniform(-1, 1, (D, N, H))
            with torch.no_grad():
                if op == "lstm":
                    y, (hn, cn) = m(torch.from_numpy(X), (torch.from_numpy(h0),
                                                          torch.from_numpy(c0)))
                else:
                    y, hn = m(torch.from_numpy(X), torch.from_numpy(h0))
            Y = y.numpy().reshape(S, N, D, H).transpose(0, 2, 1, 3)
            outs = [Y, hn.numpy()] + ([cn.numpy()] if op == "lstm" else [])
            f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
            ins = [f32(X), f32(np.stack(Ws)), f32(np.stack(Rs)), f32(np.stack(Bs)), None,
                   f32(h0)]
            if op == "lstm":
                ins.append(f32(c0))
            attrs = {"hidden_size": H}
            if bidir:
                attrs["direction"] = "bidirectional"
            if op == "gru":
                attrs["linear_before_reset"] = 1
            assert G * H == ins[1].shape[1]
            out.append(Case(op, ins, [f32(o) for o in outs], attrs,
                            f"torch_{'bidirectional' if bidir else 'forward'}",
                            constant_inputs=[1, 2, 3]))
    return out


def cases():
    rng = np.random.default_rng(11)
    return lstm_cases(rng) + gru_cases(rng) + rnn_cases(rng) + torch_cases(rng)
