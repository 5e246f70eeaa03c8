// Swapping a parameter's storage in and out, for ZeRO-3 (train.shard =
// "full"): between uses a parameter holds no memory, and before its layer
// runs it is pointed at the weights just gathered from every rank. set_
// keeps the tensor itself (its autograd identity, requires_grad, the
// VarStore's and the model's references to it) and replaces only what it
// views. gotch does not expose set_.
#include <cstdlib>
#include <cstring>
#include <string>

#include <torch/torch.h>

#include "storage.h"
#include "errmsg.h"

extern "C" {

int memo_set_data(void **dst, void **src, int64_t n, char **err) {
  try {
    // A leaf that requires grad may change its data only with autograd
    // off, as an optimizer's in-place update does.
    torch::NoGradGuard ng;
    for (int64_t i = 0; i < n; i++) {
      at::Tensor &d = *static_cast<at::Tensor *>(dst[i]);
      if (src == nullptr) {
        d.set_();
      } else {
        d.set_(*static_cast<at::Tensor *>(src[i]));
      }
    }
    return 0;
  } catch (const std::exception &e) {
    *err = memo_copy_message(std::string("set a parameter's data: ") + e.what());
    return 1;
  }
}

}  // extern "C"
