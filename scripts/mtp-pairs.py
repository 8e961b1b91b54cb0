#!/usr/bin/env python3
"""Issue 36's pair figures: equal-load MTP on/off pairs from `sim validate --format json` outputs.
A pair = two primary comparisons whose ids differ only in the mtpN token (rtx16turin ~ rtx16:
the same 16-GPU box). Prints pairs whose measured throughputs differ by > 10% and whether
the predicted gain has the measured sign; -v lists them all.

Usage (docs/validation.md, first section):
  sim validate --records validation/spec-records.json --format json > spec.json
  python3 scripts/mtp-pairs.py spec.json [more.json ...] [-v]
"""
import json, re, sys, collections
args=[a for a in sys.argv[1:] if a!='-v']; verbose='-v' in sys.argv
for path in args:
    cs=[c for c in json.load(open(path))['comparisons'] if c.get('primary')]
    by=collections.defaultdict(dict)
    for c in cs:
        m=re.search(r'-mtp(\d+)-',c['id'])
        if not m: continue
        key=re.sub(r'-mtp\d+-','-mtp*-',c['id']).replace('rtx16turin-','rtx16-')
        by[key][int(m.group(1))]=c
    n=right=0; rows=[]
    for key,d in sorted(by.items()):
        if 0 not in d: continue
        off=d[0]
        for k,on in d.items():
            if k==0: continue
            mr=on['measured']/off['measured']; pr=on['predicted']/off['predicted']
            if abs(mr-1)<=0.10: continue
            ok=(mr>1)==(pr>1); n+=1; right+=ok
            rows.append((key,k,mr,pr,ok))
    print(f"{path}: {right} of {n} MTP on/off pairs (>10% apart) with the sign right")
    for key,k,mr,pr,ok in rows:
        if verbose or not ok: print(f"  {'ok ' if ok else 'BAD'} {key} mtp{k}: measured x{mr:.2f} predicted x{pr:.2f}")
