"""fastops.dask against dask's own algorithms on a LocalCluster (fastops._bench.dask).

Not make_suite: the implementations are "fastops" (fastops.dask) and "dask" (da.topk,
da.cumreduction, da.argwhere + compute_chunk_sizes), both on the same 2-worker
LocalCluster and the same worker-resident chunks; a thread-scaling class would not mean
anything here (the cluster decides the threads).  Without dask/distributed installed,
setup raises NotImplementedError and asv skips the benchmarks.
"""
from fastops._bench import workloads

_WLS = {w.name: w for w in workloads("dask")}


class TimeDask:
    params = [list(_WLS), ["fastops", "dask"]]
    param_names = ["workload", "impl"]
    timeout = 600
    number = 1
    repeat = (3, 10, 60.0)

    def setup(self, workload, impl):
        self.fn = _WLS[workload].prepare(impl)
        self.fn()   # warm-up (worker imports, kernel pools)

    def time_op(self, workload, impl):
        self.fn()
