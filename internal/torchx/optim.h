#ifndef MEMO_TORCHX_OPTIM_H
#define MEMO_TORCHX_OPTIM_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int memo_fused_adamw_available(void);
int memo_fused_adamw(void **params, void **grads, void **m, void **v, int64_t n, int64_t step, double lr,
                     double beta1, double beta2, double weight_decay, double eps, char **err);
void memo_clear_grads(void **params, int64_t n);
int memo_foreach_grad_norm(void **grads, int64_t n, double clip, double *norm, char **err);
#ifdef __cplusplus
}
#endif
#endif
