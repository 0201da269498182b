from __future__ import annotations

import numpy as np
import pytest

from omnieval.training import balanced_accuracy, confusion_matrix, held_out_report, warmup_cosine_factor


@pytest.mark.parametrize(("warmup", "total"), [(0, 10), (4, 40), (18, 270), (3, 3)])
def test_schedule_matches_transformers(warmup: int, total: int) -> None:
    import torch
    from transformers import get_cosine_schedule_with_warmup

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    reference = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=warmup, num_training_steps=total)
    for step in range(total + 1):
        assert warmup_cosine_factor(step, warmup_steps=warmup, total_steps=total) == pytest.approx(
            reference.lr_lambdas[0](step), abs=1e-12
        )


def test_confusion_and_balanced_accuracy_match_sklearn() -> None:
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.metrics import confusion_matrix as sk_confusion

    rng = np.random.default_rng(0)
    for n_classes in (2, 4, 6):
        y_true = rng.integers(0, n_classes, size=200)
        y_pred = np.where(rng.random(200) < 0.6, y_true, rng.integers(0, n_classes, size=200))
        assert (
            confusion_matrix(y_true, y_pred, n_classes).tolist()
            == sk_confusion(y_true, y_pred, labels=list(range(n_classes))).tolist()
        )
        assert balanced_accuracy(y_true, y_pred) == pytest.approx(balanced_accuracy_score(y_true, y_pred))


def test_held_out_report_reports_chance_levels() -> None:
    report = held_out_report([0, 0, 0, 1], [0, 0, 1, 1], ("female", "male"))
    assert report.accuracy == 0.75
    assert report.chance_uniform == 0.5
    assert report.chance_majority == 0.75
    assert report.per_class_recall == {"female": pytest.approx(2 / 3), "male": 1.0}
    assert report.confusion == [[2, 1], [0, 1]]
    with pytest.raises(ValueError, match="class indices"):
        confusion_matrix([0, 2], [0, 1], 2)
