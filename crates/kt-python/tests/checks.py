"""The two checks the Python tests share (plain Python, no pytest)."""


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")


def expect_error(kind, words, call):
    """``call()`` must raise ``kind`` with each of ``words`` in its message; returns the exception."""
    try:
        call()
    except kind as e:
        for w in words:
            check(f"{kind.__name__} names {w!r}", w in str(e), str(e))
        return e
    raise AssertionError(f"expected {kind.__name__} mentioning {words}")
