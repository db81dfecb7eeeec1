"""Train a classifier from a window's features straight to the best policy for a goal, and
measure what following it costs against the per-workload best, next to the derived matrix.

Samples: every run of the dataset, its features as measured under the candidate that ran
(the daemon sees features under whatever scheduler is active), labelled with the best
candidate of its *workload*. Labels: candidates within `tie` (4%) of the best count as tied;
among them the one that is best most often over the training workloads wins, so near-ties do
not turn into noise. Samples are weighted by the square of how much a wrong choice costs on
their workload (the mean share of the best a candidate loses there): a workload where every
scheduler does the same teaches little, one where the choice costs half the throughput
teaches most. The think-time features (features.py: depth per process, think time per
request) are inputs; the active scheduler is not (it did not help).

Share models (families share-*) minimise the loss itself rather than the errors: one
regressor with an output per candidate learns every candidate's share of the per-workload
best from the features, and the pick is the highest predicted share; a wrong pick that costs
1% then weighs little and one that costs 60% much. What each of these choices measured is in
docs/results.md, "Learning: why the trainer is shaped so".

Held out by workload, never by row: the runs of one workload (all candidates, all reps) are
all in training or all in the test fold (GroupKFold). Within each outer training fold the
family (tree, forest, boosting, logistic, and the share models) is chosen by an inner
GroupKFold on the mean performance loss, then fitted on the whole fold; the matrix is
derived from the same fold.
"""
from __future__ import annotations

import collections
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..classify.classes import Thresholds
from ..model.features import vector_from_dict
from ..model.gate import DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_MARGIN, Gate
from .dataset import Outcome, Row, loss, outcomes
from .derive import derive_table, row_class


def families() -> dict[str, Callable[[], Any]]:
    """Classifiers of the best candidate, and regressors of every candidate's share of the
    per-workload best (names starting share-: the pick is the highest predicted share)."""
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier
    return {
        "tree": lambda: DecisionTreeClassifier(max_depth=10, min_samples_leaf=2,
                                               random_state=0),
        "forest": lambda: RandomForestClassifier(n_estimators=150, min_samples_leaf=2,
                                                 random_state=0, n_jobs=1),
        "boosting": lambda: GradientBoostingClassifier(n_estimators=60, max_depth=3,
                                                       learning_rate=0.1, random_state=0),
        "logistic": lambda: Pipeline([("scale", StandardScaler()),
                                      ("logistic", LogisticRegression(max_iter=3000, C=3.0))]),
        "share-forest": lambda: RandomForestRegressor(n_estimators=150, min_samples_leaf=2,
                                                      random_state=0, n_jobs=1),
        "share-forest-leaf6": lambda: RandomForestRegressor(n_estimators=150,
                                                            min_samples_leaf=6,
                                                            random_state=0, n_jobs=1),
        "share-boosting": lambda: MultiOutputRegressor(GradientBoostingRegressor(
            n_estimators=100, max_depth=3, learning_rate=0.1, random_state=0)),
    }


SHARE = "share-"


class ShareModel:
    """A regressor of every candidate's share of the per-workload best (one output per
    candidate, in `classes_` order); its scores are those shares, its pick the highest."""

    def __init__(self, estimator: Any, classes: list[str]) -> None:
        self.estimator = estimator
        self.classes_ = list(classes)

    def scores(self, X: Any) -> Any:
        import numpy as np
        p = np.asarray(self.estimator.predict(np.asarray(X, dtype=float)), dtype=float)
        return np.clip(p.reshape(len(p), -1), 0.0, 1.0)


def scores(est: Any, X: Any) -> tuple[list[str], Any]:
    """(labels, one row of scores per sample): a classifier's probabilities, or a share
    model's predicted shares of the per-workload best."""
    import numpy as np
    if isinstance(est, ShareModel):
        return [str(c) for c in est.classes_], est.scores(X)
    return [str(c) for c in est.classes_], est.predict_proba(np.asarray(X, dtype=float))


