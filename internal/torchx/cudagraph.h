#ifndef MEMO_TORCHX_CUDAGRAPH_H
#define MEMO_TORCHX_CUDAGRAPH_H
#ifdef __cplusplus
extern "C" {
#endif
void *memo_side_stream_enter(int device, char **err);
int memo_side_stream_leave(void *st, char **err);
void *memo_graph_capture_begin(int device, char **err);
int memo_graph_capture_end(void *g, char **err);
int memo_graph_replay(void *g, char **err);
void memo_graph_free(void *g);
#ifdef __cplusplus
}
#endif
#endif
