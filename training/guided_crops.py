#!/usr/bin/env python3
"""Colour from a reference on photographs never used for tuning (issue 28): for every 5th BSD100
photo (../shared/datasets/val), the left 60% is the colour reference and the right 60% (turned
grey) the target; `vivify image --colorize` with and without `--reference`, pooled AuC and
rebalanced AuC against the truth, per-photo margins, and a contact sheet (grey, automatic,
with the reference, truth, reference). Usage: python3 training/guided_crops.py [--sheet OUT.jpg] [--photos GLOB]"""
import os
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tempfile
_work = tempfile.mkdtemp()
import glob, subprocess, sys, numpy as np
from PIL import Image
sys.path.insert(0, "training")
from skimage import color
from common import ab_error_histogram, pooled_auc, ab_prior, rebalance_weights, colourfulness
V=os.path.abspath(".build/release/vivify")
# --photos GLOB: other photographs (to tune on: the default set is held out), every 5th of them.
files=sorted(glob.glob(sys.argv[sys.argv.index("--photos") + 1] if "--photos" in sys.argv else "../shared/datasets/val/BSD100/*.jpg"))[::5]
trues=[]; outs={"auto":[],"guided":[]}; pics=[]
for k,f in enumerate(files):
    im=np.asarray(Image.open(f).convert("RGB")); h,w,_=im.shape
    cw=int(w*0.6)
    Image.fromarray(im[:, :cw]).save(os.path.join(_work, "reference.png"))
    tgt=im[:, w-cw:]
    lab=color.rgb2lab(tgt); g=lab.copy(); g[...,1:]=0
    grey=np.clip(np.round(color.lab2rgb(g)*255),0,255).astype(np.uint8)
    Image.fromarray(grey).save(os.path.join(_work, "grey.png"))
    res={}
    for name,extra in [("auto",[]),("guided",["--reference",os.path.join(_work, "reference.png")])]:
        subprocess.run([V,"image",os.path.join(_work, "grey.png"),os.path.join(_work, f"{name}.png"),"--colorize","-y"]+extra,check=True,capture_output=True)
        res[name]=np.asarray(Image.open(os.path.join(_work, f"{name}.png")).convert("RGB"))
        outs[name].append(color.rgb2lab(res[name])[...,1:])
    trues.append(lab[...,1:])
    if k<6: pics.append([grey,res["auto"],res["guided"],tgt,im[:, :cw]])
prior=ab_prior(trues)
tot={n:np.zeros((2,152)) for n in ["auto","guided","grey"]}
per=[]
for i,t in enumerate(trues):
    wts=rebalance_weights(t,prior)
    m={}
    for n in ["auto","guided","grey"]:
        ab=np.zeros_like(t) if n=="grey" else outs[n][i]
        hr=ab_error_histogram(ab,t,weights=wts); tot[n]+=[ab_error_histogram(ab,t),hr]
        m[n]=100*pooled_auc(hr)
    per.append(m["guided"]-m["auto"])
for n in tot: print(n, "AuC %.2f rebalanced %.2f"%(100*pooled_auc(tot[n][0]),100*pooled_auc(tot[n][1])))
print("photos",len(trues),"per-photo rebalanced guided-auto: mean %.2f median %.2f positive %d/%d"%(np.mean(per),np.median(per),sum(p>0 for p in per),len(per)))
# save a contact sheet
H=160; rows=[]
for p in pics:
    tiles=[Image.fromarray(x).resize((int(x.shape[1]*H/x.shape[0]),H)) for x in p]
    W=sum(t.width for t in tiles)+4*len(tiles); r=Image.new("RGB",(W,H),"white"); x=0
    for t in tiles: r.paste(t,(x,0)); x+=t.width+4
    rows.append(r)
S=Image.new("RGB",(max(r.width for r in rows),sum(r.height+4 for r in rows)),"white"); y=0
for r in rows: S.paste(r,(0,y)); y+=r.height+4
S.save(sys.argv[sys.argv.index("--sheet") + 1] if "--sheet" in sys.argv else os.path.join(_work, "sheet.png"))
