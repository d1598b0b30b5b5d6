"""Op database: grid_sample, roi_align, tf_idf_vectorizer.

References are numpy loops in float64 written from the ONNX operator spec text (GridSample
opset 16 with the reference implementation's border/reflection and bicubic rules, except that
bicubic pads each tap and never moves the sample point, RoiAlign opset 16, TfIdfVectorizer
opset 9); every GridSample case is also cross-checked against torch.nn.functional.grid_sample
(same conventions there). They never call frame.
"""
from __future__ import annotations

import numpy as np

from op_db.common import Case
from op_db.linalg import typed

# ---------------------------------------------------------------------------------------------
# GridSample


def _reflect(x, lo, hi):
    rng = hi - lo
    if rng <= 0:
        return lo
    if x < lo:
        d = lo - x
        n = int(d / rng)
        r = d - n * rng
        return lo + r if n % 2 == 0 else hi - r
    if x > hi:
        d = x - hi
        n = int(d / rng)
        r = d - n * rng
        return hi - r if n % 2 == 0 else lo + r
    return x


def _cubic(t):
    a = -0.75

    def near(s):  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return np.array([far(t + 1), near(t), near(1 - t), far(2 - t)])


def grid_sample_ref(mode, padding, align):
    def f(x, grid):
        n, c, h, w = x.shape
        ho, wo = grid.shape[1], grid.shape[2]
        y = np.zeros((n, c, ho, wo))
        lo_x, hi_x = (0.0, w - 1.0) if align else (-0.5, w - 0.5)
        lo_y, hi_y = (0.0, h - 1.0) if align else (-0.5, h - 0.5)

        def denorm(v, length):
            return (v + 1) / 2 * (length - 1) if align else ((v + 1) * length - 1) / 2

        def px(img, r, col):
            if padding == "zeros":
                return img[r, col] if 0 <= r < h and 0 <= col < w else 0.0
            if padding == "border":
                return img[min(max(r, 0), h - 1), min(max(col, 0), w - 1)]
            r = int(_reflect(float(r), lo_y, hi_y))
            col = int(_reflect(float(col), lo_x, hi_x))
            return img[r, col]

        for b in range(n):
            for i in range(ho):
                for j in range(wo):
                    xx = denorm(float(grid[b, i, j, 0]), w)
                    yy = denorm(float(grid[b, i, j, 1]), h)
                    if mode == "nearest":
                        xx, yy = float(np.rint(xx)), float(np.rint(yy))
                    # Bicubic pads each of its 16 taps and never moves the point itself
                    # (torch.nn.functional.grid_sample; issue 23): moving an outside point
                    # onto the border first, as the ONNX reference does, changes the taps'
                    # weights under border padding (reflection is symmetric, so equal).
                    if mode != "bicubic" and (xx < lo_x or xx > hi_x or yy < lo_y or
                                              yy > hi_y):
                        if padding == "border":
                            xx, yy = min(max(xx, 0.0), w - 1.0), min(max(yy, 0.0), h - 1.0)
                        elif padding == "reflection":
                            xx, yy = _reflect(xx, lo_x, hi_x), _reflect(yy, lo_y, hi_y)
                    for ch in range(c):
                        img = x[b, ch]
                        if mode == "nearest":
                            v = px(img, int(yy), int(xx))
                        elif mode == "bilinear":
                            x1, y1 = int(np.floor(xx)), int(np.floor(yy))
                            dx, dy = xx - x1, yy - y1
                            v = ((1 - dy) * ((1 - dx) * px(img, y1, x1) + dx * px(img, y1, x1 + 1))
                                 + dy * ((1 - dx) * px(img, y1 + 1, x1)
                                         + dx * px(img, y1 + 1, x1 + 1)))
                        else:
                            x0, y0 = int(np.floor(xx)) - 1, int(np.floor(yy)) - 1
                            p = np.array([[px(img, y0 + r, x0 + k) for k in range(4)]
                                          for r in range(4)])
                            v = _cubic(yy - np.floor(yy)) @ (p @ _cubic(xx - np.floor(xx)))
                        y[b, ch, i, j] = v
        return y
    return f


def _torch_check(x, grid, mode, padding, align, ref):
    import torch
    t = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(grid), mode=mode,
                                        padding_mode=padding, align_corners=bool(align)).numpy()
    if not np.allclose(t, ref, rtol=1e-9, atol=1e-9):
        raise AssertionError(f"grid_sample numpy reference disagrees with torch: {mode} "
                             f"{padding} align={align}")


