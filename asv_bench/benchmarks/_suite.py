"""Turns the workloads of fastops._bench.<family> into asv benchmark classes.

One class per family, parametrized by (workload, implementation), so the dashboard
draws fastops and each peer as lines on one graph.  A peer that is not installed, or a
GPU implementation without a GPU, raises NotImplementedError in setup: asv skips it.
Inputs are made and converted in setup; only the op runs in the timed call.
"""
import fastops
from fastops._bench import impl_names, workloads


def make_suite(family):
    """(Time<Family>, Threads<Family> or None) classes; assign them to module names of the
    same name."""
    wls = {w.name: w for w in workloads(family)}
    title = "".join(part.title() for part in family.split("_"))

    class Suite:
        params = [list(wls), list(impl_names())]
        param_names = ["workload", "impl"]
        timeout = 300
        number = max(w.calls for w in wls.values())   # tiny inputs: many calls per sample
        repeat = (3, 10, 30.0)

        def setup(self, workload, impl):
            self.fn = wls[workload].prepare(impl)
            self.fn()  # warm-up (kernel compilation, ORT first run)

        def time_op(self, workload, impl):
            self.fn()

    class ThreadScaling:
        """fastops on 1 thread vs all threads, for the heavy workloads."""
        params = [[w for w in wls if wls[w].heavy], [1, "all"]]
        param_names = ["workload", "threads"]
        timeout = 300
        number = 1
        repeat = (3, 10, 30.0)

        def setup(self, workload, threads):
            self.before = fastops.get_num_threads()
            fastops.set_num_threads(self.before if threads == "all" else threads)
            self.fn = wls[workload].prepare("fastops")
            self.fn()

        def teardown(self, workload, threads):
            fastops.set_num_threads(self.before)

        def time_op(self, workload, threads):
            self.fn()

    Suite.__name__ = Suite.__qualname__ = "Time" + title
    ThreadScaling.__name__ = ThreadScaling.__qualname__ = "Threads" + title
    # a family without heavy workloads has no thread-scaling benchmark (asv refuses a
    # benchmark with no parameter combination)
    return Suite, (ThreadScaling if ThreadScaling.params[0] else None)
