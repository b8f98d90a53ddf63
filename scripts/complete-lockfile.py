# The registry reachable here serves only this platform's optional binaries (biome, buf), so
# `npm install` leaves the other platforms out of package-lock.json and `npm ci` then refuses
# the lock. This adds those optional entries (version, os, cpu) back. Run after `npm install`.
import json,re
p='package-lock.json'
d=json.load(open(p))
pk=d['packages']
added=[]
for path,info in list(pk.items()):
    for name,ver in (info.get('optionalDependencies') or {}).items():
        key='node_modules/'+name
        if key in pk: continue
        e={'version':ver,'dev':info.get('dev',False),'optional':True}
        if not e['dev']: del e['dev']
        n=name.split('/')[-1]
        for os_ in ['android','darwin','linux','win32','freebsd','openbsd','netbsd','sunos','aix','openharmony']:
            if re.search(r'(^|-)'+os_+r'(-|$)',n): e['os']=[os_]
        for cpu in ['arm64','x64','armv7','arm','ia32','ppc64','s390x','riscv64','loong64','mips64el']:
            if re.search(r'(^|-)'+cpu+r'(-|$)',n): e['cpu']=[ 'arm' if cpu=='armv7' else cpu]; break
        if 'musl' in n: e['libc']=['musl']
        pk[key]=e; added.append(name)
d['packages']=dict(sorted(pk.items(), key=lambda kv:(kv[0]!='', kv[0])))
json.dump(d,open(p,'w'),indent=2); open(p,'a').write('\n')
print(len(added), added)
