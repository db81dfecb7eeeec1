"""Share models (a regressor of every candidate's share of the per-workload best, the pick
the highest): saved and loaded through the safe format, consulted by ioazd with their scores
shown, refused when the manifest and the regressor disagree."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ioaz.classify.classes import DEFAULT_THRESHOLDS, classify, load_thresholds
from ioaz.classify.types import WindowFeatures
from ioaz.daemon.config import ConfigError, load_config
from ioaz.decide import DeviceInfo, initial_state, step
from ioaz.model.features import FEATURE_SCHEMA, vector

CANDS = ["cfq", "deadline", "none"]


def window(seq: float) -> WindowFeatures:
    f = WindowFeatures(device="sda", window_s=1.0, iops=180.0, read_bytes_per_s=7e5,
                       write_bytes_per_s=0.0, read_ratio=1.0, seq_ratio=seq, processes=8,
                       avg_depth=1.2, mean_size_bytes=4096.0, p50_latency_s=0.005,
                       p99_latency_s=0.03, merge_ratio=0.0, requests=180)
    f.workload_class = classify(f, load_thresholds(DEFAULT_THRESHOLDS))
    return f


@pytest.fixture()
def share_model(tmp_path):
    np = pytest.importorskip("numpy")
    pytest.importorskip("sklearn")
    from ioaz.learn.trainer import ShareModel, _predict, families
    from ioaz.model import file as model_file
    # sequential windows: cfq keeps all, deadline 60%; random: deadline best, cfq half
    X = [vector(window(s)) for s in np.linspace(0, 1, 40)]
    Y = [[1.0, 0.6, 0.5] if x[4] > 0.5 else [0.5, 1.0, 0.9] for x in X]
    est = families()["share-forest"]()
    est.fit(np.asarray(X), np.asarray(Y))
    model = ShareModel(est, CANDS)
    picks, conf = _predict(model, [vector(window(0.95)), vector(window(0.05))])
    # the confidence of a share model is its margin over the runner-up: cfq 1.0 against
    # deadline's 0.6, deadline 1.0 against none's 0.9
    assert picks == ["cfq", "deadline"]
    assert conf[0] == pytest.approx(0.4, abs=0.1) and conf[1] == pytest.approx(0.1, abs=0.05)
    path = model_file.save(tmp_path / "m.model.json", model, samples=X, goal="mean",
                           family="share-forest", policy_of={c: c for c in CANDS},
                           trained_on={"rows": len(X)})
    return path


def config(tmp: Path, model: Path, **extra) -> Path:
    doc = {"metrics": {"listen": None}, "state_dir": str(tmp / "state"),
           "classifier": {"type": "model", "model": str(model), **extra}}
    p = tmp / "ioaz.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_a_share_model_round_trips_and_ioazd_shows_its_scores(share_model, tmp_path):
    from ioaz.daemon.compose import verdicts_for
    from ioaz.daemon.views import verdict_dict
    from ioaz.model import file as model_file
    man = json.loads(share_model.read_text())
    assert man["output"] == "share" and man["classes"] == CANDS
    assert len(man["feature_schema"]["features"]) == len(FEATURE_SCHEMA)
    m = model_file.load(share_model)
    assert m.output == "share"
    scores = m.predict_proba(vector(window(0.95)))
    assert scores[0][0] == "cfq" and [p for p, _ in scores] == ["cfq", "deadline", "none"]
    assert all(0.0 <= v <= 1.0 for _, v in scores)

    cfg = load_config(config(tmp_path, share_model, min_confidence=0.5))
    state = initial_state(DeviceInfo("sda", rotational=True), ("none", "mq-deadline", "bfq"))
    decide = cfg.decide
    d = step(window(0.05), state, decide.settings, verdicts_for(cfg), 100.0, decide.policies)
    v = verdict_dict(d)
    assert v["provider"].startswith("model:") and v["policy"] == "deadline"
    assert v["candidates"][0][0] == "deadline" and "share of best" in v["text"]


def test_a_share_manifest_whose_labels_do_not_fit_the_regressor_is_refused(share_model,
                                                                          tmp_path):
    man = json.loads(share_model.read_text())
    man["classes"] = CANDS[:2]
    man["policy_of"] = {c: c for c in CANDS[:2]}
    bad = share_model.parent / "bad.model.json"
    bad.write_text(json.dumps(man))
    with pytest.raises(ConfigError, match="3 scores for the manifest's 2 labels"):
        load_config(config(tmp_path, bad))
    # a manifest from before the portable form: the same refusal from its skops file
    del man["portable"], man["portable_sha256"]
    bad.write_text(json.dumps(man))
    with pytest.raises(ConfigError, match="one output per label"):
        load_config(config(tmp_path, bad))
    man["output"] = "votes"
    bad.write_text(json.dumps(man))
    with pytest.raises(ConfigError, match="unknown model output 'votes'"):
        load_config(config(tmp_path, bad))


def test_a_share_model_that_cannot_tell_its_pick_from_the_next_leaves_it_to_the_matrix(
        share_model, tmp_path):
    from ioaz.daemon.compose import verdicts_for
    from ioaz.daemon.views import verdict_dict
    state = initial_state(DeviceInfo("sda", rotational=True), ("none", "mq-deadline", "bfq"))
    # random reads: deadline 1.0, none 0.9. Every score passes a probability's 0.6; the
    # margin, 0.1, passes 0.05 and not 0.2
    for margin, sure in ((0.05, True), (0.2, False)):
        cfg = load_config(config(tmp_path, share_model, min_margin=margin))
        assert cfg.min_margin == margin
        d = step(window(0.05), state, cfg.decide.settings, verdicts_for(cfg), 100.0,
                 cfg.decide.policies)
        v = verdict_dict(d)
        assert v["confidence"] == pytest.approx(0.1, abs=0.05)
        assert v["provider"].startswith("model:") is sure, v
        if not sure:
            assert f"margin over the runner-up below {margin:g}" in v["text"], v["text"]
    with pytest.raises(ConfigError, match="classifier.min_margin: expected a number from 0 "
                                          "to 1, got"):
        load_config(config(tmp_path, share_model, min_margin=2))


def test_a_model_that_reads_the_dirty_data_warns_where_debugfs_is_not_mounted(share_model,
                                                                             tmp_path):
    from ioaz.daemon.preflight import warnings
    cfg = load_config(config(tmp_path, share_model))
    assert "dirty_fill" in [n for n, _ in cfg.model.schema]
    (w,) = warnings(cfg, debugfs=tmp_path / "debug")
    assert w.startswith(f"{tmp_path / 'ioaz.yaml'}:") and "dirty_fill" in w
    assert "debugfs is not mounted" in w and str(share_model) in w
    (tmp_path / "debug" / "bdi").mkdir(parents=True)
    assert warnings(cfg, debugfs=tmp_path / "debug") == []
