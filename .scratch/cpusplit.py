import os, sys, time
def snap():
    d = {}
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try:
            s = open(f'/proc/{p}/stat').read()
            comm = s[s.index('(')+1:s.rindex(')')]
            f = s[s.rindex(')')+2:].split()
            cmd = open(f'/proc/{p}/cmdline').read().replace('\0',' ')[:80]
            d[p] = (comm, cmd, int(f[11]) + int(f[12]))
        except Exception: pass
    return d
delay, dur = float(sys.argv[1]), float(sys.argv[2])
time.sleep(delay)
a = snap(); t = time.time(); time.sleep(dur); b = snap(); el = time.time() - t
groups = {}
for p, (comm, cmd, v) in b.items():
    u = v - a.get(p, (0, 0, v if p not in a else 0))[2] if p in a else v
    key = comm if comm != 'node' else 'node ' + (cmd.split('/')[-1][:40])
    groups[key] = groups.get(key, 0) + u
tot = sum(groups.values())
for k, v in sorted(groups.items(), key=lambda x: -x[1])[:12]:
    print(f'{v/100/el:6.2f} cores  {k}')
print(f'{tot/100/el:6.2f} total')
