#ifndef MEMO_TORCHX_ATTENTION_H
#define MEMO_TORCHX_ATTENTION_H
#ifdef __cplusplus
extern "C" {
#endif
int memo_sdpa_available(void);
int memo_sdpa_gqa_available(void);
void *memo_sdpa(void *q, void *k, void *v, void *mask, double scale, int causal, int gqa, char **err);
#ifdef __cplusplus
}
#endif
#endif
