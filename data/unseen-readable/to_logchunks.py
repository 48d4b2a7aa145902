#!/usr/bin/env python3
"""Write the readable unseen set in LogChunks form (what `faultline eval` and
../shared/eval/score_excerpts.py read): OUT/logs/*.log.gz, OUT/labels.jsonl,
OUT/categories.jsonl. The chunk's lines are kept only where they occur in the
log (as score_excerpts compares stripped lines).

usage: to_logchunks.py OUT_DIR [PART ...]   (parts default to travis gha)
"""
import gzip, json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1]
parts = sys.argv[2:] or ["travis", "gha"]
os.makedirs(os.path.join(out, "logs"), exist_ok=True)
labels, cats = [], []
for part in parts:
    path = os.path.join(here, part, "labels.jsonl")
    if not os.path.exists(path):
        continue
    for line in open(path):
        if not line.strip():
            continue
        row = json.loads(line)
        src = os.path.join(here, part, row["log"])
        if not os.path.exists(src):
            continue
        text = open(src, "rb").read()
        name = f"logs/{part}__{os.path.basename(row['log'])}.gz"
        with gzip.open(os.path.join(out, name), "wb") as f:
            f.write(text)
        present = {l.strip() for l in text.decode("utf-8", "replace").splitlines()}
        chunk = "\n".join(l for l in row.get("chunk", "").splitlines() if l.strip() in present)
        repo = row.get("project") or row.get("source", "").split(":")[0]
        labels.append({"repo": repo, "log": name, "chunk": chunk})
        cats.append({"log": name, "repo": repo, "category": row["category"]})
with open(os.path.join(out, "labels.jsonl"), "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in labels)
with open(os.path.join(out, "categories.jsonl"), "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in cats)
print(f"{len(cats)} logs of {len({r['repo'] for r in cats})} projects -> {out}")
