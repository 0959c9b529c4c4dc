'use strict';
// The addon built by `node-gyp rebuild` at install; null where it could not be built (no compiler): callers go on
// without trimming.
let addon = null;
try {
  addon = require('./build/Release/malloc_trim.node');
} catch {
  addon = null;
}
module.exports = addon;
