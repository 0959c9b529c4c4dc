'use strict';
// The addons built by `node-gyp rebuild` at install, each loaded on its own: malloc_trim (Node-API, src/trim.c) and
// low_memory (V8's C++ API, src/low-memory.cc, built for the Node.js it runs on). null where neither could be built
// (no compiler): callers go on without them.
let trim = null;
try {
  trim = require('./build/Release/malloc_trim.node');
} catch {
  trim = null;
}
let lowMemory = null;
try {
  lowMemory = require('./build/Release/low_memory.node').lowMemory;
} catch {
  lowMemory = null;
}
module.exports = trim || lowMemory ? { trim: trim ? trim.trim : () => false, supported: !!trim && trim.supported, lowMemory } : null;
