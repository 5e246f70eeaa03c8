#ifndef MEMO_TORCHX_OPCOUNT_H
#define MEMO_TORCHX_OPCOUNT_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int memo_opcount_start(char **err);
char *memo_opcount_stop(void);
#ifdef __cplusplus
}
#endif
#endif
