#ifndef MEMO_TORCHX_CUDAEVENT_H
#define MEMO_TORCHX_CUDAEVENT_H
#ifdef __cplusplus
extern "C" {
#endif
void *memo_cuda_event_new(void);
int memo_cuda_event_record(void *ev);
double memo_cuda_event_elapsed_ms(void *from, void *to);
void memo_cuda_event_free(void *ev);
#ifdef __cplusplus
}
#endif
#endif
