"""Inspect entry point: registers the ``baseline`` model provider."""

from inspect_ai.model import modelapi


@modelapi(name="baseline")
def baseline():
    from benchmark.baselines.provider import BaselineModel

    return BaselineModel
