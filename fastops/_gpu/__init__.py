"""CuPy RawModule launchers; imported only when a CuPy array reaches fastops."""


def available():
    """True when CuPy imports and sees at least one CUDA device (never raises)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False
