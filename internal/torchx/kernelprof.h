#ifndef MEMO_TORCHX_KERNELPROF_H
#define MEMO_TORCHX_KERNELPROF_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int memo_kernelprof_start(int cuda, char **err);
char *memo_kernelprof_stop(char **err);
#ifdef __cplusplus
}
#endif
#endif
