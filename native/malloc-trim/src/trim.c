/*
 * malloc_trim(0) for Node.js (Node-API, no other dependency). glibc keeps the pages of freed chunks inside its heap
 * until the chunks at the heap's top are free too; one long-lived small allocation above them keeps them all
 * resident. malloc_trim(0) hands every free page of every arena back to the kernel (madvise), wherever it lies.
 * Elsewhere (musl, macOS, Windows) there is no such call and trim() answers false.
 */
#include <stdlib.h>
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#if defined(__GLIBC__)
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released != 0, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn, supported;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &fn);
  napi_set_named_property(env, exports, "trim", fn);
#if defined(__GLIBC__)
  napi_get_boolean(env, 1, &supported);
#else
  napi_get_boolean(env, 0, &supported);
#endif
  napi_set_named_property(env, exports, "supported", supported);
  return exports;
}
