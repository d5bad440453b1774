import asyncio, cProfile, pstats, os, tempfile, sys
from pathlib import Path
from scripts.bench import task_bench as tb
d=Path(tempfile.mkdtemp()); os.environ["AGEN_HOME"]=str(d/"home")
pr=cProfile.Profile()
async def main():
    pr.enable()
    r=await tb.in_process(d, 1500, 2, 256)
    pr.disable()
    print(r)
asyncio.run(main())
st=pstats.Stats(pr); st.sort_stats("tottime").print_stats(30)
st.print_callers("builtins.compile")
st.sort_stats("cumtime").print_stats("agen/", 40)