def samples(rows: list[Row]) -> list[list[float]]:
    """The rows' feature vectors, as the models are fitted on them."""
    return [vector_from_dict(r.features) for r in rows]


def labels(outs: dict[str, dict[str, Outcome]], goal: str, tie: float) -> dict[str, str]:
    """workload -> its best candidate, near-ties broken by how often a candidate is best."""
    tied: dict[str, list[str]] = {}
    wins: collections.Counter = collections.Counter()
    for w, per in outs.items():
        scores = {c: o.score(goal) for c, o in per.items()}
        top = max(scores.values())
        tied[w] = sorted(c for c, s in scores.items() if s >= top * (1 - tie))
        wins.update(tied[w])
    return {w: max(cs, key=lambda c: (wins[c], c == min(cs), c)) for w, cs in tied.items()}


def stakes(per: dict[str, Outcome], goal: str) -> float:
    """What a choice is worth on a workload: the mean share of the best a candidate loses."""
    sc = [o.score(goal) for o in per.values()]
    best = max(sc)
    if best <= 0:
        return MIN_WEIGHT
    return max(MIN_WEIGHT, 1.0 - statistics.fmean(x / best for x in sc)) ** 2


MIN_WEIGHT = 0.05   # squared: 0.0025, so no sample is ignored


@dataclass
class Split:
    rows: list[Row]
    X: list[list[float]]
    y: list[str]
    groups: list[str]
    weights: list[float]
    candidates: list[str]           # every candidate of the dataset, sorted
    shares: list[list[float]]       # per row: each candidate's share of its workload's best


def make_split(rows: list[Row], goal: str, tie: float) -> Split:
    outs = outcomes(rows)
    lab = labels(outs, goal, tie)
    w = {k: stakes(per, goal) for k, per in outs.items()}
    cands = sorted({r.candidate for r in rows})
    sh = {k: [_share(per, c, goal) for c in cands] for k, per in outs.items()}
    return Split(rows, samples(rows),
                 [lab[r.workload] for r in rows], [r.workload for r in rows],
                 [w[r.workload] for r in rows], cands, [sh[r.workload] for r in rows])


def _fit(name: str, s: Split) -> Any:
    import numpy as np
    from sklearn.pipeline import Pipeline
    est = families()[name]()
    X = np.asarray(s.X, dtype=float)
    if name.startswith(SHARE):
        est.fit(X, np.asarray(s.shares, dtype=float))
        return ShareModel(est, s.candidates)
    classes = sorted(set(s.y))
    if len(classes) == 1:             # one policy wins everything: nothing to learn
        from sklearn.dummy import DummyClassifier
        est = DummyClassifier(strategy="most_frequent")
    y, w = np.asarray(s.y), np.asarray(s.weights)
    if isinstance(est, Pipeline):
        est.fit(X, y, **{f"{est.steps[-1][0]}__sample_weight": w})
    else:
        est.fit(X, y, sample_weight=w)
    return est


def _output(est: Any) -> str:
    """What an estimator's scores are, as model/gate.py reads them."""
    return "share" if isinstance(est, ShareModel) else "proba"


def _predict(est: Any, X: list[list[float]],
             gate: Gate | None = None) -> tuple[list[str], list[float]]:
    """The pick per sample and the model's confidence in it, as the daemon's gate reads it
    (model/gate.py: a probability, or a share model's margin over its runner-up)."""
    cls, sc = scores(est, X)
    idx = sc.argmax(axis=1)
    gate = gate or Gate()
    conf = [gate.confidence(sorted((float(x) for x in row), reverse=True), _output(est))
            for row in sc]
    return [cls[i] for i in idx], conf


def _losses(rows: list[Row], chosen: list[str], goal: str,
            outs: dict[str, dict[str, Outcome]]) -> list[float]:
    return [loss(outs[r.workload], c, goal) for r, c in zip(rows, chosen, strict=True)]