def grid_sample_cases(rng):
    out = []
    x = rng.standard_normal((2, 3, 4, 5))
    # Points inside, on the borders and well outside [-1, 1] (reflection folds several times).
    grid = rng.uniform(-2.6, 2.6, size=(2, 3, 4, 2))
    grid[0, 0, 0] = [-1.0, 1.0]
    grid[0, 0, 1] = [0.0, 0.0]
    grid[1, 2, 3] = [1.0, -1.0]
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (0, 1):
                fn = grid_sample_ref(mode, padding, align)
                _torch_check(x, grid, mode, padding, align, fn(x, grid))
                out += typed("grid_sample", f"{mode}_{padding}_align{align}", fn, [x, grid],
                             {"mode": mode, "padding_mode": padding, "align_corners": align},
                             dtypes=("f32", "f64"), typed_inputs=(0, 1))
    # Inside points only: the grid maps exactly onto the pixel centres (identity sampling).
    ident = np.stack(np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 4)), axis=-1)[None]
    out += typed("grid_sample", "identity_align1", grid_sample_ref("bilinear", "zeros", 1),
                 [x[:1], ident], {"align_corners": 1}, dtypes=("f32",), typed_inputs=(0, 1))
    return out




# ---------------------------------------------------------------------------------------------
# RoiAlign


def _bilinear_terms(img, y, x):
    """The four weighted corner terms of one RoiAlign sample (all 0 beyond [-1, H] x [-1, W])."""
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return np.zeros(4)
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return np.array([hy * hx * img[y0, x0], hy * lx * img[y0, x1],
                     ly * hx * img[y1, x0], ly * lx * img[y1, x1]])


def roi_align_ref(oh, ow, sampling_ratio=0, spatial_scale=1.0, mode="avg", half_pixel=True):
    def f(x, rois, batch_indices):
        c = x.shape[1]
        y = np.zeros((rois.shape[0], c, oh, ow))
        off = 0.5 if half_pixel else 0.0
        for r in range(rois.shape[0]):
            x1, y1, x2, y2 = (float(v) * spatial_scale - off for v in rois[r])
            rw, rh = x2 - x1, y2 - y1
            if not half_pixel:
                rw, rh = max(rw, 1.0), max(rh, 1.0)
            bh, bw = rh / oh, rw / ow
            gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / oh))
            gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / ow))
            for ch in range(c):
                img = x[int(batch_indices[r]), ch]
                for i in range(oh):
                    for j in range(ow):
                        terms = [_bilinear_terms(img, y1 + i * bh + (iy + 0.5) * bh / gh,
                                                 x1 + j * bw + (ix + 0.5) * bw / gw)
                                 for iy in range(gh) for ix in range(gw)]
                        if mode == "max":
                            y[r, ch, i, j] = max(t.max() for t in terms) if terms else 0.0
                        else:
                            y[r, ch, i, j] = sum(t.sum() for t in terms) / max(gh * gw, 1)
        return y
    return f


def roi_align_cases(rng):
    out = []
    x = rng.standard_normal((2, 3, 10, 12))
    # x1, y1, x2, y2 in input pixels / spatial_scale: inside, partly outside, tiny, reversed.
    rois = np.array([[0.0, 0.0, 9.0, 9.0], [2.5, 1.0, 7.2, 8.8], [-3.0, -2.0, 4.0, 3.0],
                     [8.0, 6.0, 14.0, 12.5], [3.0, 3.0, 3.4, 3.2], [6.0, 5.0, 2.0, 1.0]])
    bidx = np.array([0, 1, 1, 0, 1, 0], dtype=np.int64)
    for name, oh, ow, sr, scale, mode, hp in [
        ("avg_half_pixel_sr2", 3, 4, 2, 1.0, "avg", True),
        ("avg_output_half_pixel_sr2", 3, 4, 2, 1.0, "avg", False),
        ("avg_adaptive", 2, 3, 0, 1.0, "avg", True),
        ("avg_adaptive_output_half_pixel", 4, 2, 0, 1.0, "avg", False),
        ("max_half_pixel_sr3", 3, 3, 3, 1.0, "max", True),
        ("max_adaptive_output_half_pixel", 2, 2, 0, 1.0, "max", False),
        ("avg_scale_half", 5, 5, 2, 0.5, "avg", True),
        ("max_scale_1p5_sr1", 2, 4, 1, 1.5, "max", True),
    ]:
        attrs = {"output_height": oh, "output_width": ow, "sampling_ratio": sr,
                 "spatial_scale": scale, "mode": mode,
                 "coordinate_transformation_mode": "half_pixel" if hp else "output_half_pixel"}
        out += typed("roi_align", name, roi_align_ref(oh, ow, sr, scale, mode, hp),
                     [x, rois, bidx], attrs, dtypes=("f32", "f64"), typed_inputs=(0, 1),
                     constant_inputs=[])
    return out


