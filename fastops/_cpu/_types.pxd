# Fused element types shared by the CPU kernels.  float16 has no C type: the public
# layer computes it in float32 (API.md) or reinterprets its bits where that is exact.
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)

ctypedef fused real:
    uint8_t
    int8_t
    uint16_t
    int16_t
    uint32_t
    int32_t
    uint64_t
    int64_t
    float
    double

ctypedef fused uword:
    uint8_t
    uint16_t
    uint32_t
    uint64_t
