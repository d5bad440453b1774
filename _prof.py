import asyncio, cProfile, pstats, tempfile, sys
from pathlib import Path
from scripts.bench import runner_bench as rb
from scripts.bench._util import median, pct
from agen.store import SQLiteStore
async def main():
    d=Path(tempfile.mkdtemp())
    store=await SQLiteStore.open(d/"a.db")
    await rb.overhead(store, 50, 4)  # warm
    pr=cProfile.Profile() if len(sys.argv)>1 else None
    if pr: pr.enable()
    gaps,whole=await rb.overhead(store, 50, 20)
    if pr:
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(35)
    print("gap p50 %.3f p95 %.3f whole p50 %.3f"%(median(gaps),pct(gaps,95),median(whole)))
    await store.close()
asyncio.run(main())
