#ifndef MEMO_TORCHX_GPUMEM_H
#define MEMO_TORCHX_GPUMEM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int64_t memo_gpu_total_memory(int index);
int64_t memo_gpu_peak_allocated(int index);
#ifdef __cplusplus
}
#endif
#endif
