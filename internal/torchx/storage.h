#ifndef MEMO_TORCHX_STORAGE_H
#define MEMO_TORCHX_STORAGE_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
// memo_set_data makes each of the n params dst[i] a view of src[i]'s
// storage (Tensor::set_); with src NULL it empties them (size [0], no
// storage). Returns non-zero and a malloc'd message in *err on failure.
int memo_set_data(void **dst, void **src, int64_t n, char **err);
#ifdef __cplusplus
}
#endif
#endif
