#ifndef MEMO_TORCHX_SHIM_H
#define MEMO_TORCHX_SHIM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
void memo_manual_seed(uint64_t seed);
void memo_set_num_threads(int n);
int memo_get_num_threads(void);
void memo_release_free_memory(void);
char *memo_show_config(void);
const char *memo_openblas_core(void);
#ifdef __cplusplus
}
#endif
#endif
