#ifndef MEMO_TORCHX_HOSTCOPY_H
#define MEMO_TORCHX_HOSTCOPY_H
#ifdef __cplusplus
extern "C" {
#endif
void *memo_to_device_async(void *t, int device_index, char **err);
#ifdef __cplusplus
}
#endif
#endif
