#ifndef MEMO_TORCHX_ELEMENTWISE_H
#define MEMO_TORCHX_ELEMENTWISE_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
void *memo_rope(void *x, void *cos, void *sin_signed, int64_t rot, int out_dtype, int kernels, char **err);
void *memo_swiglu(void *gate, void *up, int kernels, char **err);
void *memo_swiglu_joined(void *gate_up, int kernels, char **err);
int memo_rms_norm_copies(void *x, void *delta, void *w, double eps, int offset, int dtype, int k, int kernels,
                         void **h, void **out, char **err);
int memo_cast_copies(void *x, int dtype, int k, int kernels, void **out, char **err);
void *memo_cross_entropy(void *logits, void *targets, int64_t ignore, int kernels, char **err);
void memo_elementwise_source(const char *text);
char *memo_elementwise_status(int device);
void memo_elementwise_on_host(int on);
char *memo_elementwise_check_host(void);
long long memo_elementwise_calls(int kind);
#ifdef __cplusplus
}
#endif
#endif
