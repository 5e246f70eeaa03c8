#ifndef MEMO_TORCHX_KERNELS_H
#define MEMO_TORCHX_KERNELS_H
#ifdef __cplusplus
extern "C" {
#endif
// The most rows memo_linear_rows takes: beyond them OpenBLAS's packing pays.
#define MEMO_LINEAR_MAX_ROWS 16
void *memo_linear_rows(void *x, void *w, void *bias, char **err);
void *memo_attend_one(void *q, void *k, void *v, void *mask, double scale, char **err);
int memo_kernels_supported(void);
#ifdef __cplusplus
}
#endif
#endif
