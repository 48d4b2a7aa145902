#!/usr/bin/env python3
"""The diagnosis report behind `make eval`: the real pipeline on labelled CI logs.

The categories come from `faultline eval DATA_DIR --json FILE` (scratch
database, workers on it, every labelled log ingested as `faultline analyze`
does, torn down afterwards; its own report is printed first). The excerpt is
scored with `faultline excerpt {path}`. Then one report:

- excerpt precision / recall / F1 (the formula of ../shared/eval/score_excerpts.py);
- category accuracy overall, per category and the confusion pairs, the share of
  analyses completed without review and the accuracy among them, and a
  reliability table (confidence bucket -> accuracy), the figures of
  ../shared/eval/score_categories.py;
- the same figures for each half of a split by repository (repositories sorted
  by name, alternately assigned to half A and half B), next to the whole.
  Faultline's rules are general facts about tools, not fitted per repository,
  so "tune on one half, report the other" reads: every figure must hold on
  both halves, not only on the whole.

With no labelled data set (../shared absent) it says so and scores the
project's bundled samples (samples/README.md names each one's category).

usage: eval.py [--data DIR] [--bin DIR] [--workers N] [--limit N] [--show-wrong K]
               [--reasoner SPEC] [--offline] [--json FILE]
  --reasoner  faultline eval's SPEC (heuristic, openai[:MODEL][@PROMPT_VERSION], ...);
              default: LLM_PROVIDER when it names a model provider, else heuristic
  --offline   skip the pipeline; classify with `faultline diagnose {path} --json`
              (no database: the inner loop while tuning rules)
"""
import argparse, collections, gzip, json, os, re, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lines(text):
    return {l.strip() for l in text.splitlines() if l.strip()}


def halves(rows):
    """Repository -> 'A' or 'B': sorted by name, alternately."""
    repos = sorted({r["repo"] for r in rows})
    return {repo: "AB"[i % 2] for i, repo in enumerate(repos)}


def decompress(data_dir, rel, dst):
    with gzip.open(os.path.join(data_dir, rel)) as src, open(dst, "wb") as out:
        shutil.copyfileobj(src, out)


def run_json(cmd, env=None, timeout=600):
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env).stdout
        return json.loads(out.decode("utf-8", "replace"))
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        return {}


def field(doc, name):
    run = doc.get("run") if isinstance(doc.get("run"), dict) else None
    if run and run.get(name) is not None:
        return run[name]
    return doc.get(name)


# ---------------------------------------------------------------- scoring

def excerpt_scores(rows):
    n = len(rows)
    if not n:
        return None
    P = sum(r["p"] for r in rows) / n
    R = sum(r["r"] for r in rows) / n
    F = 2 * P * R / (P + R) if P + R else 0.0
    return {"logs": n, "precision": P, "recall": R, "f1": F}


def category_scores(rows):
    n = len(rows)
    if not n:
        return None
    right = [r for r in rows if r["got"] == r["category"]]
    auto = [r for r in rows if r["status"] == "completed"]
    auto_right = [r for r in auto if r["got"] == r["category"]]
    per = collections.defaultdict(lambda: [0, 0])
    confusion = collections.Counter()
    buckets = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        per[r["category"]][1] += 1
        per[r["category"]][0] += r["got"] == r["category"]
        if r["got"] != r["category"]:
            confusion[(r["category"], r["got"])] += 1
        c = r["confidence"]
        b = "none" if c is None else f"{min(int(c * 10), 9) / 10:.1f}"
        buckets[b][1] += 1
        buckets[b][0] += r["got"] == r["category"]
    return {
        "logs": n,
        "accuracy": len(right) / n,
        "auto": len(auto),
        "auto_right": len(auto_right),
        "auto_share": len(auto) / n,
        "auto_precision": len(auto_right) / len(auto) if auto else 0.0,
        "per_category": {c: v for c, v in sorted(per.items())},
        "confusion": [(w, g, k) for (w, g), k in confusion.most_common()],
        "reliability": {b: v for b, v in sorted(buckets.items())},
    }


def print_report(ex, cat, split, source, show_wrong, wrong):
    print(f"== Faultline diagnosis report ({source})")
    if ex:
        print("\n-- excerpt (lines of the labelled failure chunk)")
        print(f"{'':8} {'logs':>5} {'P':>6} {'R':>6} {'F1':>6}")
        for name in ("whole", "half A", "half B"):
            s = ex.get(name)
            if s:
                print(f"{name:8} {s['logs']:>5} {s['precision']:6.3f} {s['recall']:6.3f} {s['f1']:6.3f}")
    if cat:
        print("\n-- category")
        print(f"{'':8} {'logs':>5} {'acc':>6} {'auto':>9} {'auto %':>7} {'auto right':>11}")
        for name in ("whole", "half A", "half B"):
            s = cat.get(name)
            if s:
                print(f"{name:8} {s['logs']:>5} {s['accuracy']:6.3f} {s['auto']:>4}/{s['logs']:<4} "
                      f"{s['auto_share']:7.3f} {s['auto_right']:>4}/{s['auto']:<4} ({s['auto_precision']:.3f})")
        w = cat["whole"]
        print("per category: " + ", ".join(f"{c} {a}/{t}" for c, (a, t) in w["per_category"].items()))
        print("confusion (label -> got): " + (", ".join(f"{a}->{b}:{k}" for a, b, k in w["confusion"]) or "none"))
        print("reliability (confidence bucket: right/total): " +
              ", ".join(f"{b}: {a}/{t}" for b, (a, t) in w["reliability"].items()))
        for r in wrong[:show_wrong]:
            print(f"wrong: {r['log']} label={r['category']} got={r['got']} status={r['status']} "
                  f"confidence={r['confidence']}")
    print(f"\nsplit by repository: half A = {', '.join(split['A'])}")
    print(f"                     half B = {', '.join(split['B'])}")
    if cat:
        w = cat["whole"]
        print(f"\naccuracy={w['accuracy']:.3f} auto_share={w['auto_share']:.3f} "
              f"auto_precision={w['auto_precision']:.3f}" +
              (f" excerpt_f1={ex['whole']['f1']:.3f}" if ex else ""))


