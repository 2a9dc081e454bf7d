"""What the self-test's checks share — its own (``fredica_app.selftest``) and its Qt part
(``fredica_app.gui.selftest_qt``), which may not import each other: a check's failure, and the
advice a broken bundle gets."""

from __future__ import annotations

#: The rebuild a bundle needs when a part is missing from it.
REBUILD = "rebuild the bundle with packaging/fredica.spec"


class CheckFailed(Exception):
    """A check found something wrong: ``str(exc)`` says what, ``fix`` what to do."""

    def __init__(self, detail: str, fix: str) -> None:
        super().__init__(detail)
        self.fix = fix
