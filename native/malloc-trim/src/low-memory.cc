/*
 * V8's "low memory" notification for Node.js: v8::Isolate::LowMemoryNotification(), the embedder's call for a full,
 * memory-reducing collection (the garbage collected as far as it goes, the young generation shrunk, the old
 * generation's fragmented pages compacted and the freed pages given back to the system). Node has no JavaScript call
 * for it. The gateway runs with V8's own memory reducer off (`--no-memory-reducer`: that one starts such collections
 * after 8 s of little allocation, and the optimised code that relied on the objects they free is thrown away with
 * them) and makes this call itself once it has served nothing for longer (src/memory.ts).
 *
 * This uses V8's C++ API, not Node-API: it is built at install for the Node.js it runs on (rebuild after changing
 * Node's major version; where it cannot be loaded the gateway goes on without it).
 */
#include <node.h>
#include <v8.h>

namespace {

void LowMemory(const v8::FunctionCallbackInfo<v8::Value>& info) {
  info.GetIsolate()->LowMemoryNotification();
}

}  // namespace

NODE_MODULE_INIT(/* exports, module, context */) {
  v8::Isolate* isolate = context->GetIsolate();
  v8::Local<v8::Function> fn = v8::FunctionTemplate::New(isolate, LowMemory)->GetFunction(context).ToLocalChecked();
  exports->Set(context, v8::String::NewFromUtf8Literal(isolate, "lowMemory"), fn).Check();
}
