#ifndef MEMO_TORCHX_FUSED_H
#define MEMO_TORCHX_FUSED_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int memo_fused_rms_norm_available(void);
void *memo_rms_norm(void *x, void *w, double eps, int offset, char **err);
#ifdef __cplusplus
}
#endif
#endif