# ---------------------------------------------------------------------------------------------
# TfIdfVectorizer


def tf_idf_ref(attrs):
    """Counts from the spec text: n-grams of items i, i + d, ..., i + (n - 1) d for every
    distance d = skip + 1 (skip in [0, max_skip_count]); a 1-gram is counted once."""
    pool, counts = attrs["pool_int64s"], attrs["ngram_counts"]
    indexes = attrs["ngram_indexes"]
    weights = attrs.get("weights", [1.0] * len(indexes))
    grams = []  # the i-th n-gram of the pool, as a tuple
    for k, begin in enumerate(counts):
        end = counts[k + 1] if k + 1 < len(counts) else len(pool)
        grams += [tuple(pool[a:a + k + 1]) for a in range(begin, end, k + 1)]
    mode, lo, hi = attrs["mode"], attrs["min_gram_length"], attrs["max_gram_length"]
    skip = attrs["max_skip_count"]

    def row(seq):
        found = {}
        for n in range(lo, hi + 1):
            dists = [1] if n == 1 else range(1, skip + 2)
            for d in dists:
                for i in range(len(seq) - (n - 1) * d):
                    g = tuple(int(seq[i + j * d]) for j in range(n))
                    found[g] = found.get(g, 0) + 1
        y = np.zeros(max(indexes) + 1)
        for i, g in enumerate(grams):
            c = found.get(g, 0)
            y[indexes[i]] = c if mode == "TF" else (weights[i] * (c > 0) if mode == "IDF"
                                                    else c * weights[i])
        return y

    def f(x):
        out = row(x) if x.ndim == 1 else np.stack([row(r) for r in x])
        return out.astype(np.float32)
    return f


def tf_idf_cases(rng):
    out = []
    seq = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8, 9, 3, 7, 7])
    batch = rng.choice([1, 2, 3, 4, 5, 6, 7, 8], size=(3, 12))
    pool = [2, 3, 5, 4, 7,            # 1-grams
            5, 6, 7, 8, 6, 7, 3, 7,   # 2-grams
            1, 3, 3, 3, 7, 8, 2, 4, 1]  # 3-grams
    base = {"pool_int64s": pool, "ngram_counts": [0, 5, 13],
            "ngram_indexes": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}
    perm = [int(v) for v in rng.permutation(12) + 2]  # columns 0 and 1 stay empty
    wts = [0.5, 1.25, 2.0, 0.1, 3.0, 0.7, 1.5, 0.25, 4.0, 0.3, 2.5, 1.1]
    for name, extra in [
        ("tf_uni_to_tri_skip0", {"mode": "TF", "min_gram_length": 1, "max_gram_length": 3,
                                 "max_skip_count": 0}),
        ("tf_bi_tri_skip2", {"mode": "TF", "min_gram_length": 2, "max_gram_length": 3,
                             "max_skip_count": 2}),
        ("tf_uni_only_skip3", {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1,
                               "max_skip_count": 3}),
        ("idf_weights_skip1", {"mode": "IDF", "min_gram_length": 1, "max_gram_length": 3,
                               "max_skip_count": 1, "weights": wts}),
        ("idf_no_weights", {"mode": "IDF", "min_gram_length": 1, "max_gram_length": 2,
                            "max_skip_count": 1}),
        ("tfidf_weights_skip4", {"mode": "TFIDF", "min_gram_length": 1, "max_gram_length": 3,
                                 "max_skip_count": 4, "weights": wts}),
        ("tfidf_permuted_indexes", {"mode": "TFIDF", "min_gram_length": 2, "max_gram_length": 3,
                                    "max_skip_count": 1, "weights": wts,
                                    "ngram_indexes": perm}),
    ]:
        attrs = dict(base, **extra)
        for dt, np_dt in (("i32", np.int32), ("i64", np.int64)):
            for shape_name, x in (("1d", seq), ("2d", batch)):
                xi = x.astype(np_dt)
                out.append(Case(op="tf_idf_vectorizer", inputs=[xi],
                                outputs=[tf_idf_ref(attrs)(xi)], attrs=attrs,
                                name=f"{name}_{shape_name}_{dt}", constant_inputs=[]))
    return out


def cases():
    rng = np.random.default_rng(16)
    return grid_sample_cases(rng) + roi_align_cases(rng) + tf_idf_cases(rng)
