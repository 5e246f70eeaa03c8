// errmsg.h is how memo's C++ hands an error message to Go: C++ only, never
// included from a cgo preamble.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

// memo_copy_message copies msg into a malloc'd C string; the Go side frees it
// once it is wrapped in an error.
inline char *memo_copy_message(const std::string &msg) {
  char *s = static_cast<char *>(std::malloc(msg.size() + 1));
  std::memcpy(s, msg.c_str(), msg.size() + 1);
  return s;
}
