"""Slow NMS references written from the specs (ONNX NonMaxSuppression, MMCV nms/offset,
torchvision batched_nms), in float64 unless told otherwise.  Rules, as fastops documents:
candidates have a non-NaN score > score_threshold, visited by (score desc, index asc);
a candidate is dropped when its IoU with a kept box of its group is > iou_threshold.
"""
import numpy as np


def corners(box, center_point_box):
    """(lo0, lo1, hi0, hi1) of one box: ONNX [y1, x1, y2, x2] any order, or [xc, yc, w, h]."""
    if center_point_box:
        c0, c1, w, h = box
        return c0 - w / 2, c1 - h / 2, c0 + w / 2, c1 + h / 2
    a, b, c, d = box
    return min(a, c), min(b, d), max(a, c), max(b, d)


def iou_exceeds(b1, b2, thr, center_point_box=0, offset=0):
    """ONNX reference IoU test (onnx/reference/ops/op_non_max_suppression.py), with MMCV's offset."""
    l0, l1, h0, h1 = corners(b1, center_point_box)
    m0, m1, k0, k1 = corners(b2, center_point_box)
    iw = min(h0, k0) - max(l0, m0) + offset
    ih = min(h1, k1) - max(l1, m1) + offset
    if not (iw > 0 and ih > 0):
        return False
    inter = iw * ih
    a1 = (h0 - l0 + offset) * (h1 - l1 + offset)
    a2 = (k0 - m0 + offset) * (k1 - m1 + offset)
    union = a1 + a2 - inter
    if not (inter > 0 and a1 > 0 and a2 > 0 and union > 0):
        return False
    return inter / union > thr


def greedy(boxes, scores, thr, score_threshold=None, max_out=None, center_point_box=0,
           offset=0, groups=None):
    """Kept indices of one box set, in (score desc, index asc) order."""
    n = len(scores)
    cand = [i for i in range(n) if not np.isnan(scores[i])
            and (score_threshold is None or scores[i] > score_threshold)]
    cand.sort(key=lambda i: (-float(scores[i]), i))
    kept = []
    for i in cand:
        if max_out is not None and len(kept) >= max_out:
            break
        if any((groups is None or groups[i] == groups[k])
               and iou_exceeds(boxes[i], boxes[k], thr, center_point_box, offset) for k in kept):
            continue
        kept.append(i)
    return kept


def non_max_suppression(boxes, scores, max_output_boxes_per_class=None, iou_threshold=0.0,
                        score_threshold=None, center_point_box=0, offset=0, pad=False):
    boxes = np.asarray(boxes, np.float64)
    scores = np.asarray(scores, np.float64)
    B, C = scores.shape[:2]
    rows = []
    for b in range(B):
        for c in range(C):
            for i in greedy(boxes[b], scores[b, c], iou_threshold, score_threshold,
                            max_output_boxes_per_class, center_point_box, offset):
                rows.append((b, c, i))
    out = np.array(rows, dtype=np.int64).reshape(-1, 3)
    if pad:
        m = boxes.shape[1] if max_output_boxes_per_class is None else max_output_boxes_per_class
        full = np.full((B * C * m, 3), -1, dtype=np.int64)
        full[:len(out)] = out
        out = full
    return out


def nms(boxes, scores, iou_threshold, score_threshold=None, max_num=None, offset=0):
    boxes = np.asarray(boxes, np.float64)
    scores = np.asarray(scores, np.float64)
    return np.array(greedy(boxes, scores, iou_threshold, score_threshold, max_num, 0, offset),
                    dtype=np.int64)


def batched_nms(boxes, scores, idxs, iou_threshold):
    boxes = np.asarray(boxes, np.float64)
    scores = np.asarray(scores, np.float64)
    return np.array(greedy(boxes, scores, iou_threshold, groups=list(idxs)), dtype=np.int64)


def nms_vectorized(boxes, scores, iou_threshold):
    """`nms` for large inputs: the same rules with one vectorized IoU row per kept box
    (float64; corners normalized; zero-area boxes never suppress or get suppressed)."""
    b = np.asarray(boxes, np.float64)
    s = np.asarray(scores, np.float64)
    lo, hi = np.minimum(b[:, :2], b[:, 2:]), np.maximum(b[:, :2], b[:, 2:])
    area = np.prod(hi - lo, axis=1)
    cand = np.flatnonzero(~np.isnan(s))
    order = cand[np.lexsort((cand, -s[cand]))]
    keep = []
    while order.size:
        i, rest = order[0], order[1:]
        keep.append(i)
        iw = np.minimum(hi[i, 0], hi[rest, 0]) - np.maximum(lo[i, 0], lo[rest, 0])
        ih = np.minimum(hi[i, 1], hi[rest, 1]) - np.maximum(lo[i, 1], lo[rest, 1])
        inter = iw * ih
        union = area[i] + area[rest] - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            sup = (iw > 0) & (ih > 0) & (inter > 0) & (area[i] > 0) & (area[rest] > 0) \
                & (union > 0) & (inter / union > iou_threshold)
        order = rest[~sup]
    return np.array(keep, dtype=np.int64)