def _folds(groups: list[str], k: int, seed: int) -> list[tuple[list[int], list[int]]]:
    from sklearn.model_selection import GroupKFold
    uniq = sorted(set(groups))
    k = max(2, min(k, len(uniq)))
    gkf = GroupKFold(n_splits=k, shuffle=True, random_state=seed)
    idx = list(range(len(groups)))
    return [(list(a), list(b)) for a, b in gkf.split(idx, groups=groups)]


def select_family(s: Split, goal: str, tie: float, k: int = 3,
                  seed: int = 0) -> tuple[str, dict[str, dict[str, float]]]:
    """The family with the lowest mean loss over an inner GroupKFold (ties: accuracy)."""
    outs = outcomes(s.rows)
    fams = families()
    scores: dict[str, dict[str, float]] = {}
    folds = _folds(s.groups, k, seed)
    for name in fams:
        ls, acc = [], []
        for tr, te in folds:
            sub = make_split([s.rows[i] for i in tr], goal, tie)
            est = _fit(name, sub)
            pred, _ = _predict(est, [s.X[i] for i in te])
            ls += _losses([s.rows[i] for i in te], pred, goal, outs)
            acc += [p == s.y[i] for p, i in zip(pred, te, strict=True)]
        scores[name] = {"loss": statistics.fmean(ls), "accuracy": statistics.fmean(acc)}
    best = min(scores, key=lambda n: (scores[n]["loss"], -scores[n]["accuracy"], n))
    return best, scores


@dataclass
class Evaluation:
    goal: str
    workloads: int
    rows: int
    folds: int
    accuracy: float
    model_loss: float               # mean share of the per-workload best lost, held-out rows
    model_loss_max: float
    matrix_loss: float
    matrix_loss_max: float
    fallback_loss: float            # model, falling back to the matrix where the gate says
    model_loop_loss: float          # closed loop: following the model until it settles
    matrix_loop_loss: float         # ... the matrix likewise
    fixed_loss: float               # the single policy best on the training workloads
    fixed_policy: str
    families_chosen: list[str]
    inner_loss: float               # the chosen families' loss on their inner folds (mean)
    labels: list[str]
    confusion: list[list[int]]      # rows: true label, columns: predicted
    min_confidence: float
    min_margin: float
    below_confidence: float         # share of held-out rows the gate sent to the matrix
    per_workload: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def evaluate(rows: list[Row], goal: str, t: Thresholds, k: int = 5, tie: float = 0.04,
             min_confidence: float = DEFAULT_MIN_CONFIDENCE,
             min_margin: float = DEFAULT_MIN_MARGIN, seed: int = 0) -> Evaluation:
    """Outer GroupKFold over workloads: every workload is held out exactly once."""
    from sklearn.metrics import confusion_matrix
    full = make_split(rows, goal, tie)
    outs = outcomes(rows)
    folds = _folds(full.groups, k, seed)
    gate = Gate(min_confidence, min_margin)
    m_loss, x_loss, f_loss, b_loss, below = [], [], [], [], 0
    m_loop: list[float] = []
    x_loop: list[float] = []
    y_true, y_pred, chosen_fams = [], [], []
    inner: list[float] = []
    fixed_names = []
    per_w: dict[str, dict[str, Any]] = {}
    for tr, te in folds:
        train = make_split([rows[i] for i in tr], goal, tie)
        fam, fam_scores = select_family(train, goal, tie, seed=seed)
        chosen_fams.append(fam)
        inner.append(fam_scores[fam]["loss"])
        est = _fit(fam, train)
        test_rows = [rows[i] for i in te]
        pred, conf = _predict(est, [full.X[i] for i in te], gate)
        table = derive_table(train.rows, goal, t)
        cand_of = {r.policy: r.candidate for r in train.rows}
        mat = [cand_of.get(table[row_class(r, t)].policy, table[row_class(r, t)].policy)
               for r in test_rows]
        sure = [gate.passes(c, _output(est)) for c in conf]
        fb = [p if ok else m for p, ok, m in zip(pred, sure, mat, strict=True)]
        below += sure.count(False)
        tr_outs = outcomes(train.rows)
        fixed = max(sorted({c for per in tr_outs.values() for c in per}),
                    key=lambda c: sum(_share(per, c, goal) for per in tr_outs.values()))
        fixed_names.append(fixed)
        m_loop += _loop_losses(test_rows, pred, goal, outs)
        x_loop += _loop_losses(test_rows, mat, goal, outs)
        ml = _losses(test_rows, pred, goal, outs)
        xl = _losses(test_rows, mat, goal, outs)
        m_loss += ml
        x_loss += xl
        f_loss += _losses(test_rows, fb, goal, outs)
        b_loss += _losses(test_rows, [fixed] * len(test_rows), goal, outs)
        y_true += [full.y[i] for i in te]
        y_pred += pred
        for r, a, b in zip(test_rows, ml, xl, strict=True):
            d = per_w.setdefault(r.workload, {"model": [], "matrix": []})
            d["model"].append(a)
            d["matrix"].append(b)
    labs = sorted(set(y_true) | set(y_pred))
    cm = confusion_matrix(y_true, y_pred, labels=labs).tolist()
    return Evaluation(
        goal=goal, workloads=len(outs), rows=len(rows), folds=len(folds),
        accuracy=statistics.fmean(a == b for a, b in zip(y_true, y_pred, strict=True)),
        model_loss=statistics.fmean(m_loss), model_loss_max=max(m_loss),
        matrix_loss=statistics.fmean(x_loss), matrix_loss_max=max(x_loss),
        fallback_loss=statistics.fmean(f_loss), fixed_loss=statistics.fmean(b_loss),
        model_loop_loss=statistics.fmean(m_loop), matrix_loop_loss=statistics.fmean(x_loop),
        fixed_policy=collections.Counter(fixed_names).most_common(1)[0][0],
        families_chosen=chosen_fams, inner_loss=statistics.fmean(inner), labels=labs, confusion=cm,
        min_confidence=min_confidence, min_margin=min_margin,
        below_confidence=below / len(rows),
        per_workload={w: {"model": statistics.fmean(d["model"]),
                          "matrix": statistics.fmean(d["matrix"])}
                      for w, d in sorted(per_w.items())})


