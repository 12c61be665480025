#!/usr/bin/env python3
"""Sums GoogleTest JSON reports (--gtest_output=json:FILE) into one line of case
counts, for CI logs where ctest runs many gtest cases per ctest entry:

    gtest_case_counts.py LABEL REPORT.json...
    -> LABEL: 795 gtest cases: 433 passed, 362 skipped, 0 failed (3 reports)

Exit status 1 if a report is missing or unreadable, or counts a failure.
"""
import json
import sys


def counts(path):
    with open(path) as f:
        report = json.load(f)
    passed = skipped = failed = 0
    for suite in report.get("testsuites", []):
        for case in suite.get("testsuite", []):
            if case.get("failures"):
                failed += 1
            elif case.get("result") == "SKIPPED":
                skipped += 1
            else:
                passed += 1
    return passed, skipped, failed


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    label, paths = sys.argv[1], sys.argv[2:]
    total = [0, 0, 0]
    for path in paths:
        try:
            for i, n in enumerate(counts(path)):
                total[i] += n
        except (OSError, ValueError) as e:
            print(f"{label}: cannot read {path}: {e}", file=sys.stderr)
            return 1
    passed, skipped, failed = total
    print(f"{label}: {passed + skipped + failed} gtest cases: {passed} passed, {skipped} skipped, "
          f"{failed} failed ({len(paths)} reports)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
