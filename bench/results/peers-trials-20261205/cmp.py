# Each row of OUT_DIR (run.sh) against bench/results/peers-20261205: prefix's and
# prefix+kv-events' mean TTFT p99 and hit rate over the seeds before -> after, the best peer's,
# WIN/lose by the means alone (no pairing), and the count of rows won {p99, hit rate}.
#   python3 cmp.py OUT_DIR
import json,glob,os,sys,statistics as st,collections
name=sys.argv[1]
base=os.path.join(os.path.dirname(os.path.abspath(__file__)),'..','peers-20261205')
rows=collections.defaultdict(dict)
def load(path):
    d=json.load(open(path))
    return {r['policy']:r for r in d['results']}
for f in sorted(glob.glob(os.path.join(name,'*.json'))):
    k=os.path.basename(f).rsplit('-s',1)[0]
    new=load(f); old=load(os.path.join(base,os.path.basename(f)))
    rows[k].setdefault('runs',[]).append((new,old))
def p99(r): return r['ttft_s']['p99']
def hit(r): return r['prefix_cache_hit_rate']['measured']
wins={'p':[0,0],'h':[0,0]}
for mode in ['','+kv-events']:
  pol='prefix'+mode
  if any(pol not in n for v in rows.values() for n,o in v['runs']):
    continue  # not run in OUT_DIR
  print('==',pol)
  for k,v in rows.items():
    runs=v['runs']
    peers=[p for p in runs[0][1] if not p.startswith(('prefix','least','round','random','session','kv_aware','rendezvous')) and (mode or not p.endswith('+kv-events')) and (not mode or not p=='dynamo_kv')]
    np99=st.mean(p99(n[pol]) for n,o in runs); op99=st.mean(p99(o[pol]) for n,o in runs)
    nh=st.mean(hit(n[pol]) for n,o in runs); oh=st.mean(hit(o[pol]) for n,o in runs)
    bp=min(peers,key=lambda p: st.mean(p99(o[p]) for n,o in runs)); bpv=st.mean(p99(o[bp]) for n,o in runs)
    bal=[p for p in peers if st.mean(o[p]['imbalance'] for n,o in runs)<=1.25]
    bh=max(bal,key=lambda p: st.mean(hit(o[p]) for n,o in runs)) if bal else None; bhv=st.mean(hit(o[bh]) for n,o in runs) if bh else 0
    nim=st.mean(n[pol]['imbalance'] for n,o in runs)
    pw=np99<=bpv; hw=round(nh,3)>=round(bhv,3) and nim<=1.25
    wins['p'][0 if not mode else 1]+=pw; wins['h'][0 if not mode else 1]+=hw
    print(f"{k:32s} p99 {op99*1000:7.1f}->{np99*1000:7.1f} best peer {bp} {bpv*1000:7.1f} {'WIN' if pw else 'lose'} | hit {oh:.3f}->{nh:.3f} peer {bh} {bhv:.3f} {'WIN' if hw else 'lose'} im {nim:.2f}")
print(wins)
