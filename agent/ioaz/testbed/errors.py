"""The testbed's one error type: a sentence for the operator, never a traceback."""


class TestbedError(Exception):
    """Something the testbed needs is missing or failed; the message says what and where."""

    __test__ = False   # not a pytest test class, despite the name