# ---------------------------------------------------------------- pipeline

def faultline_eval(bin_dir, data_dir, args, tmp):
    """Per-log results of `faultline eval` on `data_dir` (its report printed
    first), in the order of categories.jsonl."""
    out = os.path.join(tmp, "faultline-eval.json")
    cmd = [f"{bin_dir}/faultline", "eval", data_dir, "--reasoner", args.reasoner,
           "--workers", str(args.workers), "--json", out]
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    sys.stdout.flush()
    subprocess.run(cmd, check=True)
    print()
    doc = json.load(open(out))["configurations"][0]["results"]
    return [{"repo": r["repo"], "log": r["log"], "category": r["expected"], "got": r["got"],
             "status": r["status"], "confidence": r["confidence"]} for r in doc]


def default_reasoner():
    provider = os.environ.get("LLM_PROVIDER", "")
    return provider if provider in ("openai", "anthropic") else "heuristic"


def bundled_samples():
    """(file, category) of the bundled samples, from samples/README.md."""
    out = []
    for line in open(os.path.join(ROOT, "samples", "README.md")):
        m = re.match(r"\|\s*`([\w.-]+\.log)`\s*\|.*\|\s*`([A-Z_]+)`", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "logchunks-dev"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--show-wrong", type=int, default=0)
    ap.add_argument("--reasoner", default=default_reasoner())
    ap.add_argument("--offline", action="store_true")
    ap.add_argument("--auto-at", type=float, default=0.75,
                    help="offline: diagnosis confidence counted as completed without review")
    ap.add_argument("--json", help="also write every per-log result to this file")
    args = ap.parse_args()
    bin_dir = os.path.abspath(args.bin)

    have_data = os.path.isfile(os.path.join(args.data, "categories.jsonl"))
    if have_data:
        source = os.path.relpath(os.path.abspath(args.data), ROOT)
        cat_rows = [json.loads(l) for l in open(os.path.join(args.data, "categories.jsonl"))][:args.limit]
        ex_rows = [json.loads(l) for l in open(os.path.join(args.data, "labels.jsonl"))][:args.limit]
    else:
        print(f"eval: {args.data} is absent: scoring the bundled samples only "
              "(no excerpt labels, one 'repository')")
        source = "bundled samples"
        cat_rows = [{"log": os.path.join(ROOT, "samples", f), "repo": "samples", "category": c, "plain": True}
                    for f, c in bundled_samples()]
        ex_rows = []
    split_of = halves(cat_rows + ex_rows)
    split = {h: sorted(r for r, x in split_of.items() if x == h) for h in "AB"}

    t0 = time.time()
    results, excerpts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        def local(row, i):
            if row.get("plain"):
                return row["log"]
            path = os.path.join(tmp, f"{i}-{os.path.basename(row['log'])[:-3]}")
            decompress(args.data, row["log"], path)
            return path

        for i, row in enumerate(ex_rows):
            path = local(row, i)
            out = subprocess.run([f"{bin_dir}/faultline", "excerpt", path], capture_output=True,
                                 timeout=60).stdout.decode("utf-8", "replace")
            gold, got = lines(row["chunk"]), lines(out)
            hit = len(gold & got)
            excerpts.append({"repo": row["repo"], "log": row["log"],
                             "p": hit / len(got) if got else 0.0, "r": hit / len(gold) if gold else 0.0})

        def classify(analyze):
            for i, row in enumerate(cat_rows):
                doc = analyze(local(row, i))
                conf = field(doc, "confidence")
                results.append({"repo": row["repo"], "log": row["log"], "category": row["category"],
                                "got": field(doc, "category"), "status": field(doc, "status"),
                                "confidence": float(conf) if conf is not None else None})

        if args.offline:
            def offline(p):
                doc = run_json([f"{bin_dir}/faultline", "diagnose", p, "--json"])
                # No pipeline: "completed" approximated by the confidence at
                # which the heuristic's verdict clears auto-accept.
                doc["status"] = "completed" if doc.get("confidence", 0) >= args.auto_at else "needs_review"
                return doc
            classify(offline)
        else:
            data_dir = os.path.abspath(args.data)
            if not have_data:
                # A labelled folder of the samples: categories.jsonl with their paths.
                data_dir = os.path.join(tmp, "samples")
                os.mkdir(data_dir)
                with open(os.path.join(data_dir, "categories.jsonl"), "w") as f:
                    for row in cat_rows:
                        f.write(json.dumps({"log": row["log"], "repo": row["repo"],
                                            "category": row["category"]}) + "\n")
            results.extend(faultline_eval(bin_dir, data_dir, args, tmp))

    def by_half(rows, score):
        out = {"whole": score(rows)}
        for h in "AB":
            out[f"half {h}"] = score([r for r in rows if split_of[r["repo"]] == h])
        return out

    ex = by_half(excerpts, excerpt_scores) if excerpts else None
    cat = by_half(results, category_scores)
    wrong = [r for r in results if r["got"] != r["category"]]
    print_report(ex, cat, split, f"{source}, {'offline diagnosis' if args.offline else 'real pipeline'}, "
                 f"{time.time() - t0:.0f} s", args.show_wrong, wrong)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"excerpts": excerpts, "analyses": results, "summary": {"excerpt": ex, "category": cat}},
                      f, indent=1)


if __name__ == "__main__":
    main()
