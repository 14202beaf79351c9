"""The drivers' check bookkeeping: one PASS or FAIL line per check, counted for the
closing line run.sh reads."""

from __future__ import annotations

from typing import Any


class Checks:
    def __init__(self, label: str) -> None:
        self.label = label
        self.passed = 0
        self.failed = 0

    def check(self, name: str, condition: bool, detail: Any = "") -> bool:
        label = f"{self.label}: {name}"
        if condition:
            self.passed += 1
            print(f"PASS: {label}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL: {label}: {detail}", flush=True)
        return condition

    def equal(self, name: str, actual: Any, expected: Any) -> bool:
        return self.check(name, actual == expected, f"expected {expected!r}, got {actual!r}")
