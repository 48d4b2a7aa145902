#!/usr/bin/env python3
"""What the passing log of the same job does to the excerpt and the diagnosis
(`make eval`'s baseline report), on real fail/pass pairs.

For each pair of DATA_DIR/labels.jsonl (`log`, `baseline`, `repo`,
`source_category`, `category`: ../shared/data/bugswarm-train) it runs, with
and without `--baseline PASS`:

- `faultline excerpt FAIL --json`: how many lines the excerpt keeps;
- `faultline diagnose FAIL --json`: the category and the lines the
  recognisers read as the failure (its findings);
- `faultline diagnose PASS --json` once: what the diagnosis reads as a
  failure in a log that did not fail. Each such reading is a line a passing
  run prints too, so it fits no failure: "passing logs read as a failure"
  (lower is better) counts them, by category and by deciding rule.

The pairs carry no labelled failure lines, so "the lines that carry the
failure" are the findings of the plain diagnosis that stand in the plain
excerpt: the report says how many of them (by text: a tool's summary repeats
a line under another number) the baseline's excerpt still holds.
It also prints category accuracy both ways (exact where the pair's reason maps
to one category; a `Test` reason counts TEST_FAILURE or CODE_ERROR as right,
the rubric's split of failed tests) and how many verdicts the baseline changes.

usage: eval_pairs.py --data DIR [--bin DIR] [--jobs N] [--limit N]
"""
import argparse, collections, concurrent.futures, json, os, statistics, subprocess, sys


def run_json(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=300).stdout
        return json.loads(out.decode("utf-8", "replace"))
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        return None


def one(bin_dir, data, row):
    fail = os.path.join(data, row["log"])
    passing_log = os.path.join(data, row["baseline"])
    base = ["--baseline", passing_log]
    faultline = os.path.join(bin_dir, "faultline")
    passing = run_json([faultline, "diagnose", passing_log, "--json"])
    if passing is None:
        return None
    out = {"passing": {"category": passing.get("category"),
                       "rule": (passing.get("decided_by") or "").split(":")[0]}}
    for name, extra in (("plain", []), ("baseline", base)):
        ex = run_json([faultline, "excerpt", fail, "--json", *extra])
        dg = run_json([faultline, "diagnose", fail, "--json", *extra])
        if ex is None or dg is None:
            return None
        out[name] = {
            "lines": {l["line_no"]: l["text"].strip() for l in ex.get("lines", [])},
            "category": dg.get("category"),
            "findings": {f["line_no"] for f in dg.get("findings", [])},
        }
    return row, out


def right(row, category):
    if row.get("category"):
        return category == row["category"]
    if row["source_category"] == "Test":
        return category in ("TEST_FAILURE", "CODE_ERROR")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--bin", default="target/release")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    labels = os.path.join(args.data, "labels.jsonl")
    if not os.path.exists(labels):
        print(f"== no pairs: {labels} is absent")
        return 0
    rows = [json.loads(l) for l in open(labels) if l.strip()]
    if args.limit:
        rows = rows[: args.limit]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        done = [r for r in pool.map(lambda r: one(args.bin, args.data, r), rows) if r]
    n = len(done)
    print(f"pairs read: {n} of {len(rows)} ({len({r['repo'] for r, _ in done})} repositories)")
    if not n:
        return 1
    plain = [o["plain"] for _, o in done]
    based = [o["baseline"] for _, o in done]
    size_p = [len(o["lines"]) for o in plain]
    size_b = [len(o["lines"]) for o in based]
    shorter = sum(b < p for p, b in zip(size_p, size_b))
    print(
        f"excerpt lines: {statistics.mean(size_p):.1f} plain, {statistics.mean(size_b):.1f} with the baseline "
        f"(median {statistics.median(size_p):.0f} -> {statistics.median(size_b):.0f}); "
        f"shorter in {shorter} of {n} ({shorter / n:.0%})"
    )
    carried = kept = lost_all = 0
    for o in done:
        p, b = o[1]["plain"], o[1]["baseline"]
        # By text: the same line repeated (a tool's summary) may be kept
        # under another line number.
        lines = {p["lines"][n] for n in p["findings"] if n in p["lines"]}
        there = set(b["lines"].values())
        carried += len(lines)
        kept += len(lines & there)
        lost_all += bool(lines) and not (lines & there)
    print(
        f"failure lines (the plain diagnosis' findings in its excerpt): {kept} of {carried} kept "
        f"with the baseline ({kept / max(carried, 1):.1%}); pairs that lose all of them: {lost_all}"
    )
    for name, side in (("plain", plain), ("baseline", based)):
        judged = [(right(r, s["category"])) for (r, _), s in zip(done, side)]
        exact = [j for (r, _), j in zip(done, judged) if r.get("category")]
        tests = [j for (r, _), j in zip(done, judged) if not r.get("category") and j is not None]
        print(
            f"category ({name}): exact labels {sum(exact)}/{len(exact)} = {sum(exact) / max(len(exact), 1):.3f}; "
            f"'Test' pairs read as TEST or CODE {sum(tests)}/{len(tests)} = {sum(tests) / max(len(tests), 1):.3f}"
        )
    changed = sum(p["category"] != b["category"] for p, b in zip(plain, based))
    better = sum(
        right(r, o["baseline"]["category"]) is True and right(r, o["plain"]["category"]) is False
        for r, o in done
    )
    worse = sum(
        right(r, o["baseline"]["category"]) is False and right(r, o["plain"]["category"]) is True
        for r, o in done
    )
    print(f"verdicts the baseline changes: {changed} of {n} ({better} to right, {worse} to wrong)")
    read = [o["passing"] for _, o in done if o["passing"]["category"] not in (None, "UNKNOWN")]
    by_cat = collections.Counter(p["category"] for p in read)
    by_rule = collections.Counter(p["rule"] for p in read)
    print(
        f"passing logs read as a failure: {len(read)} of {n} ({len(read) / n:.1%}; "
        + ", ".join(f"{c} {k}" for c, k in sorted(by_cat.items(), key=lambda t: -t[1]))
        + "); deciding rules: "
        + ", ".join(f"{r} {k}" for r, k in by_rule.most_common(5))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