def _loop_losses(rows: list[Row], chosen: list[str], goal: str,
                 outs: dict[str, dict[str, Outcome]]) -> list[float]:
    """The daemon's closed loop, from each row: switch to the choice, read the features the
    workload shows under it (the dataset has that run), choose again, until the choice
    stays. A cycle (the choice flips between policies) costs the mean of its members."""
    choice = {(r.workload, r.candidate): c for r, c in zip(rows, chosen, strict=True)}
    out = []
    for r in rows:
        path = [r.candidate]
        cur = choice[(r.workload, r.candidate)]
        while cur not in path and (r.workload, cur) in choice:
            path.append(cur)
            cur = choice[(r.workload, cur)]
        if cur == path[-1] or (r.workload, cur) not in choice:
            out.append(loss(outs[r.workload], cur, goal))
        else:
            cycle = path[path.index(cur):]
            out.append(statistics.fmean(loss(outs[r.workload], c, goal) for c in cycle))
    return out


def _share(per: dict[str, Outcome], c: str, goal: str) -> float:
    best = max(o.score(goal) for o in per.values())
    return per[c].score(goal) / best if c in per and best > 0 else 0.0


def train_final(rows: list[Row], goal: str, tie: float = 0.04,
                seed: int = 0) -> tuple[Any, str, dict[str, dict[str, float]]]:
    """The model to ship: family chosen by GroupKFold over all workloads, fitted on all."""
    s = make_split(rows, goal, tie)
    fam, scores = select_family(s, goal, tie, k=5, seed=seed)
    return _fit(fam, s), fam, scores
