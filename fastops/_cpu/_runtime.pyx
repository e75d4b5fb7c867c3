# OpenMP runtime queries for fastops._threads.
cimport openmp


def max_threads():
    """omp_get_max_threads() of the calling thread (OMP_NUM_THREADS, threadpoolctl)."""
    return openmp.omp_get_max_threads()


def set_max_threads(int n):
    openmp.omp_set_num_threads(n)


def num_procs():
    return openmp.omp_get_num_procs()
